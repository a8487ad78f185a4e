package collector

import (
	"slices"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// TestNodeSources: the sources that loaded run, under their names, with
// their rings; each refused one is a Down load_failed instead.
func TestNodeSources(t *testing.T) {
	names := func(sources []Source) (out []string) {
		for _, s := range sources {
			out = append(out, s.Name())
		}
		return out
	}
	pace := NewPace()
	all := NodeSources{Process: &ProcessSource{}, Runtime: &RuntimeSource{}, Pods: &PodWatch{}, Calls: &KubeletCallSource{}, TCP: &TCPSource{}, Pace: pace}
	want := []string{event.SourceProcess, event.SourceRuntime, event.SourcePodWatch, event.SourceKubeletCalls, event.SourceTCP}
	if got := names(all.Sources()); !slices.Equal(got, want) {
		t.Errorf("all loaded: sources %v, want %v", got, want)
	}
	if all.Process.ring.pace != pace || all.Calls.ring.pace != pace || all.TCP.ring.pace != pace || all.Runtime.pace != pace {
		t.Error("a source is not paced by NodeSources.Pace")
	}
	if got := all.Refused(time.Now()); len(got) != 0 {
		t.Errorf("all loaded: refused %v, want none", got)
	}
	for _, s := range all.Sources() {
		_, ok := s.Ring()
		if kernel := s.Name() != event.SourceRuntime && s.Name() != event.SourcePodWatch; ok != kernel {
			t.Errorf("%s: has a ring %v, want %v", s.Name(), ok, kernel)
		}
	}

	none := NodeSources{Process: &ProcessSource{}, Runtime: &RuntimeSource{}, Pods: &PodWatch{}}
	want = want[:3]
	if got := names(none.Sources()); !slices.Equal(got, want) {
		t.Errorf("calls and tcp refused: sources %v, want %v", got, want)
	}
	now := time.Now()
	var refused []string
	for _, ev := range none.Refused(now) {
		st := ev.(*event.SourceStatus)
		if st.Up || st.Reason != event.ReasonLoadFailed || !st.Time.Equal(now) {
			t.Errorf("refused %s: %+v, want a Down load_failed at %v", st.Source, st, now)
		}
		refused = append(refused, st.Source)
	}
	if want := []string{event.SourceKubeletCalls, event.SourceTCP}; !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
}
