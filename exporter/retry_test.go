package exporter

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/readyline/readyline/correlator"
)

// outageExporter is an endpoint that refuses every request while it is
// down and keeps what it accepts; a request is all or nothing, as in OTLP.
// With hang set a request while down waits for its context instead of
// failing at once (an endpoint that does not answer). It is safe for
// concurrent use.
type outageExporter struct {
	mu       sync.Mutex
	down     bool
	hang     bool
	gate     chan struct{} // when not nil, every request waits for it first
	atGate   int           // requests that reached the gate
	requests [][]trace.SpanID
	accepted [][]sdktrace.ReadOnlySpan // one per accepted request
}

func (o *outageExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	o.mu.Lock()
	gate := o.gate
	if gate != nil {
		o.atGate++
	}
	o.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	ids := make([]trace.SpanID, len(spans))
	for i, s := range spans {
		ids[i] = s.SpanContext().SpanID()
	}
	o.requests = append(o.requests, ids)
	if o.down {
		if o.hang {
			o.mu.Unlock()
			<-ctx.Done()
			o.mu.Lock()
			return ctx.Err()
		}
		return errors.New("connection refused")
	}
	o.accepted = append(o.accepted, slices.Clone(spans))
	return nil
}

func (o *outageExporter) Shutdown(context.Context) error { return nil }

func (o *outageExporter) setDown(down bool) {
	o.mu.Lock()
	o.down = down
	o.mu.Unlock()
}

// acceptedSpans returns every span accepted, in order, and the index of the
// request that carried each.
func (o *outageExporter) acceptedSpans() (spans []sdktrace.ReadOnlySpan, request []int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for i, r := range o.accepted {
		spans = append(spans, r...)
		for range r {
			request = append(request, i)
		}
	}
	return spans, request
}

// backOffClock replaces time.After in the back-off: each wait the sender asks
// for is handed to the test, which ends it when it wants.
type backOffClock struct {
	asked    chan pendingWait
	released chan struct{} // closed when the test no longer takes waits
	once     sync.Once
}

type pendingWait struct {
	d    time.Duration
	fire chan time.Time
}

func newFakeClock() *backOffClock {
	return &backOffClock{asked: make(chan pendingWait), released: make(chan struct{})}
}

// after hands the wait to the test; once released, it returns a wait that
// never ends (Run's shutdown ends it).
func (c *backOffClock) after(d time.Duration) <-chan time.Time {
	w := pendingWait{d: d, fire: make(chan time.Time, 1)}
	select {
	case c.asked <- w:
	case <-c.released:
	}
	return w.fire
}

func (c *backOffClock) release() { c.once.Do(func() { close(c.released) }) }

// next returns the wait the sender asks for next: it has ended a failed
// request and is backing off.
func (c *backOffClock) next(t *testing.T) pendingWait {
	t.Helper()
	select {
	case w := <-c.asked:
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("the sender did not back off")
		return pendingWait{}
	}
}

// startExporter runs a TraceExporter over exp with the fake clock and no
// jitter; stop cancels Run and returns its error.
func startExporter(t *testing.T, cfg TraceConfig, exp sdktrace.SpanExporter, clock *backOffClock, logger *slog.Logger) (e *TraceExporter, stop func() error) {
	t.Helper()
	cfg.Exporter = exp
	e, err := NewTraceExporter(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		e.after = clock.after
	}
	e.jitter = func() float64 { return 0 }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			if clock != nil {
				clock.release()
			}
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() { stop() })
	return e, stop
}

// waitBuilt waits until e has built n timelines.
func waitBuilt(t *testing.T, e *TraceExporter, n uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.Stats().Timelines < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d timelines built, want %d", e.Stats().Timelines, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func flush(t *testing.T, e *TraceExporter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v (stats %+v)", err, e.Stats())
	}
}

