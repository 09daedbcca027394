#!/usr/bin/env bash
# make demo: nmoverlay's main job on this machine (hack/demo, test/demo): a control plane,
# two systemd-nspawn nodes with containerd, a kubelet and kube-proxy; nmoverlay installed
# with kubectl apply -k, the MachineConfig rolled out; a policy per node, a reboot, the
# metrics, a rolled-back policy, a delete. Leaves nothing running; keeps the picture of the
# first node's network ($CACHE/demo-node.svg, or DEMO_TOPOLOGY).
#
# What it needs is built once and cached; on a fresh machine the three builds run at once
# (the nodes' root is mostly downloads, the Kubernetes binaries and the images compiles).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make demo needs root (systemd-nspawn, overlayfs, network namespaces)" >&2; exit 1; }
. hack/common.sh
mkdir -p "$CACHE"
start=$(date +%s)
pids=()
build() { # build VAR NAME CMD...: VAR=CMD's output unless VAR is set; log in $CACHE/NAME.log
  local var=$1 name=$2; shift 2
  [ -z "${!var:-}" ] || return 0
  ( "$@" > "$CACHE/$name.out" 2> "$CACHE/$name.log" || { echo "demo.sh: $name failed:" >&2; tail -20 "$CACHE/$name.log" >&2; exit 1; } ) &
  pids+=($!)
}
build NMOVERLAY_NODE_ROOTFS node-rootfs hack/node-rootfs.sh
build KUBEBUILDER_ASSETS kube-assets hack/kube-assets.sh
build NMOVERLAY_NODE_IMAGES node-images hack/node-images.sh "$CACHE/node-images"
if [ ${#pids[@]} -gt 0 ]; then
  echo "demo.sh: building what the demo needs (logs in $CACHE/*.log)" >&2
  for p in "${pids[@]}"; do wait "$p"; done
fi
: "${NMOVERLAY_NODE_ROOTFS:=$(cat "$CACHE/node-rootfs.out")}"
: "${KUBEBUILDER_ASSETS:=$(cat "$CACHE/kube-assets.out")}"
: "${NMOVERLAY_NODE_IMAGES:=$(cat "$CACHE/node-images.out")}"
: "${KUBECTL:=$KUBEBUILDER_ASSETS/kubectl}"
export NMOVERLAY_NODE_ROOTFS KUBEBUILDER_ASSETS KUBECTL NMOVERLAY_NODE_IMAGES
# Built with image.sh's flags (static, -trimpath), so the packages it shares with the
# binaries in the image come from Go's build cache.
CGO_ENABLED=0 go build -trimpath -o "$CACHE/demo" ./hack/demo
echo "demo.sh: ready after $(( $(date +%s) - start )) s" >&2
exec "$CACHE/demo" -control-plane-log "${DEMO_CONTROL_PLANE_LOG:-/dev/null}" -topology "${DEMO_TOPOLOGY:-$CACHE/demo-node.svg}"
