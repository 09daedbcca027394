#!/usr/bin/env bash
# Builds NetworkManager with its Open vSwitch device plugin from Debian's source of the
# installed network-manager (Debian builds it with --disable-ovs, and a plugin alone does
# not load into Debian's daemon: it needs symbols that build does not export), caches it by
# that version and prints its directory: NetworkManager (the daemon) and plugins/ (the OVS
# plugin only, to bind over the daemon's plugin dir). Also installs Open vSwitch, which the
# node tier runs on its userspace datapath. TEST-RECIPES §10 has the measured recipe.
# Cold: about 4 minutes on 2 cores (the compile), plus the build dependencies.
set -euo pipefail

. "$(dirname "$0")/common.sh"
export DEBIAN_FRONTEND=noninteractive
installed() { dpkg-query -W -f '${Status}\n' "$1" 2>/dev/null | grep -q 'install ok installed'; }
need() {
  local missing=()
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "nm-ovs.sh: installing ${missing[*]}" >&2
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
need openvswitch-switch network-manager

version=$(dpkg-query -W -f '${Version}' network-manager)
DIR="$CACHE/networkmanager-ovs-$version"
if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
need dpkg-dev meson ninja-build pkg-config xsltproc libglib2.0-dev libudev-dev libsystemd-dev libndp-dev \
  libjansson-dev libgnutls28-dev libcurl4-gnutls-dev libpsl-dev libdbus-1-dev libpolkit-gobject-1-dev \
  libreadline-dev gettext

# Debian's source packages, from the hosts and suites apt already uses.
src=/etc/apt/sources.list.d/nmoverlay-deb-src.sources
if [ ! -f "$src" ]; then
  sed -n 's/^Types: deb$/Types: deb-src/p; /^URIs:/p; /^Suites:/p; /^Components:/p; /^Signed-By:/p; /^$/p' \
    /etc/apt/sources.list.d/debian.sources > "$src.tmp"
  mv "$src.tmp" "$src"
  apt-get update -qq
fi

begin_build networkmanager-ovs
cd "$work"
apt-get source -qq "network-manager=$version" >"$work/source.log" 2>&1 || { tail -20 "$work/source.log" >&2; exit 1; }
cd network-manager-*/
echo "nm-ovs.sh: building NetworkManager $version with Open vSwitch (about 4 minutes)" >&2
meson setup build --prefix=/usr --libdir=lib/x86_64-linux-gnu --libexecdir=lib/NetworkManager \
  --sysconfdir=/etc --localstatedir=/var -Dovs=true -Dppp=false -Dmodem_manager=false -Dintrospection=false \
  -Dvapi=false -Ddocs=false -Dtests=no -Dnmcli=false -Dnmtui=false -Dselinux=false -Dlibaudit=no \
  -Dqt=false -Debpf=false -Dcrypto=gnutls -Dsession_tracking=systemd -Dsuspend_resume=systemd \
  -Dconfig_plugins_default=ifupdown,keyfile >"$work/build.log" 2>&1 || { tail -30 "$work/build.log" >&2; exit 1; }
ninja -C build src/core/NetworkManager src/core/devices/ovs/libnm-device-plugin-ovs.so >>"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log" >&2; exit 1; }
mkdir -p "$out/plugins"
cp build/src/core/NetworkManager "$out/"
cp build/src/core/devices/ovs/libnm-device-plugin-ovs.so "$out/plugins/"
"$out/NetworkManager" --version >&2
end_build
echo "$DIR"
