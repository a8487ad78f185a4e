// Package exporter turns correlator Timelines into what users look at: one
// OpenTelemetry trace per pod start (OTLP over gRPC or HTTP), Prometheus
// metrics with bounded labels, the waterfall as HTML and SVG for a browser,
// and the in-memory store with the HTTP API that 'readyline explain' reads
// and the pages under /ui/ (its client, with the wire types and errors both
// sides share, is exporter/apiclient).
//
// The text waterfall for the terminal is exporter/waterfall, whose rows
// (waterfall.Chart) the HTML page draws too; the names and ids the traces
// and the waterfalls share are exporter/podtrace's. Neither imports
// OpenTelemetry, gRPC or Prometheus, so that the kubectl plugin, which
// draws the text waterfall, links none of them.
//
// The exporter only presents facts the correlator established; it never
// re-derives them. Everything here is safe for concurrent use unless a doc
// comment says otherwise.
package exporter
