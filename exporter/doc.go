// Package exporter turns correlator Timelines into what users look at: one
// OpenTelemetry trace per pod start (OTLP over gRPC or HTTP), Prometheus
// metrics with bounded labels, a text waterfall for the terminal, and the
// in-memory store and HTTP API that 'readyline explain' reads.
//
// The exporter only presents facts the correlator established; it never
// re-derives them. Everything here is safe for concurrent use unless a doc
// comment says otherwise.
package exporter
