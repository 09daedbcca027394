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
