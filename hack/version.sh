#!/usr/bin/env bash
# Prints the version a build of this tree is, as internal/version.Derive says: the release
# (internal/version/RELEASE) alone when it is one (no "-" suffix), otherwise the release,
# the commit's first 12 digits and "-dirty" for a modified tree (0.4.0-dev-0123456789ab).
# With --ldflags it prints the linker flags that stamp it, and the commit, into a binary:
# make build and hack/image.sh build with them; hack/image.sh tags the image with it. With
# --revision it prints the commit alone, "-dirty" appended as to the version ("": no git).
set -euo pipefail
cd "$(dirname "$0")/.."
release=$(tr -d '[:space:]' < internal/version/RELEASE)
rev=$(git rev-parse HEAD 2>/dev/null || true)
# Go's vcs.modified: anything git status lists, untracked files included.
dirty=""
[ -z "$rev" ] || [ -z "$(git status --porcelain 2>/dev/null)" ] || dirty="-dirty"
case "$release" in
  *-*) v="$release${rev:+-${rev:0:12}}${rev:+$dirty}" ;;
  *) v="$release" ;;
esac
case "${1:-}" in
  --ldflags)
    pkg=github.com/nmoverlay/nmoverlay/internal/version
    echo "-X $pkg.Version=$v${rev:+ -X $pkg.Revision=$rev$dirty}" ;;
  --revision) echo "${rev:+$rev$dirty}" ;;
  *) echo "$v" ;;
esac
