package event

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// A recording carries a pull's samples: Unmarshal knows the type and gives
// back every field, the progress's times included.
func TestPullSampleRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 6, 6, 0, 0, 123456789, time.UTC)
	ev := &PullSample{Time: at.Add(5 * time.Second), Image: "registry.local:5000/readyline/large:256mib", PodUID: "7f1c",
		CallStart: at, Progress: PullProgress{AsOf: at.Add(5 * time.Second), Bytes: 112_000_000, Total: 270_000_000,
			Layers: 7, LayersDone: 4, InProgress: 1, LastByte: at.Add(4900 * time.Millisecond)}}
	b, err := Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{`{"type":"pull_sample",`, `"call_start":"2026-12-06T06:00:00.123456789Z"`, `"layers_done":4`, `"bytes":112000000`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("%s lacks %s", b, f)
		}
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, ev) {
		t.Errorf("round trip of %s\n got  %#v\n want %#v", b, got, ev)
	}
	if got.When() != ev.Time {
		t.Errorf("When() = %v, want the sample's time %v", got.When(), ev.Time)
	}
}
