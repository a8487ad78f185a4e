package collector

import (
	"reflect"
	"testing"
)

// TestLinuxConfigDefaults: the eBPF sources' configs, as TestConfigDefaults
// (their constructors load programs: withDefaults is what they apply).
func TestLinuxConfigDefaults(t *testing.T) {
	if got, want := (TCPConfig{}).withDefaults(), (TCPConfig{RingBufferBytes: DefaultTCPRingBytes, MaxConnections: DefaultTCPMaxConnections}); got != want {
		t.Errorf("TCP %+v, want %+v", got, want)
	}
	if set := (TCPConfig{RingBufferBytes: 4096, MaxConnections: 3}); set.withDefaults() != set {
		t.Errorf("TCP %+v, want %+v kept", set.withDefaults(), set)
	}
	if got, want := (ProcessConfig{}).withDefaults(), (ProcessConfig{RingBufferBytes: DefaultProcessRingBytes, CNIBinDirs: DefaultCNIBinDirs}); !reflect.DeepEqual(got, want) {
		t.Errorf("Process %+v, want %+v", got, want)
	}
	if set := (ProcessConfig{RingBufferBytes: 4096, CNIBinDirs: []string{}}); !reflect.DeepEqual(set.withDefaults(), set) {
		t.Errorf("Process %+v, want %+v kept (an empty CNIBinDirs is no directory, not the default)", set.withDefaults(), set)
	}
}
