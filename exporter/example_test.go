package exporter_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

// Example wires the exporter the way 'readyline run' is meant to: metrics
// count the trace exporter's losses, every finished timeline goes to the
// traces, the metrics and the store, and one HTTP server serves /metrics
// and the explain API. (The daemon serves each on an address of its own,
// and its health on a third, on loopback.)
func Example() {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()

	metrics, err := exporter.NewMetrics(logger)
	if err != nil {
		panic(err)
	}
	traces, err := exporter.NewTraceExporter(exporter.TraceConfig{
		Endpoint: "localhost:4317", // --otlp-endpoint; empty: OTEL_EXPORTER_OTLP_*
		Insecure: true,
		NodeName: os.Getenv("NODE_NAME"),
		Observer: metrics,
	}, logger)
	if err != nil {
		panic(err)
	}
	go traces.Run(ctx) // returns after flushing when ctx ends
	store := exporter.NewStore(exporter.StoreLimits{})

	finished := func(tl *correlator.Timeline) { // called by the correlator loop
		metrics.Record(tl)
		store.Add(tl)
		_ = traces.Export(ctx, tl) // never blocks; drops are counted
	}
	_ = finished

	mux := http.NewServeMux()
	// Every start, to whoever reaches the address: root on the node only
	// (exporter/apiauth serves each user what they may read).
	mux.Handle("/api/", exporter.ServeEveryPod(store.Handler(logger)))
	mux.Handle("/", metrics.Handler(nil))
	_ = &http.Server{Addr: "127.0.0.1:9464", Handler: mux}
}
