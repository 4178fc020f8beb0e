#!/usr/bin/env bash
# Installs the benchmark's peer, the OpenAI Agents SDK on Temporal (PyPI `temporalio[openai-agents]`, which brings
# `temporalio-openai-agents` and `openai-agents`), into a virtualenv under .deputy/, unless it is there. `npm run
# bench` runs it first; without Python the peer rows are left out. Nothing is downloaded at run time after this.
#
#   bash scripts/install-peer.sh [--quiet]
set -euo pipefail

TEMPORALIO_VERSION=1.35.0
TEMPORALIO_OPENAI_AGENTS_VERSION=1.1.0
OPENAI_AGENTS_VERSION=0.22.3
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.deputy/peer-venv"
quiet=${1:-}
say() { [ "$quiet" = "--quiet" ] || echo "install-peer: $*"; }
works() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import temporalio.openai_agents, agents' >/dev/null 2>&1; }

if works; then say "already installed"; exit 0; fi
if ! command -v python3 >/dev/null; then echo "install-peer: no python3: the bench leaves the peer rows out"; exit 0; fi
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
echo "install-peer: installing temporalio[openai-agents]==$TEMPORALIO_VERSION from PyPI …"
"$venv/bin/pip" install --quiet --disable-pip-version-check "temporalio[openai-agents]==$TEMPORALIO_VERSION" \
  "temporalio-openai-agents==$TEMPORALIO_OPENAI_AGENTS_VERSION" "openai-agents==$OPENAI_AGENTS_VERSION"
works
say "installed temporalio $TEMPORALIO_VERSION, temporalio-openai-agents $TEMPORALIO_OPENAI_AGENTS_VERSION, openai-agents $OPENAI_AGENTS_VERSION"
