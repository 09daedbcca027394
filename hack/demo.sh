#!/usr/bin/env bash
# make demo: the boot-time half of nmoverlay on a real systemd node (systemd-nspawn).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make demo needs root (systemd-nspawn, overlayfs)" >&2; exit 1; }
: "${NMOVERLAY_ROOTFS:=$(hack/rootfs.sh)}"
export NMOVERLAY_ROOTFS
exec go run ./hack/demo -helper bin/nm-overlay
