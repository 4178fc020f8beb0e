#!/usr/bin/env bash
# Installs the benchmark's TypeScript peer, Temporal's AI SDK plugin (`@temporalio/ai-sdk` with the AI SDK it names),
# into bench/ts-peer/node_modules from its own lockfile, apart from Deputy's dependencies (it brings its own Temporal
# SDK), unless it is there. `npm run bench` runs it first. Nothing is downloaded at run time after this.
#
#   bash scripts/install-ts-peer.sh [--quiet]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
peer="$root/bench/ts-peer"
quiet=${1:-}
say() { [ "$quiet" = "--quiet" ] || echo "install-ts-peer: $*"; }
works() { [ -f "$peer/node_modules/@temporalio/ai-sdk/package.json" ] && [ -f "$peer/node_modules/ai/package.json" ]; }

if works; then say "already installed"; exit 0; fi
echo "install-ts-peer: installing @temporalio/ai-sdk and the AI SDK from npm (bench/ts-peer/package-lock.json) …"
# The packages declare Node >= 22; the bench runs them on this machine's Node and says which in its rows.
npm ci --prefix "$peer" --no-audit --no-fund --loglevel=error --engine-strict=false
works
say "installed @temporalio/ai-sdk $(node -p "require('$peer/node_modules/@temporalio/ai-sdk/package.json').version"), ai $(node -p "require('$peer/node_modules/ai/package.json').version")"
