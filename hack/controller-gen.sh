#!/usr/bin/env bash
# Builds controller-gen (pinned) from the Go module proxy once and prints its path.
set -euo pipefail
VERSION="${CONTROLLER_GEN_VERSION:-v0.23.0}"
. "$(dirname "$0")/common.sh"
BIN="$CACHE/controller-gen-$VERSION/controller-gen"
if [ ! -x "$BIN" ]; then
  echo "controller-gen.sh: building controller-gen $VERSION" >&2
  GOBIN="$(dirname "$BIN")" GOFLAGS=-mod=mod go install "sigs.k8s.io/controller-tools/cmd/controller-gen@$VERSION" >&2
fi
echo "$BIN"
