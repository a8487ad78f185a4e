package exporter

import (
	"testing"
	"time"

	rlevent "github.com/readyline/readyline/collector/event"
)

// TestMetricsKubeletCalls: readyline_kubelet_calls_total has a series per
// known method from the start, at 0; each call counts under its method,
// and a method readyline has no constant for under "other".
func TestMetricsKubeletCalls(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	const family = "readyline_kubelet_calls_total"
	mfs := scrape(t, m.Handler(nil))
	if n := len(mfs[family].GetMetric()); n != len(rlevent.CRIMethods()) {
		t.Errorf("%d series before any call, want one per method (%d)", n, len(rlevent.CRIMethods()))
	}
	for range 3 {
		m.CountKubeletCall(rlevent.CRIExecSync)
	}
	m.CountKubeletCall(rlevent.VolumeSetUp)
	m.CountKubeletCall("runtime.v1.RuntimeService/UpdateContainerResources")
	mfs = scrape(t, m.Handler(nil))
	for method, want := range map[string]float64{
		string(rlevent.CRIExecSync):          3,
		string(rlevent.VolumeSetUp):          1,
		string(rlevent.CSINodePublishVolume): 0,
		MethodOther:                          1,
	} {
		if v := series(t, mfs, family, map[string]string{LabelMethod: method}).GetCounter().GetValue(); v != want {
			t.Errorf("%s{method=%q} = %v, want %v", family, method, v, want)
		}
	}
	if n := len(mfs[family].GetMetric()); n != len(rlevent.CRIMethods())+1 {
		t.Errorf("%d series, want the %d methods and other", n, len(rlevent.CRIMethods()))
	}
}

// TestMetricsPullProgressReads: each read counts once, with its time.
func TestMetricsPullProgressReads(t *testing.T) {
	m, err := NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	mfs := scrape(t, m.Handler(nil))
	if v := series(t, mfs, "readyline_pull_progress_reads_total", map[string]string{}).GetCounter().GetValue(); v != 0 {
		t.Errorf("reads before any = %v", v)
	}
	m.CountPullProgressRead(20 * time.Millisecond)
	m.CountPullProgressRead(5 * time.Millisecond)
	mfs = scrape(t, m.Handler(nil))
	if v := series(t, mfs, "readyline_pull_progress_reads_total", map[string]string{}).GetCounter().GetValue(); v != 2 {
		t.Errorf("reads = %v, want 2", v)
	}
	if v := series(t, mfs, "readyline_pull_progress_read_seconds_total", map[string]string{}).GetCounter().GetValue(); !near(v, 0.025) {
		t.Errorf("read seconds = %v, want 0.025", v)
	}
}
