package collector

import (
	"reflect"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestConfigDefaults: a zero field of a source's config takes the default
// its doc comment gives when the source is made, and a set one is kept.
func TestConfigDefaults(t *testing.T) {
	w, err := NewPodWatch(PodWatchConfig{NodeName: "n", Pods: fake.NewClientset().CoreV1().Pods("")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.qlen != 1024 {
		t.Errorf("PodWatch queue %d, want 1024", w.qlen)
	}
	if got := (PodWatchConfig{QueueLength: 7}).withDefaults().QueueLength; got != 7 {
		t.Errorf("PodWatch queue %d, want the 7 set", got)
	}

	r, err := NewPodEventReader(PodEventsConfig{Events: func(string) EventLister { return nil }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.cfg.Events = nil
	if want := (PodEventsConfig{QPS: 2, Burst: 5, Timeout: 5 * time.Second}); !reflect.DeepEqual(r.cfg, want) {
		t.Errorf("PodEvents %+v, want %+v", r.cfg, want)
	}
	if set := (PodEventsConfig{QPS: 0.5, Burst: 1, Timeout: time.Second}); !reflect.DeepEqual(set.withDefaults(), set) {
		t.Errorf("PodEvents %+v, want %+v kept", set.withDefaults(), set)
	}
}
