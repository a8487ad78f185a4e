package collector

import (
	"testing"

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

}
