# nmoverlay: NetworkManager keyfile overlay for OpenShift/Kubernetes baremetal nodes.
# `make test` runs every test tier (root needed for node and boot); `make demo` shows the main job.

GO        ?= go
BIN       := bin
# One version for every binary and image (hack/version.sh: internal/version/RELEASE, and the
# commit between releases).
VERSION   := $(shell hack/version.sh)
GOFLAGS_BUILD := -trimpath -ldflags="-s -w $(shell hack/version.sh --ldflags)"
export CGO_ENABLED := 0

.PHONY: version verify-generated image test-image all build test test-unit test-integration test-node test-faults test-boot test-upgrade test-vm vm-image bench demo generate lint deps rootfs node-rootfs node-images kube-assets clean

all: build

version:
	@echo $(VERSION)

build:
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN)/ ./cmd/...

# Every tier. Under CI=true a tier that cannot run fails instead of skipping.
test: lint test-unit test-integration test-image test-node test-faults test-boot test-upgrade test-vm

# deploy's PrometheusRule test runs promtool (hack/prometheus.sh builds it).
test-unit:
	NMOVERLAY_PROMETHEUS="$$(hack/prometheus.sh)" $(GO) test -count=1 ./...

deps:
	hack/install-deps.sh

# Every Kubernetes binary of one release (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy, kubectl) in one go build from the Go module proxy,
# and etcd; built once and cached by version.
KUBE_ASSETS = $$(hack/kube-assets.sh)
kube-assets:
	@hack/kube-assets.sh >/dev/null

# Real kube-apiserver and etcd.
test-integration: deps kube-assets
	NMOVERLAY_PROMETHEUS="$$(hack/prometheus.sh)" KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" KUBECTL="$(KUBE_ASSETS)/kubectl" $(GO) test -count=1 -tags integration ./test/integration/... -ginkgo.label-filter='!faults'
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -tags integration ./test/apiload/...

# The container image (FROM scratch, the static binaries) with buildah; no Docker engine.
# IMAGE=... names it; prints the image reference.
image:
	@hack/image.sh

# Builds the image and checks it against deploy/: every command the manifests run is in it,
# static, and runs; its USER passes runAsNonRoot. Root (buildah's system storage).
test-image:
	$(GO) test -count=1 -timeout 15m -tags image ./test/image/...

# Real NetworkManager over D-Bus and real overlayfs, in the test's own namespaces.
test-node: deps kube-assets
	NMOVERLAY_NM_OVS="$$(hack/nm-ovs.sh)" KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 15m -tags node ./test/node/... -ginkgo.label-filter='!faults'

# Faults injected for real on a node-tier node whose handler runs as its own process:
# NetworkManager restarted or killed mid-transaction, the handler killed, another tool's
# checkpoint, the API server unreachable, a write into the lower dir, a full tmpfs; and the
# rollout's (integration tier): a handler restarted while it waits for a slot, the
# controller's leader killed, a node deleted. Each asserts the contract (docs/faults.md).
test-faults: deps kube-assets
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 15m -v -tags node ./test/node/... -ginkgo.label-filter=faults -ginkgo.v
	NMOVERLAY_PROMETHEUS="$$(hack/prometheus.sh)" KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 10m -v -tags integration ./test/integration/... -ginkgo.label-filter=faults -ginkgo.v

rootfs: deps
	@hack/rootfs.sh >/dev/null

# The local cluster's nodes: the root above plus containerd, runc and the CNI plugins.
node-rootfs: rootfs
	@hack/node-rootfs.sh >/dev/null

# The images the local cluster's nodes import (nmoverlay's, from this tree, and the pods'
# sandbox image), as archives in the cache.
node-images: deps
	@. hack/common.sh && hack/node-images.sh "$$CACHE/node-images" >/dev/null 2>"$$CACHE/node-images.log" || { tail -20 "$$CACHE/node-images.log"; exit 1; }

# Real systemd in systemd-nspawn on a Debian root filesystem (built once by hack/rootfs.sh);
# the local cluster of make demo (kubelets, containerd) on hack/node-rootfs.sh's; etcdutl
# (hack/etcdutl.sh) restores its etcd from a snapshot.
test-boot: node-rootfs kube-assets node-images
	. hack/common.sh && NMOVERLAY_ROOTFS="$$(hack/rootfs.sh)" NMOVERLAY_NODE_ROOTFS="$$(hack/node-rootfs.sh)" NMOVERLAY_NODE_IMAGES="$$CACHE/node-images" \
	  NMOVERLAY_ETCDUTL="$$(hack/etcdutl.sh)/etcdutl" \
	  KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" KUBECTL="$(KUBE_ASSETS)/kubectl" $(GO) test -count=1 -timeout 30m -tags boot ./test/boot/...

