#!/usr/bin/env bash
# Builds (once) the VM tier's second guest, a RHEL CoreOS-like NetworkManager on Debian 13
# (trixie): its kernel (6.12, with the openvswitch module), Open vSwitch on the kernel
# datapath, and NetworkManager 1.52 built from Debian's trixie source with its Open vSwitch
# device plugin (Debian builds it without; hack/nm-ovs.sh does the same for bookworm). The
# payload unit is the first guest's (hack/vm-payload.service); netdevsim is built for its
# kernel. The root carries Debian's SELinux reference policy and auditd, and is labelled
# here, last, so that a boot with "security=selinux enforcing=1" runs enforcing (the SELinux
# scenarios); other boots leave SELinux off. Prints the directory holding vmlinuz,
# initrd.img and root.img. TEST-RECIPES §12.
# Cold: about 9 minutes (debootstrap, the build dependencies, and the compiles on 2
# cores). Needs root, debootstrap and e2fsprogs.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/common.sh

SUITE=trixie
PACKAGES="systemd-sysv,libpam-systemd,dbus,iproute2,network-manager,procps,kmod,udev,linux-image-amd64,initramfs-tools,openvswitch-switch,ethtool,wpasupplicant,selinux-policy-default,selinux-utils,policycoreutils,auditd"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
key=$( (echo "$SUITE $PACKAGES"; cat "$0" hack/vm-payload.service) | sha256sum | cut -c1-12)
DIR="$CACHE/vm-$SUITE-$key"
if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
command -v debootstrap >/dev/null || { echo "vm-image-trixie.sh: debootstrap is missing (hack/install-deps.sh)" >&2; exit 1; }
mkdir -p "$CACHE"
work="$DIR.tmp.$$"
rm -rf "$work"
mkdir -p "$work"
trap 'for d in root build; do umount -R "$work/$d/proc" "$work/$d/sys" "$work/$d/dev" 2>/dev/null || true; done; rm -rf "$work"' EXIT
log="$CACHE/vm-$SUITE.log"
echo "vm-image-trixie.sh: debootstrap $SUITE (about 90 s)" >&2
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$work/root" "$MIRROR" >"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }

# NetworkManager with Open vSwitch, built in a copy of the root so that the image gets
# none of the build dependencies.
echo "vm-image-trixie.sh: building NetworkManager with Open vSwitch from Debian's $SUITE source, and netdevsim (about 6 minutes)" >&2
cp -a "$work/root" "$work/build"
echo "deb-src $MIRROR $SUITE main" > "$work/build/etc/apt/sources.list.d/src.list"
cat > "$work/build/build-nm.sh" <<'BUILD'
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get build-dep -y -qq network-manager >/dev/null
apt-get install -y -qq --no-install-recommends dpkg-dev >/dev/null
cd /usr/src
apt-get source -qq network-manager >/dev/null 2>&1
cd network-manager-*/
meson setup build --prefix=/usr --libdir=lib/x86_64-linux-gnu --libexecdir=lib/NetworkManager \
  --sysconfdir=/etc --localstatedir=/var -Dovs=true -Dppp=false -Dmodem_manager=false -Dintrospection=false \
  -Dvapi=false -Ddocs=false -Dtests=no -Dnmcli=false -Dnmtui=false -Dselinux=true -Dlibaudit=yes \
  -Dqt=false -Debpf=false -Dcrypto=gnutls -Dsession_tracking=systemd -Dsuspend_resume=systemd \
  -Dconfig_plugins_default=keyfile >/dev/null
ninja -C build src/core/NetworkManager src/core/devices/ovs/libnm-device-plugin-ovs.so >/dev/null
# netdevsim, for the ethtool FEC scenario: Debian's config lacks it; it is built out of
# tree from the image kernel's own source package, as hack/vm-image.sh does for bookworm.
kver=$(ls /lib/modules)
kpkg=$(dpkg-query -W -f '${Version}' "linux-image-$kver")
series=$(echo "$kver" | cut -d. -f1-2)
apt-get install -y -qq --no-install-recommends "linux-headers-$kver" "linux-source-$series=$kpkg" xz-utils make gcc >/dev/null
mkdir -p /netdevsim
tar -xJf "/usr/src/linux-source-$series.tar.xz" -C /netdevsim --strip-components=4 "linux-source-$series/drivers/net/netdevsim"
make -s -C "/usr/src/linux-headers-$kver" M=/netdevsim CONFIG_NETDEVSIM=m modules
strip --strip-debug /netdevsim/netdevsim.ko
BUILD
unshare -m --propagation private sh -c "
  mount -t proc proc '$work/build/proc' && mount --rbind /sys '$work/build/sys' && mount --rbind /dev '$work/build/dev' &&
  cp /etc/resolv.conf '$work/build/etc/resolv.conf' && chroot '$work/build' sh /build-nm.sh" >>"$log" 2>&1 ||
  { tail -30 "$log" >&2; exit 1; }
src=$(echo "$work"/build/usr/src/network-manager-*/build)
version=$(chroot "$work/root" dpkg-query -W -f '${Version}' network-manager | cut -d- -f1)
plugins="$work/root/usr/lib/x86_64-linux-gnu/NetworkManager/$version"
# Debian's device plugins need symbols its own daemon exports and this one does not: only
# the OVS plugin, built with the daemon, is loaded; the profiles are keyfiles alone.
install -m 0755 "$src/src/core/NetworkManager" "$work/root/usr/sbin/NetworkManager"
rm -f "$plugins"/libnm-device-plugin-*.so "$plugins"/libnm-settings-plugin-*.so
install -m 0644 "$src/src/core/devices/ovs/libnm-device-plugin-ovs.so" "$plugins/"
printf '[main]\nplugins=keyfile\n' > "$work/root/etc/NetworkManager/NetworkManager.conf"
kver=$(ls "$work/root/lib/modules")
install -D -m 0644 "$work/build/netdevsim/netdevsim.ko" "$work/root/lib/modules/$kver/extra/netdevsim.ko"
chroot "$work/root" depmod "$kver"
rm -rf "$work/build"

echo "0123456789abcdef0123456789abcdef" > "$work/root/etc/machine-id"
install_vm_payload "$work/root"
# SELinux: Debian's reference policy ("default"), loaded only when the kernel is booted with
# security=selinux. The test harness's own module: the reference policy does not label the
# host's 9p share (unlabeled_t), which the payload unit mounts as mount_t; nothing of it is
# nmoverlay's. Labelled last: a file added after setfiles would be unlabeled_t.
printf 'SELINUX=permissive\nSELINUXTYPE=default\n' > "$work/root/etc/selinux/config"
cat > "$work/root/root/vmharness.cil" <<'CIL'
; The VM tier's harness: mount the host's 9p share, unlabeled under the reference policy.
(allow mount_t unlabeled_t (filesystem (mount)))
(allow unlabeled_t unlabeled_t (filesystem (associate)))
CIL
chroot "$work/root" semodule -i /root/vmharness.cil >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
chroot "$work/root" setfiles -F /etc/selinux/default/contexts/files/file_contexts / >>"$log" 2>&1 ||
  { tail -20 "$log" >&2; exit 1; }
ROOT_LABEL=$(chroot "$work/root" matchpathcon -n /)
finish_vm_image
