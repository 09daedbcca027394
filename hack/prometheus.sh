#!/usr/bin/env bash
# Builds Prometheus' promtool and prometheus-operator's CRDs of the pinned releases from the
# Go module proxy; caches them by version and prints their directory: promtool, and
# crds/monitoring.coreos.com_{servicemonitors,prometheusrules}.yaml. The unit tier tests the
# PrometheusRule with `promtool test rules`; the integration tier installs the CRDs, so
# that the API server validates the operator's ServiceMonitors and PrometheusRule against
# their real schemas. The CRDs are generated from prometheus-operator's API types with
# controller-gen, as prometheus-operator generates its own. promtool is built without
# Prometheus' service discoveries (remove_all_sd), which rule tests do not use: a third less
# to compile. Cold: about three minutes.
set -euo pipefail

PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}" # Prometheus 3.16's Go module
PROMETHEUS_OPERATOR_VERSION="${PROMETHEUS_OPERATOR_VERSION:-v0.95.2}"
. "$(dirname "$0")/common.sh"
DIR="$CACHE/prometheus-$PROMETHEUS_VERSION-operator-$PROMETHEUS_OPERATOR_VERSION"

if [ -f "$DIR/.complete" ]; then
  echo "$DIR"
  exit 0
fi
CG="$("$(dirname "$0")/controller-gen.sh")"
begin_build prometheus
echo "prometheus.sh: building promtool $PROMETHEUS_VERSION, prometheus-operator $PROMETHEUS_OPERATOR_VERSION's CRDs" >&2
(
  cd "$work"
  printf 'module kubeassets/prometheus\n\ngo 1.26\n' > go.mod
  go get "github.com/prometheus/prometheus@$PROMETHEUS_VERSION" \
    "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring@$PROMETHEUS_OPERATOR_VERSION" >"$work/build.log" 2>&1
  go build -tags remove_all_sd -trimpath -ldflags "-s -w" -o "$out/promtool" github.com/prometheus/prometheus/cmd/promtool >>"$work/build.log" 2>&1
  mkdir -p "$work/crds" "$out/crds"
  "$CG" crd paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 output:crd:dir="$work/crds" >>"$work/build.log" 2>&1
  cp "$work"/crds/monitoring.coreos.com_{servicemonitors,prometheusrules}.yaml "$out/crds/"
) || { echo "prometheus.sh: building failed:" >&2; tail -20 "$work/build.log" >&2; exit 1; }
"$out/promtool" --version >&2
end_build
echo "$DIR"