// podStarts returns n timelines of distinct pods, a mix of the fixtures.
func podStarts(t *testing.T, n int) []*correlator.Timeline {
	fixtures := []func() *correlator.Timeline{lifecycleDemo, initFailureNever, postStartDemo, stuckCrashLoop, lateSeen}
	tls := make([]*correlator.Timeline, n)
	for i := range tls {
		tls[i] = fixtures[i%len(fixtures)]()
		tls[i].Pod.UID = newUUID(t)
	}
	return tls
}

// runsOf returns the trace ids of the accepted spans in order, one per run
// of spans of one trace, and fails the test when a run is split across
// requests or a span arrived twice.
func runsOf(t *testing.T, o *outageExporter) []trace.TraceID {
	t.Helper()
	spans, request := o.acceptedSpans()
	seen := map[trace.SpanID]bool{}
	var runs []trace.TraceID
	for i, s := range spans {
		id := s.SpanContext().SpanID()
		if seen[id] {
			t.Errorf("span %s (%s) arrived twice", id, s.Name())
		}
		seen[id] = true
		tid := s.SpanContext().TraceID()
		if i > 0 && spans[i-1].SpanContext().TraceID() == tid {
			if request[i-1] != request[i] {
				t.Errorf("trace %s split across requests %d and %d", tid, request[i-1], request[i])
			}
			continue
		}
		runs = append(runs, tid)
	}
	return runs
}

