package exporter

import (
	"reflect"
	"testing"
	"time"
)

// TestTraceConfigDefaults: the zero fields take the defaults the doc
// comments give, set ones are kept, and RetryMax is never under
// RetryInitial.
func TestTraceConfigDefaults(t *testing.T) {
	want := TraceConfig{QueueSize: 256, QueueBytes: 16 << 20, MaxBatchSpans: 512, ExportTimeout: 10 * time.Second,
		RetryInitial: time.Second, RetryMax: 30 * time.Second, ShutdownTimeout: 5 * time.Second}
	if got := (TraceConfig{}).withDefaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	set := TraceConfig{QueueSize: 1, QueueBytes: 2, MaxBatchSpans: 3, ExportTimeout: 4, RetryInitial: 5, RetryMax: 6, ShutdownTimeout: 7}
	if got := set.withDefaults(); !reflect.DeepEqual(got, set) {
		t.Errorf("set %+v, got %+v", set, got)
	}
	if got := (TraceConfig{RetryInitial: time.Minute}).withDefaults().RetryMax; got != time.Minute {
		t.Errorf("RetryMax %v under RetryInitial 1m", got)
	}
}
