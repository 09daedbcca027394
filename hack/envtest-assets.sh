#!/usr/bin/env bash
# Builds a real kube-apiserver and etcd from the Go module proxy (no prebuilt binaries can
# be downloaded here), caches them by version, and prints the directory for
# KUBEBUILDER_ASSETS. A second call costs nothing. Cold: about 6 minutes on 2 cores.
set -euo pipefail

. "$(dirname "$0")/common.sh"
DIR="$CACHE/envtest-k8s$KUBE_VERSION-etcd$ETCD_VERSION"

if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
begin_build envtest
mkdir -p "$work/apiserver" "$work/etcd"

staging="api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api cri-client
csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator
kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics mount-utils
pod-security-admission sample-apiserver sample-cli-plugin sample-controller"

echo "envtest-assets.sh: building kube-apiserver v$KUBE_VERSION (about 5 minutes)" >&2
(
  cd "$work/apiserver"
  {
    echo "module envtestassets/apiserver"
    echo "go 1.25"
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    for r in $staging; do echo "replace k8s.io/$r => k8s.io/$r v0.${KUBE_VERSION#1.}"; done
  } > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/kube-apiserver"\n' > tools.go
  go mod tidy >&2
  minor="${KUBE_VERSION#1.}"; minor="${minor%%.*}"
  go build -trimpath -o "$out/kube-apiserver" -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=v$KUBE_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    k8s.io/kubernetes/cmd/kube-apiserver
)
echo "envtest-assets.sh: building etcd v$ETCD_VERSION (about 1 minute)" >&2
(
  cd "$work/etcd"
  printf 'module envtestassets/etcd\n\ngo 1.25\n' > go.mod
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > main.go
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  go mod tidy >&2
  go build -trimpath -ldflags "-s -w" -o "$out/etcd" .
)
"$out/kube-apiserver" --version >&2
"$out/etcd" --version >&2
end_build
echo "$DIR"
