#!/usr/bin/env bash
# Builds etcdutl, etcd's offline tool (`etcdutl snapshot restore`), of the etcd release
# hack/kube-assets.sh builds, from the Go module proxy; caches it by version and prints its
# directory. The boot tier restores a snapshot of the local cluster's etcd with it, as an
# administrator restores a cluster. Cold: about a minute with etcd's modules downloaded.
set -euo pipefail

. "$(dirname "$0")/common.sh"
DIR="$CACHE/etcdutl-v$ETCD_VERSION"

if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
begin_build etcdutl
(
  cd "$work"
  printf 'module kubeassets/etcdutl\n\ngo 1.25\n' > go.mod
  go get "go.etcd.io/etcd/etcdutl/v3@v$ETCD_VERSION" >"$work/etcdutl.log" 2>&1
  go build -trimpath -ldflags "-s -w" -o "$out/etcdutl" go.etcd.io/etcd/etcdutl/v3 >>"$work/etcdutl.log" 2>&1
) || { echo "etcdutl.sh: building etcdutl failed:" >&2; tail -20 "$work/etcdutl.log" >&2; exit 1; }
"$out/etcdutl" version >&2
end_build
echo "$DIR"
