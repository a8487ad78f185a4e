#!/usr/bin/env bash
# test.sh — the alerting rules' checks.
#
#   test.sh            promtool check rules + promtool test rules tests.yaml, and
#                      the Go checks (PrometheusRule == rules.yaml, metric names,
#                      thresholds on bucket bounds)
#   test.sh promtool   build promtool once (Go module proxy) and print its path
#   test.sh generate   rewrite prometheusrule.yaml from rules.yaml, and copy
#                      rules.yaml into the Helm chart (deploy/helm/readyline/files)
#
# promtool comes from the Go module proxy and is built and cached by deploy/node
# (node.sh tool promtool, ~10 min the first time); it never enters readyline's
# go.mod.
set -euo pipefail

DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NODE_SH=$DIR/../node/node.sh

log() { printf 'alerts: %s\n' "$*" >&2; }

# promtool_path prints the path of promtool, which deploy/node builds and caches
# (node.sh tool promtool: ~10 min the first time, as root).
promtool_path() {
	log "asking deploy/node for promtool (built once from the Go module proxy, ~10 min cold)"
	"$NODE_SH" tool promtool
}

# generate writes the PrometheusRule: its header, then rules.yaml's groups
# indented under spec.
generate() {
	{
		cat <<'HEADER'
# The rules of rules.yaml for the Prometheus Operator, written by
# deploy/alerts/test.sh generate: edit rules.yaml and run it. spec.groups must
# stay identical to rules.yaml's groups (rules_test.go checks it). Label it so
# that your Prometheus' ruleSelector picks it up.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: readyline
  labels:
    app.kubernetes.io/name: readyline
    app.kubernetes.io/component: alerts
spec:
HEADER
		sed -n '/^groups:/,$p' "$DIR/rules.yaml" | sed 's/^/  /'
	} >"$DIR/prometheusrule.yaml"
	# The chart cannot read outside its directory; deploy/helm's tests check
	# that the copy is rules.yaml.
	cp "$DIR/rules.yaml" "$DIR/../helm/readyline/files/rules.yaml"
}

run_tests() {
	local promtool
	promtool=$(promtool_path)
	"$promtool" check rules "$DIR/rules.yaml"
	(cd "$DIR" && "$promtool" test rules tests.yaml)
	(cd "$DIR/../.." && go test -count=1 ./deploy/alerts/)
}

case ${1:-test} in
test) run_tests ;;
promtool) promtool_path ;;
generate) generate ;;
*) sed -n '2,13s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2 && exit 2 ;;
esac
