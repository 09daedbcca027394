#!/usr/bin/env bash
# Builds nmoverlay's container image from deploy/Containerfile with buildah (no Docker
# engine, no registry: the image is FROM scratch) and prints its reference on stdout.
#
#   hack/image.sh [--oci-archive PATH]
#
# IMAGE names the image (default localhost/nmoverlay:VERSION, hack/version.sh's version,
# which every binary in it reports); --oci-archive also writes it to
# PATH as an OCI archive (podman load, skopeo copy oci-archive:PATH docker://...). Installs
# buildah when it is missing. Needs root.
set -euo pipefail

VERSION=$("$(dirname "$0")/version.sh")
IMAGE="${IMAGE:-localhost/nmoverlay:$VERSION}"
archive=""
while [ $# -gt 0 ]; do
  case "$1" in
    --oci-archive) [ $# -ge 2 ] || { echo "image.sh: --oci-archive needs a PATH" >&2; exit 2; }
      archive="$2"; shift 2 ;;
    --oci-archive=*) archive="${1#*=}"; shift ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -z "$archive" ] || case "$archive" in /*) ;; *) archive="$PWD/$archive" ;; esac

cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"

# buildah, with every other package the project needs, from Debian.
hack/install-deps.sh

. hack/buildah.sh

ctx=$(mktemp -d)
trap 'rm -rf "$ctx" ${policy:+"$policy"}' EXIT

echo "image.sh: building the binaries" >&2
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $(hack/version.sh --ldflags)" -o "$ctx/" ./cmd/...

meta=(--label "org.opencontainers.image.version=$VERSION")
rev=$(hack/version.sh --revision)
[ -z "$rev" ] || meta+=(--label "org.opencontainers.image.revision=$rev")
# Reproducible: the created time (of the image and of every file in it) is the commit's, as
# SOURCE_DATE_EPOCH says, so the same binaries give the same image ID and a rebuild of an
# unchanged tree adds nothing to the storage.
epoch="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || true)}"
[ -z "$epoch" ] || meta+=(--timestamp "$epoch")

previous=$(buildah images -q --no-trunc "$IMAGE" 2>/dev/null || true)
echo "image.sh: building $IMAGE" >&2
# buildah's step log goes to stdout: keep stdout for the image reference alone.
buildah bud "${policy_args[@]}" --isolation "$BUILDAH_ISOLATION" "${meta[@]}" \
  -f deploy/Containerfile -t "$IMAGE" "$ctx" >&2
# The image this tag named before, if nothing else names or uses it now.
if [ -n "$previous" ] && buildah images -q --no-trunc --filter dangling=true | grep -qx "$previous"; then
  buildah rmi "$previous" >/dev/null 2>&1 || true
fi
# The default name's earlier builds of this release (one tag per commit): untagged, and
# removed where nothing else names or uses them.
repo=${IMAGE%:*}
if [ "$IMAGE" = "localhost/nmoverlay:$VERSION" ]; then
  release=${VERSION%%-*}
  for old in $(buildah images --format '{{.Name}}:{{.Tag}}' "$repo" 2>/dev/null | grep "^$repo:$release-" | grep -vx "$IMAGE" || true); do
    buildah rmi "$old" >/dev/null 2>&1 || true
  done
fi

if [ -n "$archive" ]; then
  echo "image.sh: writing $archive" >&2
  rm -f "$archive"
  buildah push "${policy_args[@]}" "$IMAGE" "oci-archive:$archive:$IMAGE" >&2
fi
echo "$IMAGE"
