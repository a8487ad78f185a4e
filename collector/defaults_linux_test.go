package collector

import (
	"testing"
	"time"
)

// TestKubeletCallConfigDefaults: a zero KubeletCallConfig takes the
// defaults its doc comments give.
func TestKubeletCallConfigDefaults(t *testing.T) {
	kc := KubeletCallConfig{}.withDefaults()
	if kc.ProcRoot != "/proc" || kc.Rescan != 2*time.Second || kc.target != &kubeletTarget ||
		kc.RingBufferBytes != DefaultKubeletCallsRingBytes || kc.MaxCallsInFlight != DefaultKubeletCallsInFlight {
		t.Errorf("KubeletCall %+v, want the documented defaults", kc)
	}
}
