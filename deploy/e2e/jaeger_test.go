//go:build e2e

package e2e

import (
	"net"
	"testing"
	"time"
)

// TestJaegerOTLPRoundTrip sends a span to Jaeger over OTLP/HTTP and reads it
// back from the query API by trace id.
func TestJaegerOTLPRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, time.Minute)
	end := time.Now()
	span := TestSpan{
		TraceID: NewTraceID(), SpanID: NewSpanID(),
		Service: "readyline-e2e", Name: "e2e.roundtrip",
		Start: end.Add(-1500 * time.Millisecond), End: end,
		Attributes: map[string]string{"readyline.test": t.Name()},
	}
	if err := SendSpanOTLP(ctx, OTLPHTTPEndpoint, span); err != nil {
		t.Fatal(err)
	}
	trace, err := WaitForTrace(ctx, JaegerQueryURL, span.TraceID, 1, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := trace.SpanByName("e2e.roundtrip")
	if !ok {
		t.Fatalf("trace %s has no span e2e.roundtrip: %+v", span.TraceID, trace.Spans)
	}
	if got.SpanID != span.SpanID || trace.ServiceName(got) != "readyline-e2e" {
		t.Errorf("span %s of service %q, want %s of readyline-e2e", got.SpanID, trace.ServiceName(got), span.SpanID)
	}
	if v, _ := got.Tag("readyline.test"); v != t.Name() {
		t.Errorf("attribute readyline.test = %v, want %s", v, t.Name())
	}
	if got.Duration != 1500000 {
		t.Errorf("duration %dµs, want 1500000", got.Duration)
	}
	if got.StartTime != span.Start.UnixMicro() {
		t.Errorf("start %dµs, want %d", got.StartTime, span.Start.UnixMicro())
	}

	// The OTLP gRPC receiver (where readyline exports) listens on loopback.
	conn, err := net.DialTimeout("tcp", OTLPGRPCEndpoint, 2*time.Second)
	if err != nil {
		t.Fatalf("OTLP gRPC endpoint: %v", err)
	}
	conn.Close()
}
