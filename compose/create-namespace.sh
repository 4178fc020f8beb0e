#!/bin/sh
# Creates the namespace Deputy runs in, once the server answers.
set -eu
namespace=${DEFAULT_NAMESPACE:-default}
until temporal operator cluster health --address "$TEMPORAL_ADDRESS"; do sleep 2; done
temporal operator namespace describe -n "$namespace" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1 ||
  temporal operator namespace create -n "$namespace" --retention 7d --address "$TEMPORAL_ADDRESS"
echo "namespace $namespace ready"
