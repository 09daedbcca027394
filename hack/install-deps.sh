#!/usr/bin/env bash
# Installs the Debian packages the test tiers and the demo need. Idempotent: when every
# tool is present it does nothing. Needs root.
set -euo pipefail

# tool -> package
declare -A need=(
  [NetworkManager]=network-manager
  [nmcli]=network-manager
  [dbus-daemon]=dbus
  [systemd-nspawn]=systemd-container
  [debootstrap]=debootstrap
  [ip]=iproute2
  [nsenter]=util-linux
  [systemd-tmpfiles]=systemd
  [systemd-analyze]=systemd
  [qemu-system-x86_64]=qemu-system-x86
  [qemu-img]=qemu-utils
  [mkfs.ext4]=e2fsprogs
  [bridge]=iproute2
  [netplan]=netplan.io
  [buildah]=buildah # the image (hack/image.sh)
  [iptables]=iptables # the fault tier drops API traffic in the fabric
  [dnsmasq]=dnsmasq-base # a DHCP server on the node tier's fabric
  [ovsdb-server]=openvswitch-switch # Open vSwitch on the node tier (userspace datapath)
  [lldpd]=lldpd # an LLDP neighbour (a switch port) on the node tier's fabric
  [chromium]=chromium # nmoverlay topology's page, opened in a real browser (integration tier)
)
# file -> package, for what has no command: the monospace font the topology's boxes are
# measured for (chromium only recommends a font).
declare -A files=(
  [/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf]=fonts-dejavu-core
)
missing=()
for tool in "${!need[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$tool" >/dev/null 2>&1 || missing+=("${need[$tool]}")
done
for file in "${!files[@]}"; do
  [ -e "$file" ] || missing+=("${files[$file]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: need root to install: ${missing[*]}" >&2
  exit 1
fi
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends keeps NetworkManager from pulling in wpasupplicant, ModemManager...,
# and buildah crun/runc and fuse-overlayfs: hack/image.sh's chroot isolation needs none.
apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
