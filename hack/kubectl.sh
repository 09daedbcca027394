#!/usr/bin/env bash
# Builds kubectl from the Go module proxy at the version of the envtest kube-apiserver
# (hack/envtest-assets.sh), caches it by version and prints its path. The integration tests
# use it for kubectl kustomize/apply/delete -k even where a kubectl is installed, so that every
# machine tests with the same client. A second call costs nothing.
set -euo pipefail

. "$(dirname "$0")/common.sh"
DIR="$CACHE/kubectl-v$KUBE_VERSION"

if [ -f "$DIR/.complete" ]; then
  echo "$DIR/kubectl"
  exit 0
fi
begin_build kubectl

echo "kubectl.sh: building kubectl v$KUBE_VERSION" >&2
(
  cd "$work"
  # k8s.io/kubectl v0.X.Y is the staging copy of kubectl for Kubernetes 1.X.Y; its go.mod pins
  # the matching client-go, cli-runtime and component-base.
  {
    echo "module nmoverlaykubectl"
    echo "go 1.26"
    echo "require k8s.io/kubectl v0.${KUBE_VERSION#1.}"
  } > go.mod
  # The same as k8s.io/kubernetes/cmd/kubectl, without the cloud auth plugins.
  cat > main.go <<'EOF'
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	// -v must take effect before the command is built (plugins, .kuberc).
	logs.GlogSetter(cmd.GetLogVerbosity(os.Args)) //nolint:errcheck
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
EOF
  go mod tidy >&2
  minor="${KUBE_VERSION#1.}"; minor="${minor%%.*}"
  # kubectl version --client reads component-base/version; client-go's copy feeds the
  # User-Agent. Both are set, as Kubernetes' own build does.
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=v$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  go build -trimpath -ldflags "$ldflags" -o "$out/kubectl" .
)
"$out/kubectl" version --client >&2
# kustomize is compiled into kubectl; fail here rather than in a test if it is not.
"$out/kubectl" kustomize --help >/dev/null
end_build
echo "$DIR/kubectl"
