package podtrace

import "testing"

// TestTraceIDForPod: a UUID is its own trace id, with or without dashes;
// another UID hashes to a stable id.
func TestTraceIDForPod(t *testing.T) {
	const uid = "7c0e4f3a-9b1d-4e2f-8a6b-3c5d7e9f1a2b"
	for _, in := range []string{uid, "7c0e4f3a9b1d4e2f8a6b3c5d7e9f1a2b"} {
		if got := TraceIDForPod(in).String(); got != "7c0e4f3a9b1d4e2f8a6b3c5d7e9f1a2b" {
			t.Errorf("TraceIDForPod(%q) = %s, want the UUID's bytes", in, got)
		}
	}
	if a, b := TraceIDForPod("static-etcd"), TraceIDForPod("static-etcd"); a != b || a == (TraceID{}) {
		t.Errorf("a UID that is no UUID: %s then %s, want one valid id", a, b)
	}
}

// TestParseTraceParentReason: the ids of a valid value, and the reason
// alone for an invalid one (the waterfalls write it after "ignored: ").
func TestParseTraceParentReason(t *testing.T) {
	tp, err := ParseTraceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if err != nil || tp.TraceID.String() != "4bf92f3577b34da6a3ce929d0e0e4736" || tp.SpanID.String() != "00f067aa0ba902b7" || tp.Flags != 1 {
		t.Errorf("valid value: %+v, %v", tp, err)
	}
	if _, err := ParseTraceParent("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"); err == nil || err.Error() != "version ff is forbidden" {
		t.Errorf("version ff: %v, want the reason alone", err)
	}
}
