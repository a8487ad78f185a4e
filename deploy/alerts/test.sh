#!/usr/bin/env bash
# test.sh — the alerting rules' checks.
#
#   test.sh            promtool check rules + promtool test rules tests.yaml, and
#                      the Go checks (PrometheusRule == rules.yaml, metric names,
#                      thresholds on bucket bounds)
#   test.sh promtool   build promtool once (Go module proxy) and print its path
#   test.sh generate   rewrite prometheusrule.yaml from rules.yaml
#
# promtool comes from the Go module proxy (go install ...@PROMETHEUS_VERSION,
# ~10 min the first time) and is cached in $READYLINE_CACHE like deploy/node's
# binaries; it never enters readyline's go.mod.
set -euo pipefail

DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Prometheus 3.16.0 (Prometheus publishes v3.X.Y as Go module v0.3XX.Y).
PROMETHEUS_VERSION=v0.316.0
READYLINE_CACHE=${READYLINE_CACHE:-/var/cache/readyline}
PROMTOOL=$READYLINE_CACHE/promtool-$PROMETHEUS_VERSION/bin/promtool

log() { printf 'alerts: %s\n' "$*" >&2; }

build_promtool() {
	[[ -x $PROMTOOL ]] && return 0
	log "building promtool $PROMETHEUS_VERSION from the Go module proxy into ${PROMTOOL%/*} (once, ~10 min)"
	local tmp
	mkdir -p "$READYLINE_CACHE"
	tmp=$(mktemp -d "$READYLINE_CACHE/.promtool.XXXXXX")
	# A failed build leaves nothing behind.
	if ! (cd "$tmp" && GOBIN=$tmp/bin go install -trimpath -ldflags '-s -w' \
		"github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION"); then
		rm -rf "$tmp"
		return 1
	fi
	mkdir -p "${PROMTOOL%/*}"
	mv "$tmp/bin/promtool" "$PROMTOOL"
	rm -rf "$tmp"
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
}

run_tests() {
	build_promtool
	"$PROMTOOL" check rules "$DIR/rules.yaml"
	(cd "$DIR" && "$PROMTOOL" test rules tests.yaml)
	(cd "$DIR/../.." && go test -count=1 ./deploy/alerts/)
}

case ${1:-test} in
test) run_tests ;;
promtool) build_promtool && echo "$PROMTOOL" ;;
generate) generate ;;
*) sed -n '2,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2 && exit 2 ;;
esac
