# Sourced by the hack/ scripts: one definition of the versions they build and of the cache
# they keep them in.
KUBE_VERSION="${KUBE_VERSION:-1.36.3}" # kube-apiserver and kubectl (k8s.io/kubectl v0.36.3)
ETCD_VERSION="${ETCD_VERSION:-3.6.7}"
CACHE="${NMOVERLAY_CACHE:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/nmoverlay}"
