package event

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMarshalRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 0, 0, 123456789, time.UTC)
	proc := Process{PID: 7, PPID: 1, Comm: "sh", CgroupID: 99, Cgroup: "/kubepods/besteffort/podx/abc",
		ContainerID: "abc", PodUID: "x", Scope: ScopePod}
	for _, ev := range []Event{
		&ProcessExec{Time: at, Process: proc, Filename: "/bin/sh", Argv: []string{"sh", "-c", "exit 3"}},
		&ProcessExit{Time: at, Process: proc, Filename: "/bin/sh", ExitCode: 3},
		&ProcessExit{Time: at, Process: proc, Signal: 9},
		&ProcessFork{Time: at, Process: proc},
	} {
		b, err := Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"type":"`+string(ev.Type())+`",`) {
			t.Errorf("encoding does not start with its type: %s", b)
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("round trip of %s\n got  %#v\n want %#v", b, got, ev)
		}
	}
}

func TestMarshalExitAlwaysHasCodeAndSignal(t *testing.T) {
	b, _ := Marshal(&ProcessExit{})
	for _, f := range []string{`"exit_code":0`, `"signal":0`, `"time":"`, `"pid":0`, `"cgroup_id":0`} {
		if !strings.Contains(string(b), f) {
			t.Errorf("%s lacks %s", b, f)
		}
	}
}

func TestUnmarshalErrors(t *testing.T) {
	if _, err := Unmarshal([]byte(`{"type":"nope"}`)); !errors.Is(err, ErrUnknownType) {
		t.Errorf("unknown type: %v", err)
	}
	if _, err := Unmarshal([]byte(`{"type":`)); err == nil {
		t.Error("truncated JSON decoded")
	}
	if _, err := Unmarshal([]byte(`{"type":"exec","pid":"x"}`)); err == nil {
		t.Error("bad field decoded")
	}
}