# Version N of the upgrade tier: the last commit before versions were stamped (issue 34).
# hack/upgrade-from.sh builds its image, CLI and manifests from a worktree, once.
UPGRADE_FROM := c103c70e5bdc286f4e2a3739d7d72e4cd0b9590b

# N installed on the local cluster with policies in force, upgraded to this tree with
# kubectl apply -k, its MachineConfig rolled one reboot at a time, downgraded back to N, then
# an N and an N+1 handler under one N+1 controller. Root, like test-boot.
test-upgrade: node-rootfs kube-assets node-images
	. hack/common.sh && NMOVERLAY_UPGRADE_FROM="$$(hack/upgrade-from.sh $(UPGRADE_FROM))" \
	  NMOVERLAY_NODE_ROOTFS="$$(hack/node-rootfs.sh)" NMOVERLAY_NODE_IMAGES="$$CACHE/node-images" \
	  KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" KUBECTL="$(KUBE_ASSETS)/kubectl" $(GO) test -count=1 -timeout 15m -v -tags upgrade ./test/upgrade/... -ginkgo.v

# The VM tier's two guests, built at once (each is cached): Debian 12's and Debian 13's.
vm-image: rootfs
	@hack/vm-image.sh >/dev/null & t=$$!; hack/vm-image-trixie.sh >/dev/null; s=$$?; wait $$t && exit $$s

# Debian kernels under qemu (TCG) for bond, VLAN, dummy, VRF, bridge VLAN filtering, and
# Open vSwitch on the kernel datapath under NetworkManager 1.52 (the second guest).
test-vm: vm-image
	NMOVERLAY_VM="$$(hack/vm-image.sh)" NMOVERLAY_VM_TRIXIE="$$(hack/vm-image-trixie.sh)" $(GO) test -count=1 -timeout 25m -tags vm ./test/vm/...

# Benchmarks print absolute figures and the ratio against a peer measured in the same run.
bench: rootfs node-rootfs kube-assets node-images
	$(GO) test -count=1 -timeout 30m -tags node -run '^$$' -bench ApplyReference -benchtime 1x ./test/node/...
	$(GO) test -count=1 -timeout 30m -tags node -run '^$$' -bench Show200 -benchtime 3s ./test/node/...
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 45m -tags node -run '^$$' -bench 'RebootReconvergence|HandlerRSS200|NNSFreshness200|Scale' -benchtime 1x ./test/node/...
	KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 60m -tags integration -run '^$$' -bench APILoad -benchtime 1x ./test/apiload/...
	. hack/common.sh && NMOVERLAY_ROOTFS="$$(hack/rootfs.sh)" NMOVERLAY_NODE_ROOTFS="$$(hack/node-rootfs.sh)" NMOVERLAY_NODE_IMAGES="$$CACHE/node-images" \
	  KUBEBUILDER_ASSETS="$(KUBE_ASSETS)" $(GO) test -count=1 -timeout 30m -tags boot -run '^$$' -bench . -benchtime 1x ./test/boot/...

# hack/demo.sh builds (or finds) the nodes' root, the Kubernetes binaries and the images,
# at once.
demo: deps
	hack/demo.sh

# Deepcopy and CRDs from the api/ types (controller-gen, pinned, built from the module proxy).
generate:
	CG="$$(hack/controller-gen.sh)" && $$CG object paths=./api/... && \
	  $$CG crd paths=./api/... output:crd:artifacts:config=deploy/crds

# The generated files must match the types: CI fails on a forgotten make generate.
verify-generated: generate
	git diff --exit-code -- api deploy/crds

lint: verify-generated
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run ./hack/layers
	$(GO) vet -tags node ./test/node/...
	$(GO) vet -tags boot ./test/boot/...
	$(GO) vet -tags integration ./test/integration/... ./test/apiload/...
	$(GO) vet -tags vm ./test/vm/...
	$(GO) vet -tags upgrade ./test/upgrade/...
	$(GO) vet -tags image ./test/image/...

clean:
	rm -rf $(BIN)
