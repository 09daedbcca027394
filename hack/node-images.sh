#!/usr/bin/env bash
# Writes the images the local cluster's nodes import into their containerd (no registry
# here) as docker archives into a directory and prints it: nmoverlay's image (hack/image.sh,
# from this tree) and the pods' sandbox image (hack/pause). Needs root (buildah).
#
#   hack/node-images.sh DIR
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: hack/node-images.sh DIR" >&2; exit 2; }
dir="$1"
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin:/usr/sbin:/sbin"
PAUSE="${PAUSE_IMAGE:-localhost/pause:nmoverlay}"

image=$(hack/image.sh)
. hack/buildah.sh
ctx=$(mktemp -d)
trap 'rm -rf "$ctx" ${policy:+"$policy"}' EXIT
CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$ctx/pause" ./hack/pause
printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' > "$ctx/Containerfile"
buildah bud "${policy_args[@]}" --isolation "$BUILDAH_ISOLATION" --timestamp 0 -f "$ctx/Containerfile" -t "$PAUSE" "$ctx" >&2
# docker archives: containerd's import names the image by the archive's RepoTags.
for ref in "$image" "$PAUSE"; do
  name=${ref##*/}; name=${name%%:*}
  rm -f "$dir/$name.tar"
  buildah push "${policy_args[@]}" "$ref" "docker-archive:$dir/$name.tar:$ref" >&2
done
printf '%s\n%s\n' "$image" "$PAUSE" > "$dir/images"
echo "$dir"
