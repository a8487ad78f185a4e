package exporter

import (
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// TraceConfig configures a TraceExporter. The zero value exports over OTLP
// gRPC wherever the standard OTEL_EXPORTER_OTLP_* variables say
// (localhost:4317 when they say nothing).
type TraceConfig struct {
	// Endpoint is where traces go (--otlp-endpoint): "host:port", or a URL
	// such as "http://localhost:4318" or "https://collector:4317". A URL's
	// scheme decides TLS; for OTLP/HTTP a URL without a path gets
	// /v1/traces. Empty: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, then
	// OTEL_EXPORTER_OTLP_ENDPOINT, then the OTLP default, all read by the
	// OTel exporters themselves.
	Endpoint string
	// Protocol is ProtocolGRPC or ProtocolHTTP. Empty:
	// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, then OTEL_EXPORTER_OTLP_PROTOCOL,
	// then ProtocolHTTP when the endpoint's port is 4318 or its path ends in
	// /v1/traces, else ProtocolGRPC.
	Protocol string
	// Insecure disables TLS for a "host:port" endpoint.
	// OTEL_EXPORTER_OTLP_INSECURE=true has the same effect.
	Insecure bool
	// Headers are sent with every request; when set they replace
	// OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string

	// NodeName and ServiceVersion go into the resource (k8s.node.name,
	// service.version); NodeName also stands in for a timeline without one.
	NodeName       string
	ServiceVersion string

	// QueueSize bounds the timelines waiting to become spans (default 256).
	QueueSize int
	// QueueBytes bounds the traces built and waiting for the endpoint
	// (--export-queue-bytes, default 16 MiB), by their size as OTLP
	// requests of their own (otlpSize, about 8 KB for a pod with three
	// containers); the heap they hold is about 2.3 times that
	// (TestQueueHeapPerByte). Beyond it the oldest are dropped and counted
	// (DropReasonQueueBytes).
	QueueBytes int64
	// MaxBatchSpans is the most spans per request (default 512); a trace
	// with more goes in a request of its own.
	MaxBatchSpans int
	// ExportTimeout bounds one export request (default 10 s).
	ExportTimeout time.Duration
	// RetryInitial and RetryMax shape the back-off after a failed request:
	// after the n-th failure in a row the batch is sent again in
	// RetryInitial·2^(n-1), at most RetryMax, less up to half of it at
	// random (defaults 1 s and 30 s).
	RetryInitial time.Duration
	RetryMax     time.Duration
	// ShutdownTimeout bounds the final flush when Run's context ends
	// (default 5 s).
	ShutdownTimeout time.Duration

	// Exporter, when set, receives the spans instead of an OTLP exporter
	// (tests use tracetest.NewInMemoryExporter). The endpoint fields are
	// then ignored. Its ExportSpans must be all-or-nothing, like an OTLP
	// request: an error means nothing was taken.
	Exporter sdktrace.SpanExporter
	// Observer, when set, counts export failures and drops.
	Observer ExportObserver
}

func (c TraceConfig) withDefaults() TraceConfig {
	if c.QueueSize <= 0 {
		c.QueueSize = 256
	}
	if c.QueueBytes <= 0 {
		c.QueueBytes = 16 << 20
	}
	if c.MaxBatchSpans <= 0 {
		c.MaxBatchSpans = 512
	}
	if c.ExportTimeout <= 0 {
		c.ExportTimeout = 10 * time.Second
	}
	if c.RetryInitial <= 0 {
		c.RetryInitial = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 30 * time.Second
	}
	c.RetryMax = max(c.RetryMax, c.RetryInitial)
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	return c
}