// TestOutageEveryTraceOnceInOrder: 50 pod starts (one of them reported at
// its deadline and completed later) exported while the endpoint is down
// all arrive once it is back, each span once, in order, each trace in one
// request; meanwhile the same failed batch is sent again with a doubling
// back-off capped at RetryMax.
func TestOutageEveryTraceOnceInOrder(t *testing.T) {
	out := &outageExporter{down: true}
	clock := newFakeClock()
	e, stop := startExporter(t, TraceConfig{MaxBatchSpans: 100}, out, clock, nil)

	tls := podStarts(t, 48)
	report, completion := reportedAndCompleted()
	report.Pod.UID = newUUID(t)
	completion.Pod.UID = report.Pod.UID
	tls = slices.Insert(tls, 10, report)
	tls = slices.Insert(tls, 40, completion)
	var want []trace.TraceID
	for _, tl := range tls {
		want = append(want, TraceIDForPod(tl.Pod.UID))
	}

	ctx := context.Background()
	if err := e.Export(ctx, tls[0]); err != nil {
		t.Fatal(err)
	}
	w := clock.next(t) // the first request failed
	for _, tl := range tls[1:] {
		if err := e.Export(ctx, tl); err != nil {
			t.Fatal(err)
		}
	}
	waitBuilt(t, e, uint64(len(tls)))

	var waits []time.Duration
	for range 8 {
		waits = append(waits, w.d)
		w.fire <- time.Time{}
		w = clock.next(t)
	}
	waits = append(waits, w.d)
	wantWaits := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30, 30}
	for i := range wantWaits {
		wantWaits[i] *= time.Second
	}
	if !slices.Equal(waits, wantWaits) {
		t.Errorf("back-off %v, want %v", waits, wantWaits)
	}
	// Every try sent the same batch: the first trace alone, taken before
	// the others were built.
	out.mu.Lock()
	for i, r := range out.requests {
		if !slices.Equal(r, out.requests[0]) {
			t.Errorf("request %d has %d spans, not the failed batch of %d sent again", i, len(r), len(out.requests[0]))
		}
	}
	tries := len(out.requests)
	out.mu.Unlock()
	if st := e.Stats(); st.FailedExports != uint64(tries) || st.QueuedTraces != len(tls) || st.ExportedSpans != 0 {
		t.Errorf("during the outage: stats %+v, %d requests", st, tries)
	}

	out.setDown(false)
	w.fire <- time.Time{}
	flush(t, e)
	if got := runsOf(t, out); !slices.Equal(got, want) {
		t.Errorf("traces arrived in this order\n got %v\nwant %v", got, want)
	}
	spans, _ := out.acceptedSpans()
	st := e.Stats()
	if st.ExportedTraces != uint64(len(tls)) || st.ExportedSpans != st.Spans || uint64(len(spans)) != st.Spans ||
		st.DroppedTraces != 0 || st.QueuedTraces != 0 || st.QueuedBytes != 0 {
		t.Errorf("after the outage: stats %+v, %d spans accepted", st, len(spans))
	}
	out.mu.Lock()
	for i, r := range out.accepted {
		if len(r) > 100 {
			t.Errorf("request %d has %d spans, more than MaxBatchSpans", i, len(r))
		}
	}
	out.mu.Unlock()
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// traceBytes is the size lifecycleDemo's trace takes in the export queue.
func traceBytes(t *testing.T) int64 {
	e, err := NewTraceExporter(TraceConfig{Exporter: discardExporter{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.build(exportJob{tl: lifecycleDemo()})
	_, b := e.Queued()
	return b
}

// TestOutageQueueDropsOldest: beyond QueueBytes the oldest traces are
// dropped, counted and logged once, and the ones kept arrive once the
// endpoint is back.
func TestOutageQueueDropsOldest(t *testing.T) {
	size := traceBytes(t)
	var logs syncBuffer
	obs := &fakeObserver{}
	out := &outageExporter{down: true}
	clock := newFakeClock()
	budget := 5*size + size/2
	e, stop := startExporter(t, TraceConfig{QueueBytes: budget, Observer: obs}, out, clock,
		slog.New(slog.NewTextHandler(&logs, nil)))

	var uids []string
	export := func() {
		tl := lifecycleDemo()
		tl.Pod.UID = newUUID(t)
		uids = append(uids, tl.Pod.UID)
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
	}
	export()
	w := clock.next(t)
	for range 11 {
		export()
	}
	waitBuilt(t, e, 12)
	st := e.Stats()
	if st.QueuedTraces != 5 || st.QueuedBytes != 5*size || st.DroppedTraces != 7 || st.DroppedSpans != 7*21 ||
		obs.droppedFor(DropSourceTraces+"/"+DropReasonQueueBytes) != 7 {
		t.Errorf("a trace is %d bytes, the budget %d: stats %+v, observer %v", size, budget, st, obs.dropped)
	}
	out.setDown(false)
	w.fire <- time.Time{}
	flush(t, e)
	var want []trace.TraceID
	for _, uid := range uids[7:] {
		want = append(want, TraceIDForPod(uid))
	}
	if got := runsOf(t, out); !slices.Equal(got, want) {
		t.Errorf("arrived %v, want the 5 newest %v", got, want)
	}
	if n := strings.Count(logs.String(), "export queue full: dropping the oldest"); n != 1 {
		t.Errorf("%d warnings about the drops, want 1:\n%s", n, logs.String())
	}
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestQueueNeverDropsTheRequestInFlight: while a batch is in a request the
// budget is kept by dropping the oldest of the others; the batch arrives.
func TestQueueNeverDropsTheRequestInFlight(t *testing.T) {
	size := traceBytes(t)
	gate := make(chan struct{})
	out := &outageExporter{gate: gate}
	e, stop := startExporter(t, TraceConfig{QueueBytes: 5*size + size/2}, out, nil, nil)
	var uids []string
	for i := range 12 {
		tl := lifecycleDemo()
		tl.Pod.UID = newUUID(t)
		uids = append(uids, tl.Pod.UID)
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
		if i == 0 { // in a request before the others are built
			for out.waiting() == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}
	waitBuilt(t, e, 12)
	close(gate)
	flush(t, e)
	want := []trace.TraceID{TraceIDForPod(uids[0])}
	for _, uid := range uids[8:] {
		want = append(want, TraceIDForPod(uid))
	}
	if got := runsOf(t, out); !slices.Equal(got, want) {
		t.Errorf("arrived %v, want the one in flight and the 4 newest %v", got, want)
	}
	if st := e.Stats(); st.DroppedTraces != 7 || st.ExportedTraces != 5 {
		t.Errorf("stats %+v", st)
	}
	stop()
}

// waiting reports whether a request waits at the gate.
func (o *outageExporter) waiting() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.atGate
}

// TestShutdownDuringOutage: Run returns within ShutdownTimeout while the
// endpoint refuses or does not answer, and counts the traces it could
// not send.
func TestShutdownDuringOutage(t *testing.T) {
	for _, hang := range []bool{false, true} {
		name := map[bool]string{false: "refused", true: "no answer"}[hang]
		t.Run(name, func(t *testing.T) {
			obs := &fakeObserver{}
			out := &outageExporter{down: true, hang: hang}
			// A hung export ends at ExportTimeout, a minute: Run's return
			// well before it is ShutdownTimeout's doing, on any machine.
			const timeout, exportTimeout = 300 * time.Millisecond, time.Minute
			e, stop := startExporter(t, TraceConfig{ShutdownTimeout: timeout, ExportTimeout: exportTimeout, Observer: obs,
				RetryInitial: 20 * time.Millisecond}, out, nil, nil)
			for _, tl := range podStarts(t, 10) {
				if err := e.Export(context.Background(), tl); err != nil {
					t.Fatal(err)
				}
			}
			waitBuilt(t, e, 10)
			start := time.Now()
			err := stop()
			took := time.Since(start)
			t.Logf("Run returned %v after cancel: %v", took, err)
			if took > exportTimeout/2 {
				t.Errorf("Run took %v to return, ShutdownTimeout is %v", took, timeout)
			}
			if err == nil || !strings.Contains(err.Error(), "10 traces not sent") {
				t.Errorf("Run: %v, want it to say 10 traces were not sent", err)
			}
			if n := obs.droppedFor(DropSourceTraces + "/" + DropReasonShutdown); n != 10 {
				t.Errorf("%d traces counted lost at shutdown, want 10 (%v)", n, obs.dropped)
			}
			if st := e.Stats(); st.DroppedTraces != 10 || st.QueuedTraces != 0 || st.ExportedTraces != 0 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestShutdownSendsWhatIsQueued: when the endpoint is up, what is queued at
// shutdown is sent, nothing lost.
func TestShutdownSendsWhatIsQueued(t *testing.T) {
	out := &outageExporter{}
	e, stop := startExporter(t, TraceConfig{}, out, nil, nil)
	for _, tl := range podStarts(t, 20) {
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := e.Stats(); st.ExportedTraces+st.Dropped != 20 || st.DroppedTraces != 0 {
		t.Errorf("stats %+v", st)
	}
	if runs := runsOf(t, out); len(runs) != int(e.Stats().ExportedTraces) {
		t.Errorf("%d traces arrived, stats %+v", len(runs), e.Stats())
	}
}

func TestRetryWait(t *testing.T) {
	for _, tc := range []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{1, 0, time.Second},
		{2, 0, 2 * time.Second},
		{5, 0, 16 * time.Second},
		{6, 0, 30 * time.Second},
		{1000, 0, 30 * time.Second}, // no overflow
		{1, 0.5, 750 * time.Millisecond},
		{3, 0.999999, 2*time.Second + 2*time.Microsecond},
		{1000, 0.5, 22500 * time.Millisecond},
	} {
		if got := retryWait(time.Second, 30*time.Second, tc.n, tc.r); got != tc.want {
			t.Errorf("retryWait(1s, 30s, %d, %v) = %v, want %v", tc.n, tc.r, got, tc.want)
		}
	}
}

// TestShutdownTriesAtOnce: an endpoint back during a long back-off gets
// the queue at shutdown, without waiting for the back-off to end.
func TestShutdownTriesAtOnce(t *testing.T) {
	out := &outageExporter{down: true}
	clock := newFakeClock()
	e, stop := startExporter(t, TraceConfig{}, out, clock, nil)
	for _, tl := range podStarts(t, 3) {
		if err := e.Export(context.Background(), tl); err != nil {
			t.Fatal(err)
		}
	}
	clock.next(t) // backing off, and the fake clock never ends it
	waitBuilt(t, e, 3)
	out.setDown(false)
	if err := stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if st := e.Stats(); st.ExportedTraces != 3 || st.DroppedTraces != 0 {
		t.Errorf("stats %+v", st)
	}
}
