#!/usr/bin/env bash
# Builds (once) what the VM tier boots under qemu: a Debian kernel and initrd, and a root
# disk image made from hack/rootfs.sh's root filesystem plus the kernel's modules, netdevsim
# (built here: SR-IOV VFs), dnsmasq (the DHCP server of the published DHCP examples) and a
# unit that runs the test payload
# from a 9p share. Prints the directory holding vmlinuz, initrd.img and root.img. Needs
# root, qemu-utils and e2fsprogs.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOTFS=$(hack/rootfs.sh)
. hack/common.sh # after the cd above: the repository root
key=$( (basename "$ROOTFS"; cat "$0" hack/vm-payload.service) | sha256sum | cut -c1-12)
DIR="$CACHE/vm-$key"
if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
work="$DIR.tmp.$$"
rm -rf "$work"
mkdir -p "$work"
trap 'umount -R "$work/root/proc" "$work/root/sys" "$work/root/dev" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "vm-image.sh: copying the root filesystem" >&2
cp -a "$ROOTFS" "$work/root"
rm -f "$work/root/.complete"
echo "deb $MIRROR bookworm main" > "$work/root/etc/apt/sources.list"
echo "vm-image.sh: installing the kernel into the image (about 2 minutes)" >&2
unshare -m --propagation private sh -c "
  mount -t proc proc '$work/root/proc' && mount --rbind /sys '$work/root/sys' && mount --rbind /dev '$work/root/dev' &&
  cp /etc/resolv.conf '$work/root/etc/resolv.conf' 2>/dev/null;
  chroot '$work/root' apt-get update -qq &&
  chroot '$work/root' apt-get install -y -qq --no-install-recommends linux-image-amd64 dnsmasq-base ethtool >/dev/null" >&2
# netdevsim, for the SR-IOV scenario: Debian's config lacks it, but its source is
# self-contained, so it is built out of tree for the image's kernel from that kernel's
# own source package (TEST-RECIPES §11), and loaded with modprobe (it needs psample).
kver=$(ls "$work/root/lib/modules")
kpkg=$(chroot "$work/root" dpkg-query -W -f '${Version}' "linux-image-$kver")
series=$(echo "$kver" | cut -d. -f1-2) # 6.1
echo "vm-image.sh: building netdevsim for $kver ($kpkg)" >&2
apt-get install -y -qq --no-install-recommends "linux-headers-$kver" "linux-source-$series=$kpkg" xz-utils make gcc >/dev/null ||
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends "linux-headers-$kver" "linux-source-$series=$kpkg" xz-utils make gcc >/dev/null; }
mkdir -p "$work/netdevsim"
tar -xJf "/usr/src/linux-source-$series.tar.xz" -C "$work/netdevsim" --strip-components=4 "linux-source-$series/drivers/net/netdevsim"
make -s -C "/usr/src/linux-headers-$kver" M="$work/netdevsim" CONFIG_NETDEVSIM=m modules >&2
strip --strip-debug "$work/netdevsim/netdevsim.ko"
install -D -m 0644 "$work/netdevsim/netdevsim.ko" "$work/root/lib/modules/$kver/extra/netdevsim.ko"
depmod -b "$work/root" "$kver"
install_vm_payload "$work/root"
finish_vm_image
