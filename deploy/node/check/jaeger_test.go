//go:build e2e

package check

import (
	"net"
	"testing"
	"time"

	"github.com/readyline/readyline/deploy/e2e"
)

// TestLocalNodeJaegerOTLPRoundTrip sends a span to the local Jaeger over
// OTLP/HTTP and reads it back from the query API by trace id; its OTLP
// gRPC receiver (where readyline exports) listens too.
func TestLocalNodeJaegerOTLPRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := testContext(t, time.Minute)
	end := time.Now()
	span := e2e.TestSpan{
		TraceID: e2e.NewTraceID(), SpanID: e2e.NewSpanID(),
		Service: "readyline-e2e", Name: "e2e.roundtrip",
		Start: end.Add(-1500 * time.Millisecond), End: end,
		Attributes: map[string]string{"readyline.test": t.Name()},
	}
	if err := e2e.SendSpanOTLP(ctx, e2e.OTLPHTTPEndpoint, span); err != nil {
		t.Fatal(err)
	}
	trace, err := env.Jaeger.WaitForTrace(ctx, span.TraceID, 1, 30*time.Second)
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
	conn, err := net.DialTimeout("tcp", e2e.OTLPGRPCEndpoint, 2*time.Second)
	if err != nil {
		t.Fatalf("OTLP gRPC endpoint: %v", err)
	}
	conn.Close()
}
