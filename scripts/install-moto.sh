#!/usr/bin/env bash
# Installs moto's S3-compatible server (PyPI `moto[server]`) as .deputy/bin/moto_server, unless it is there: the tests
# of the S3 payload store (issue 15) run against it, a real S3 HTTP API on loopback. Nothing is downloaded at run time
# after this.
#
#   bash scripts/install-moto.sh [--quiet]
set -euo pipefail

MOTO_VERSION=5.2.5
root=$(cd "$(dirname "$0")/.." && pwd)
target="$root/.deputy/bin/moto_server"
venv="$root/.deputy/moto"
quiet=${1:-}
say() { [ "$quiet" = "--quiet" ] || echo "install-moto: $*"; }
works() { [ -x "$1" ] && "$1" --help >/dev/null 2>&1; }

mkdir -p "$root/.deputy/bin"
if works "$target"; then say "already installed"; exit 0; fi
if [ ! -x "$venv/bin/pip" ]; then python3 -m venv "$venv"; fi
echo "install-moto: installing moto[server]==$MOTO_VERSION from PyPI …"
"$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==$MOTO_VERSION"
ln -sf "$venv/bin/moto_server" "$target"
works "$target"
say "installed moto $MOTO_VERSION"
