// Package waterfall draws a pod start (a correlator.Timeline) as a text
// waterfall for a terminal (Render), and follows a start in progress,
// drawing it again as it takes new facts (Watch, Redraw): what
// `readyline explain` and `kubectl readyline explain` print.
//
// Its rows are a Chart (chart.go): one per phase, container attempt,
// process, hook, probe kind, waiting reason and condition, in order, on
// one time axis, each kind of fact drawn by a file of its own (sandbox.go,
// volumes.go, containers.go, calls.go, probes.go), with the words above
// and below them (header.go, footer.go). The text (waterfall.go) and the
// exporter's HTML page (exporter.RenderWaterfallHTML) both draw a Chart,
// so that they show the same rows. Both label the rows with the spans'
// names (exporter/podtrace), and the exporter's spans, alerts and pages
// word durations and pulls as the waterfall does (words.go).
//
// It imports neither OpenTelemetry, nor gRPC, nor Prometheus: the kubectl
// plugin draws with it and links none of them (see
// cmd/kubectl-readyline's deps_test.go). The output depends only on the
// timeline and the width: the golden files under testdata/ are the
// waterfalls of the fixtures (rewrite them with go test -update).
package waterfall
