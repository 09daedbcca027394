#!/usr/bin/env bash
# Builds (once) what the VM tier boots under qemu: a Debian kernel and initrd, and a root
# disk image made from hack/rootfs.sh's root filesystem plus the kernel's modules, dnsmasq
# (the DHCP server of the published DHCP examples) and a unit that runs the test payload
# from a 9p share. Prints the directory holding vmlinuz, initrd.img and root.img. Needs
# root, qemu-utils and e2fsprogs.
set -euo pipefail
cd "$(dirname "$0")/.."

ROOTFS=$(hack/rootfs.sh)
. hack/common.sh # after the cd above: the repository root
key=$( (basename "$ROOTFS"; cat "$0") | sha256sum | cut -c1-12)
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
  chroot '$work/root' apt-get install -y -qq --no-install-recommends linux-image-amd64 dnsmasq-base >/dev/null" >&2
cp "$work"/root/boot/vmlinuz-* "$work/vmlinuz"
cp "$work"/root/boot/initrd.img-* "$work/initrd.img"
chmod 0644 "$work/vmlinuz" "$work/initrd.img"
rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/*

r="$work/root"
# The console is read by the host, never logged into.
ln -sf /dev/null "$r/etc/systemd/system/serial-getty@ttyS0.service"
echo "vm" > "$r/etc/hostname"
printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' > "$r/etc/fstab"
# The payload: /mnt/share/run (put there by the test), run once NetworkManager is up; its
# exit status goes to /mnt/share/exit, then the VM powers off.
cat > "$r/etc/systemd/system/vm-payload.service" <<'UNIT'
[Unit]
Description=nmoverlay VM test payload
Wants=NetworkManager.service
After=NetworkManager.service network.target

[Service]
Type=oneshot
StandardOutput=journal+console
ExecStartPre=/bin/mkdir -p /mnt/share
ExecStartPre=/bin/mount -t 9p -o trans=virtio,version=9p2000.L share /mnt/share
ExecStart=/bin/sh -c '/mnt/share/run > /mnt/share/output 2>&1; echo $? > /mnt/share/exit; sync'
ExecStopPost=/bin/systemctl --no-block poweroff
UNIT
mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
ln -sf /etc/systemd/system/vm-payload.service "$r/etc/systemd/system/multi-user.target.wants/vm-payload.service"
echo "vm-image.sh: making root.img" >&2
mkfs.ext4 -q -F -L root -d "$r" "$work/root.img" 3G
rm -rf "$r"
touch "$work/.complete"
trap - EXIT
rm -rf "$DIR"
mv "$work" "$DIR"
echo "$DIR"
