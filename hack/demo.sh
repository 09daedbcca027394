#!/usr/bin/env bash
# make demo: nmoverlay's main job on this machine (hack/demo, test/demo): a control plane,
# two systemd-nspawn nodes with the MachineConfig, nm-overlay and the handler, the
# controller; a policy, a reboot, a rolled-back policy, a delete. Leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "make demo needs root (systemd-nspawn, overlayfs, network namespaces)" >&2; exit 1; }
: "${NMOVERLAY_ROOTFS:=$(hack/rootfs.sh)}"
: "${KUBEBUILDER_ASSETS:=$(hack/envtest-assets.sh)}"
: "${KUBECTL:=$(hack/kubectl.sh)}"
export NMOVERLAY_ROOTFS KUBEBUILDER_ASSETS KUBECTL
exec go run ./hack/demo -controller-log "${DEMO_CONTROLLER_LOG:-/dev/null}"
