# Sourced by the hack/ scripts: one definition of the versions they build, of the cache
# they keep them in, and of how a build lands there.
KUBE_VERSION="${KUBE_VERSION:-1.36.3}" # kube-apiserver and kubectl (k8s.io/kubectl v0.36.3)
ETCD_VERSION="${ETCD_VERSION:-3.6.7}"
CACHE="${NMOVERLAY_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/nmoverlay}"

# begin_build NAME: Go set up for a build from the module proxy, a scratch dir ($work) and
# the output dir ($out), staged inside the cache so that end_build's rename into $DIR is
# atomic (same filesystem). Both go away on exit, whatever happens.
begin_build() {
  export PATH="$PATH:/usr/local/go/bin"
  export GOFLAGS=-mod=mod CGO_ENABLED=0
  mkdir -p "$CACHE"
  work=$(mktemp -d)
  out=$(mktemp -d "$CACHE/.$1-build.XXXXXX")
  trap 'rm -rf "$work" "$out"' EXIT
}

# end_build: marks $out complete and moves it to $DIR, unless a concurrent run finished
# first (then its complete directory is kept).
end_build() {
  touch "$out/.complete"
  chmod 755 "$out"
  if [ ! -f "$DIR/.complete" ]; then
    rm -rf "$DIR"
    mv -T "$out" "$DIR"
  fi
}

# install_vm_payload ROOT: a VM guest's root made to run the VM tier's payload
# (hack/vm-payload.service) at boot, with no login on its console.
install_vm_payload() {
  local r="$1"
  ln -sf /dev/null "$r/etc/systemd/system/serial-getty@ttyS0.service" # read by the host, never logged into
  echo "vm" > "$r/etc/hostname"
  printf '/dev/vda / ext4 rw,errors=remount-ro 0 1\n' > "$r/etc/fstab"
  install -m 0644 hack/vm-payload.service "$r/etc/systemd/system/vm-payload.service"
  mkdir -p "$r/etc/systemd/system/multi-user.target.wants"
  ln -sf /etc/systemd/system/vm-payload.service "$r/etc/systemd/system/multi-user.target.wants/vm-payload.service"
}

# finish_vm_image: a VM image builder's last step: the kernel and initrd taken out of
# $work/root, which is made into $work/root.img, and $work, complete, moved to $DIR, which
# is printed (the only line on stdout).
finish_vm_image() {
  cp "$work"/root/boot/vmlinuz-* "$work/vmlinuz"
  cp "$work"/root/boot/initrd.img-* "$work/initrd.img"
  chmod 0644 "$work/vmlinuz" "$work/initrd.img"
  rm -rf "$work"/root/var/cache/apt/archives/*.deb "$work"/root/var/lib/apt/lists/*
  echo "$(basename "$0"): making root.img" >&2
  mkfs.ext4 -q -F -L root -d "$work/root" "$work/root.img" 3G >&2
  # mkfs -d copies the tree's extended attributes but not those of the tree's own top: the
  # SELinux label of / (ROOT_LABEL, when the image is labelled) goes on its root inode here.
  if [ -n "${ROOT_LABEL:-}" ]; then
    debugfs -w -R "ea_set / security.selinux $ROOT_LABEL" "$work/root.img" >/dev/null 2>&1
  fi
  rm -rf "$work/root"
  touch "$work/.complete"
  trap - EXIT
  rm -rf "$DIR"
  mv "$work" "$DIR"
  echo "$DIR"
}
