#!/usr/bin/env bash
# Builds version N of the upgrade tier (test/upgrade) from one commit of this repository, in
# a git worktree, and prints the directory it is in (cached by commit):
#   image         the image's reference, localhost/nmoverlay:upgrade-from-COMMIT12
#   nmoverlay.tar the image as a docker archive (the local cluster's nodes import it)
#   nmoverlay     that commit's CLI (its MachineConfig is rendered with it)
#   deploy/       that commit's manifests (installed with kubectl apply -k, as N was)
# The image is built by that commit's own hack/image.sh. Needs root (buildah) and the
# commit in this clone's history.
#
#   hack/upgrade-from.sh COMMIT
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: hack/upgrade-from.sh COMMIT" >&2; exit 2; }
cd "$(dirname "$0")/.."
. hack/common.sh
commit=$(git rev-parse --verify "$1^{commit}" 2>/dev/null) ||
  { echo "upgrade-from.sh: $1 is not a commit of this clone (a shallow clone? git fetch --unshallow)" >&2; exit 1; }
DIR="$CACHE/upgrade-from/$commit"
if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
begin_build upgrade-from
mkdir -p "$CACHE/upgrade-from"
tree="$work/tree"
trap 'git worktree remove --force "$tree" >/dev/null 2>&1 || true; rm -rf "$work" "$out" ${policy:+"$policy"}' EXIT
git worktree add --detach --quiet "$tree" "$commit"
ref="localhost/nmoverlay:upgrade-from-${commit:0:12}"
echo "upgrade-from.sh: building $ref from $commit" >&2
IMAGE="$ref" "$tree/hack/image.sh" >/dev/null
. hack/buildah.sh
buildah push "${policy_args[@]}" "$ref" "docker-archive:$out/nmoverlay.tar:$ref" >&2
echo "$ref" > "$out/image"
(cd "$tree" && go build -trimpath -o "$out/nmoverlay" ./cmd/nmoverlay)
cp -r "$tree/deploy" "$out/deploy"
end_build
echo "$DIR"
