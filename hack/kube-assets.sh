#!/usr/bin/env bash
# Builds every Kubernetes binary the tiers and the demo run, of one release, from the Go
# module proxy (no prebuilt binaries can be downloaded here), caches them by version and
# prints their directory (KUBEBUILDER_ASSETS: envtest finds kube-apiserver, etcd and
# kubectl there):
#   kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl  one go build
#   etcd                                                                            built alongside
# A second call costs nothing. Cold (empty Go caches, 2 cores): about 18 minutes; 4 with Go's
# build cache warm.
set -euo pipefail

. "$(dirname "$0")/common.sh"
DIR="$CACHE/kubernetes-v$KUBE_VERSION-etcd$ETCD_VERSION"
COMMANDS="kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl"

if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
begin_build kube-assets
mkdir -p "$work/kubernetes" "$work/etcd"

# etcd is a module of its own: built while the Kubernetes modules download and compile.
(
  cd "$work/etcd"
  printf 'module kubeassets/etcd\n\ngo 1.25\n' > go.mod
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > main.go
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >"$work/etcd.log" 2>&1
  go mod tidy >>"$work/etcd.log" 2>&1
  go build -trimpath -ldflags "-s -w" -o "$out/etcd" . >>"$work/etcd.log" 2>&1
) &
etcd_pid=$!

echo "kube-assets.sh: building $COMMANDS v$KUBE_VERSION and etcd v$ETCD_VERSION (about 18 minutes cold)" >&2
(
  cd "$work/kubernetes"
  # k8s.io/kubernetes requires its staging repos at v0.0.0 and replaces them with
  # ./staging/...: a module that requires it replaces each with its published v0.X.Y. The
  # list is Kubernetes' own, read from its go.mod (1.36 added cri-streaming and streaming).
  gomod=$(go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  staging=$(awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "$gomod")
  [ -n "$staging" ] || { echo "kube-assets.sh: no staging replaces in $gomod" >&2; exit 1; }
  {
    echo "module kubeassets/kubernetes"
    echo "go 1.25"
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    for r in $staging; do echo "replace $r => $r v0.${KUBE_VERSION#1.}"; done
  } > go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in $COMMANDS; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'
  } > tools.go
  go mod tidy >&2
  minor="${KUBE_VERSION#1.}"; minor="${minor%%.*}"
  # Clients that check the server's version, and the kubelet's Node status, read
  # component-base/version; client-go's copy feeds the User-Agent. Both are set, as
  # Kubernetes' own build does.
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  pkgs=""
  for c in $COMMANDS; do pkgs="$pkgs k8s.io/kubernetes/cmd/$c"; done
  go build -trimpath -ldflags "$ldflags" -o "$out/" $pkgs
)
wait "$etcd_pid" || { echo "kube-assets.sh: building etcd failed:" >&2; tail -20 "$work/etcd.log" >&2; exit 1; }
for c in $COMMANDS; do
  case "$c" in
    kubectl) "$out/$c" version --client >&2 ;;
    *) "$out/$c" --version >&2 ;;
  esac
done
"$out/etcd" --version >&2
# kustomize is compiled into kubectl; fail here rather than in a test if it is not.
"$out/kubectl" kustomize --help >/dev/null
end_build
echo "$DIR"
