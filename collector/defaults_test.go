package collector

import (
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

	rt := RuntimeConfig{}.withDefaults()
	if rt.PollInterval != time.Second || rt.ResyncInterval != 10*time.Second || rt.CallTimeout != 2*time.Second ||
		rt.RetryInterval != time.Second || rt.CacheSize != 4096 || rt.RemovedTTL != 10*time.Minute {
		t.Errorf("Runtime %+v, want the documented defaults", rt)
	}
	if set := (RuntimeConfig{PollInterval: 3, ResyncInterval: 4, CallTimeout: 5, RetryInterval: 6, CacheSize: 7, RemovedTTL: 8}); set.withDefaults() != set {
		t.Errorf("Runtime %+v, want %+v kept", set.withDefaults(), set)
	}
}
