package collector

import (
	"errors"
	"slices"
	"testing"

	"github.com/readyline/readyline/bpf"
)

func goCallRecord(t testing.TB, hasEntry bool, str, ret string, deref [2]string, cmd []string) []byte {
	e := bpf.GoprobeGoCallEvent{Type: bpf.EventGoCall, Pid: 11, Tgid: 10, Func: 3, BootNs: 9_000_000_000, Goroutine: 0xc000001000, Err: 1}
	e.RetLen = uint32(len(ret))
	setCString(e.Ret[:], ret)
	if hasEntry {
		e.HasEntry = 1
		e.Args.StartNs = 8_500_000_000
		e.Args.StrLen = uint32(len(str))
		setCString(e.Args.Str[:], str)
		for i, d := range deref {
			e.Args.DerefLen[i] = uint32(len(d))
			setCString(e.Args.Deref[i][:], d)
		}
		e.Args.CmdN = uint32(len(cmd))
		for i, c := range cmd {
			if i < len(e.Args.Cmd) {
				setCString(e.Args.Cmd[i][:], c)
			}
		}
	}
	return encode(t, e)
}

func TestDecodeGoCall(t *testing.T) {
	id := "4c7a61d1b3bc1a20f1e8e5b8b6f0a0d5c1f2e3d4a5b6c7d8e9f0011223344556"
	rec := goCallRecord(t, true, id, "sb-1", [2]string{"main", testPodUID}, []string{"sh", "-c", "test -f /tmp/ready"})
	r, err := DecodeGoCall(rec, testClock)
	if err != nil {
		t.Fatal(err)
	}
	if r.Func != 3 || r.TGID != 10 || r.PID != 11 || !r.Err || r.Goroutine != 0xc000001000 {
		t.Errorf("header %+v", r)
	}
	if d := r.End.Sub(r.Start); d.Milliseconds() != 500 {
		t.Errorf("duration %v, want 500ms", d)
	}
	if r.Str != id || r.Ret != "sb-1" || r.Deref != [2]string{"main", testPodUID} || r.Truncated {
		t.Errorf("strings %+v", r)
	}
	if !slices.Equal(r.Cmd, []string{"sh", "-c", "test -f /tmp/ready"}) {
		t.Errorf("cmd %q", r.Cmd)
	}

	// Without the entry: no arguments, no start.
	r, err = DecodeGoCall(goCallRecord(t, false, "ignored", "x", [2]string{}, nil), testClock)
	if err != nil || !r.Start.IsZero() || r.Str != "" || r.Ret != "x" {
		t.Errorf("no entry: %+v, %v", r, err)
	}

	// A longer command than the probe keeps, and cut strings.
	long := make([]string, 9)
	for i := range long {
		long[i] = "arg"
	}
	r, _ = DecodeGoCall(goCallRecord(t, true, "", "", [2]string{}, long), testClock)
	if len(r.Cmd) != 6 || !r.Truncated {
		t.Errorf("long cmd: %d args, truncated %v", len(r.Cmd), r.Truncated)
	}
}

func TestDecodeGoCallErrors(t *testing.T) {
	rec := goCallRecord(t, true, "a", "b", [2]string{}, nil)
	if _, err := DecodeGoCall(rec[:100], testClock); !errors.Is(err, ErrShortRecord) {
		t.Errorf("short: %v", err)
	}
	rec[0] = 99
	if _, err := DecodeGoCall(rec, testClock); !errors.Is(err, ErrUnknownRecord) {
		t.Errorf("bad type: %v", err)
	}
}

func FuzzDecodeGoCall(f *testing.F) {
	f.Add(goCallRecord(f, true, "a", "b", [2]string{"c", "d"}, []string{"e"}))
	f.Add(goCallRecord(f, false, "", "", [2]string{}, nil))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		DecodeGoCall(b, testClock) // must not panic
	})
}

// TestExecSyncArgCutAt63: the README's "63 bytes of each" ExecSync
// argument. The probe copies at most 63 bytes of an argument and a NUL
// (bpf/goprobe.bpf.c, CMD_ARG_LEN - 1): an argument of 63 bytes may have
// been cut and says so, one of 62 is whole.
func TestExecSyncArgCutAt63(t *testing.T) {
	if n := len(bpf.GoprobeGoCallArgs{}.Cmd[0]) - 1; n != 63 {
		t.Fatalf("the probe keeps %d bytes of an ExecSync argument, the README says 63", n)
	}
	script := "test -f /tmp/ready && curl -fsS http://127.0.0.1:8080/healthz?verbose=1" // 71 bytes
	r, err := DecodeGoCall(goCallRecord(t, true, "", "", [2]string{}, []string{"sh", "-c", script[:63]}), testClock)
	if err != nil || r.Cmd[2] != script[:63] || !r.Truncated {
		t.Errorf("a 71-byte argument as the probe copies it: %q, truncated %v, %v; want its 63 bytes, truncated", r.Cmd, r.Truncated, err)
	}
	r, err = DecodeGoCall(goCallRecord(t, true, "", "", [2]string{}, []string{"sh", "-c", script[:62]}), testClock)
	if err != nil || r.Cmd[2] != script[:62] || r.Truncated {
		t.Errorf("a 62-byte argument: %q, truncated %v, %v; want it whole", r.Cmd, r.Truncated, err)
	}
}
