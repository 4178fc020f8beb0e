#!/usr/bin/env bash
# The package as another service installs it. Builds and packs Deputy, installs the tarball into a scratch project
# outside the repository, and there: (1) runs a plain .mjs that starts a run with DeputyClient against a dev server and
# a worker; (2) type-checks a .ts file against the shipped declarations; (3) proves that importing `deputy` loads
# neither @temporalio/worker nor openai, by importing it with both removed; (4) runs `npx deputy tree` from the
# installed bin (inside (1), while the worker runs). Needs the Temporal CLI (TEMPORAL_CLI_PATH or PATH).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export TEMPORAL_CLI_PATH="${TEMPORAL_CLI_PATH:-$root/.deputy/bin/temporal}"

cd "$root"
tarball="$(npm pack --silent --pack-destination "$scratch" | tail -1)"
echo "check-package: packed $tarball ($(du -h "$scratch/$tarball" | cut -f1))"
cp scripts/package-check/consumer.mjs scripts/package-check/consumer.ts scripts/package-check/tsconfig.json "$scratch/"
testing_version="$(node -p "require('./package.json').devDependencies['@temporalio/testing']")"
types_version="$(node -p "require('./package.json').devDependencies['@types/node']")"

cd "$scratch"
echo '{ "name": "a-service", "private": true, "type": "module" }' > package.json
npm install --no-audit --no-fund --loglevel=error "./$tarball" "@temporalio/testing@$testing_version" \
  "@types/node@$types_version"

echo "check-package: (1) + (4) a plain .mjs starts a run; npx deputy tree reads it"
node consumer.mjs

echo "check-package: (2) consumer.ts type-checks against the shipped declarations"
"$root/node_modules/.bin/tsc" -p tsconfig.json

echo "check-package: (3) importing deputy loads neither @temporalio/worker, openai, the OpenTelemetry SDK nor the AWS SDK"
mkdir -p hidden/otel
mv node_modules/@temporalio/worker node_modules/openai node_modules/@aws-sdk hidden/
mv node_modules/@opentelemetry/sdk-trace-base node_modules/@temporalio/interceptors-opentelemetry hidden/otel/
node -e "import('deputy').then((m) => console.log('deputy loaded without them: ' + Object.keys(m).length + ' exports'))"
mv hidden/worker node_modules/@temporalio/worker
mv hidden/openai node_modules/openai
mv hidden/@aws-sdk node_modules/@aws-sdk
mv hidden/otel/sdk-trace-base node_modules/@opentelemetry/sdk-trace-base
mv hidden/otel/interceptors-opentelemetry node_modules/@temporalio/interceptors-opentelemetry
echo "check-package: ok"
