// Package exporter turns correlator Timelines into what users look at: one
// OpenTelemetry trace per pod start (OTLP over gRPC or HTTP), Prometheus
// metrics with bounded labels, a text waterfall for the terminal, the same
// waterfall as HTML and SVG for a browser (both drawn from one set of rows,
// waterfall_rows.go), and the in-memory store with the HTTP API that
// 'readyline explain' reads and the pages under /ui/ (its client, with the
// wire types and errors both sides share, is exporter/apiclient).
//
// The exporter only presents facts the correlator established; it never
// re-derives them. Everything here is safe for concurrent use unless a doc
// comment says otherwise.
package exporter
