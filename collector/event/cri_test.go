package event

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCRIMethodShort(t *testing.T) {
	for m, want := range map[CRIMethod]string{
		CRIRunPodSandbox: "RunPodSandbox",
		CRIExecSync:      "ExecSync",
		CRIPullImage:     "PullImage",
		"runtime.v1alpha2.RuntimeService/Version": "Version",
		"nonsense": "",
	} {
		if got := m.Short(); got != want {
			t.Errorf("%q.Short() = %q, want %q", m, got, want)
		}
	}
}

// A recording carries the method as the plain gRPC string.
func TestCRICallMethodEncoding(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)
	ev := &CRICall{Time: at, End: at.Add(time.Millisecond), Method: CRIPullImage, PID: 42, Image: "busybox", ImageSize: 4_300_000}
	b, err := Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"method":"runtime.v1.ImageService/PullImage"`) || !strings.Contains(string(b), `"image_size":4300000`) {
		t.Errorf("encoding lacks the method string or the size: %s", b)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	if !reflect.DeepEqual(got, ev) {
		t.Errorf("round trip of %s\n got  %#v\n want %#v", b, got, ev)
	}
}
