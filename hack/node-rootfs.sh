#!/usr/bin/env bash
# Builds (once) the root filesystem of the local cluster's nodes (make demo, the boot tier's
# demo): hack/rootfs.sh's Debian root plus Debian's container runtime (containerd, runc,
# the CNI plugins, and iptables and conntrack for kube-proxy). The kubelet and kube-proxy
# are not in it: the local cluster binds them in from hack/kube-assets.sh. Prints its path;
# cached by the base root and this script, so a second call costs nothing. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES="containerd runc containernetworking-plugins iptables conntrack"
BASE=$(hack/rootfs.sh)
. hack/common.sh
key=$( (basename "$BASE"; cat "$0") | sha256sum | cut -c1-12)
ROOTFS="$CACHE/node-rootfs-$key"
if [ -f "$ROOTFS/.complete" ]; then
  echo "$ROOTFS"
  exit 0
fi
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
tmp="$ROOTFS.tmp.$$"
rm -rf "$tmp"
trap 'umount -R "$tmp/proc" "$tmp/sys" "$tmp/dev" 2>/dev/null || true; rm -rf "$tmp"' EXIT
echo "node-rootfs.sh: $PACKAGES into a copy of $BASE (about 30 s)" >&2
cp -a "$BASE" "$tmp"
rm -f "$tmp/.complete"
echo "deb $MIRROR bookworm main" > "$tmp/etc/apt/sources.list"
# Nothing starts in the chroot: the packages' services start when a node boots.
printf '#!/bin/sh\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d"
chmod 755 "$tmp/usr/sbin/policy-rc.d"
unshare -m --propagation private sh -c "
  mount -t proc proc '$tmp/proc' && mount --rbind /sys '$tmp/sys' && mount --rbind /dev '$tmp/dev' &&
  cp /etc/resolv.conf '$tmp/etc/resolv.conf' 2>/dev/null;
  chroot '$tmp' apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive chroot '$tmp' apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null" >&2
rm -f "$tmp/usr/sbin/policy-rc.d"
rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/*
touch "$tmp/.complete"
trap - EXIT
rm -rf "$ROOTFS"
mv "$tmp" "$ROOTFS"
echo "$ROOTFS"
