#!/usr/bin/env bash
# Builds (once) a Debian bookworm root filesystem for the boot tier and prints its path.
# Cached by the package list, so a second call costs nothing. Needs root and debootstrap.
set -euo pipefail

PACKAGES="systemd-sysv,libpam-systemd,dbus,iproute2,network-manager,procps,kmod,udev,netplan.io"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
. "$(dirname "$0")/common.sh"
key=$(printf '%s %s' "bookworm" "$PACKAGES" | sha256sum | cut -c1-12)
ROOTFS="$CACHE/rootfs-bookworm-$key"

if [ -f "$ROOTFS/.complete" ]; then
  echo "$ROOTFS"
  exit 0
fi

command -v debootstrap >/dev/null || { echo "rootfs.sh: debootstrap is missing (hack/install-deps.sh)" >&2; exit 1; }
mkdir -p "$CACHE"
tmp="$ROOTFS.tmp.$$"
rm -rf "$tmp"
echo "rootfs.sh: debootstrap into $tmp (about 75 s)" >&2
debootstrap --variant=minbase --include="$PACKAGES" bookworm "$tmp" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
  tail -20 "$CACHE/debootstrap.log" >&2; rm -rf "$tmp"; exit 1; }
# The boot tier logs in with nsenter, never a console: keep getty off the read-only console.
ln -sf /dev/null "$tmp/etc/systemd/system/console-getty.service"
ln -sf /dev/null "$tmp/etc/systemd/system/getty@tty1.service"
# Deterministic machine-id so journald and NM agree across boots.
echo "0123456789abcdef0123456789abcdef" > "$tmp/etc/machine-id"
touch "$tmp/.complete"
rm -rf "$ROOTFS"
mv "$tmp" "$ROOTFS"
echo "$ROOTFS"
