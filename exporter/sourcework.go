package exporter

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	rlevent "github.com/readyline/readyline/collector/event"
)

// What readyline's sources did, counted for users (how often the kubelet
// calls each method: ExecSync runs per second are the exec probes' load) and
// for make bench-node, which splits the one eBPF program of the kubelet's
// probes among its methods by these counts.

// MethodOther is the method label of a call whose method is not one of
// rlevent.CRIMethods (none, from the daemon's own probes).
const MethodOther = "other"

// sourceWork is readyline_kubelet_calls_total and the content store's
// reads; its instruments are safe for concurrent use.
type sourceWork struct {
	calls     metric.Int64Counter
	byMethod  map[rlevent.CRIMethod]metric.AddOption // built once: no attribute set per call
	other     metric.AddOption
	reads     metric.Int64Counter
	readsTime metric.Float64Counter
}

// newSourceWork creates the instruments, each method's series at 0.
func newSourceWork(meter metric.Meter) (sourceWork, error) {
	var w sourceWork
	var err error
	// readyline_kubelet_calls_total
	w.calls, err = meter.Int64Counter("readyline.kubelet.calls",
		metric.WithDescription("The kubelet's calls readyline's probes saw return, by method: its CRI client's (runtime.v1.RuntimeService/ExecSync, ...), its CSI client's (csi.v1.Node/NodePublishVolume, ...) and its in-tree volume plugins' setups (kubelet.volume.Mounter/SetUp)."))
	if err != nil {
		return w, err
	}
	// readyline_pull_progress_reads_total
	w.reads, err = meter.Int64Counter("readyline.pull_progress.reads",
		metric.WithDescription("Reads of the runtime's content store for a pull in flight, made when a question about a start in progress found one (answers given again within a second not counted)."))
	if err != nil {
		return w, err
	}
	// readyline_pull_progress_read_seconds_total
	w.readsTime, err = meter.Float64Counter("readyline.pull_progress.read", metric.WithUnit("s"),
		metric.WithDescription("Time spent in the reads of readyline_pull_progress_reads_total, waiting for the content store included."))
	if err != nil {
		return w, err
	}
	ctx := context.Background()
	w.byMethod = make(map[rlevent.CRIMethod]metric.AddOption)
	for _, m := range rlevent.CRIMethods() {
		w.byMethod[m] = metric.WithAttributeSet(attribute.NewSet(attribute.String(LabelMethod, string(m))))
		w.calls.Add(ctx, 0, w.byMethod[m]) // the series exist before the first call
	}
	w.other = metric.WithAttributeSet(attribute.NewSet(attribute.String(LabelMethod, MethodOther)))
	w.reads.Add(ctx, 0)
	w.readsTime.Add(ctx, 0)
	return w, nil
}

// CountKubeletCall counts one of the kubelet's calls of method
// (readyline_kubelet_calls_total{method}); a method outside
// rlevent.CRIMethods counts as MethodOther, so the label stays bounded.
func (m *Metrics) CountKubeletCall(method rlevent.CRIMethod) {
	opt, ok := m.work.byMethod[method]
	if !ok {
		opt = m.work.other
	}
	m.work.calls.Add(context.Background(), 1, opt)
}

// CountPullProgressRead counts one read of the runtime's content store
// that took d (readyline_pull_progress_reads_total and
// readyline_pull_progress_read_seconds_total).
func (m *Metrics) CountPullProgressRead(d time.Duration) {
	ctx := context.Background()
	m.work.reads.Add(ctx, 1)
	m.work.readsTime.Add(ctx, max(d, 0).Seconds())
}
