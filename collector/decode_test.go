package collector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

var testClock = BootClock{Offset: time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC).UnixNano()}

func setCString(dst []int8, s string) {
	for i := 0; i < len(s) && i < len(dst); i++ {
		dst[i] = int8(s[i])
	}
}

func header(typ uint32) bpf.ProcessEventHeader {
	h := bpf.ProcessEventHeader{Type: typ, Pid: 101, Tgid: 100, Ppid: 1, BootNs: 5_000_000_123, CgroupId: 4242}
	setCString(h.Comm[:], "sh")
	return h
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func execRecord(t testing.TB, filename string, argv []byte, fullLen uint32) []byte {
	e := bpf.ProcessExecEvent{Hdr: header(bpf.EventExec), ArgvLen: uint32(len(argv)), ArgvFullLen: fullLen}
	setCString(e.Filename[:], filename)
	for i, c := range argv {
		e.Argv[i] = int8(c)
	}
	return encode(t, e)
}

func exitRecord(t testing.TB, status uint32) []byte {
	return encode(t, bpf.ProcessExitEvent{Hdr: header(bpf.EventExit), ExitCode: status})
}

func TestDecodeProcessEvent(t *testing.T) {
	at := testClock.Time(5_000_000_123)
	proc := event.Process{PID: 100, PPID: 1, Comm: "sh", CgroupID: 4242}
	tests := []struct {
		name string
		rec  []byte
		want event.Event
	}{{
		name: "exec with argv",
		rec:  execRecord(t, "/bin/sh", []byte("sh\x00-c\x00sleep 0.1; exit 3\x00"), 23),
		want: &event.ProcessExec{Time: at, Process: proc, Filename: "/bin/sh",
			Argv: []string{"sh", "-c", "sleep 0.1; exit 3"}},
	}, {
		name: "exec with an empty argument",
		rec:  execRecord(t, "/bin/sh", []byte("sh\x00-c\x00\x00"), 7),
		want: &event.ProcessExec{Time: at, Process: proc, Filename: "/bin/sh", Argv: []string{"sh", "-c", ""}},
	}, {
		name: "exec with truncated argv",
		rec:  execRecord(t, "/bin/echo", []byte("echo\x00aaaa"), 4096),
		want: &event.ProcessExec{Time: at, Process: proc, Filename: "/bin/echo",
			Argv: []string{"echo", "aaaa"}, ArgvTruncated: true},
	}, {
		name: "exec without argv",
		rec:  execRecord(t, "/bin/x", nil, 0),
		want: &event.ProcessExec{Time: at, Process: proc, Filename: "/bin/x"},
	}, {
		name: "exit with status 3",
		rec:  exitRecord(t, 3<<8),
		want: &event.ProcessExit{Time: at, Process: proc, ExitCode: 3},
	}, {
		name: "killed by SIGKILL",
		rec:  exitRecord(t, 9),
		want: &event.ProcessExit{Time: at, Process: proc, Signal: 9},
	}, {
		name: "SIGSEGV with core dump",
		rec:  exitRecord(t, 11|0x80),
		want: &event.ProcessExit{Time: at, Process: proc, Signal: 11, CoreDumped: true},
	}, {
		name: "fork",
		rec:  encode(t, bpf.ProcessForkEvent{Hdr: header(bpf.EventFork)}),
		want: &event.ProcessFork{Time: at, Process: proc},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeProcessEvent(tt.rec, testClock)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestDecodeProcessEventErrors(t *testing.T) {
	exec := execRecord(t, "/bin/sh", nil, 0)
	tests := []struct {
		name string
		rec  []byte
		want error
	}{
		{"empty", nil, ErrShortRecord},
		{"short header", make([]byte, 10), ErrShortRecord},
		{"short exec", exec[:len(exec)-1], ErrShortRecord},
		{"short exit", exitRecord(t, 0)[:hdrSize+2], ErrShortRecord},
		{"unknown type", encode(t, header(77)), ErrUnknownRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeProcessEvent(tt.rec, testClock); !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestDecodeArgvLengthBeyondBuffer(t *testing.T) {
	// A corrupt argv_len larger than the array must not read past it.
	rec := execRecord(t, "/bin/sh", []byte("sh\x00"), 3)
	binaryPutUint32(rec[offArgvLen:], 1<<20)
	ev, err := DecodeProcessEvent(rec, testClock)
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.(*event.ProcessExec).Argv; len(got) != 1 || got[0] != "sh" {
		t.Fatalf("argv %q", got)
	}
}

func binaryPutUint32(b []byte, v uint32) { binary.LittleEndian.PutUint32(b, v) }

func FuzzDecodeProcessEvent(f *testing.F) {
	f.Add(execRecord(f, "/bin/sh", []byte("sh\x00-c\x00exit 3\x00"), 13))
	f.Add(exitRecord(f, 3<<8))
	f.Add(encode(f, bpf.ProcessForkEvent{Hdr: header(bpf.EventFork)}))
	f.Add([]byte{})
	f.Add(make([]byte, hdrSize))
	f.Add(cgroupRecord(f, 4, "c", "pod1", "besteffort", "kubepods"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := DecodeProcessEvent(b, testClock)
		if err == nil && ev == nil {
			t.Fatal("nil event without error")
		}
		if err == nil {
			if _, err := event.Marshal(ev); err != nil {
				t.Fatalf("decoded event does not encode: %v", err)
			}
		}
	})
}

func BenchmarkDecodeProcessEvent(b *testing.B) {
	rec := execRecord(b, "/usr/bin/sleep", []byte("sleep\x003600\x00"), 11)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeProcessEvent(rec, testClock); err != nil {
			b.Fatal(err)
		}
	}
}

func cgroupRecord(t testing.TB, level uint32, names ...string) []byte {
	e := bpf.ProcessCgroupEvent{Hdr: header(bpf.EventCgroupName), Level: level}
	for i, n := range names {
		setCString(e.Names[i][:], n)
	}
	return encode(t, e)
}

func TestDecodeCgroupName(t *testing.T) {
	if cgroupLevels != 4 {
		t.Errorf("the kernel names a cgroup by its last %d path components, the README says four", cgroupLevels)
	}
	const cid = "8d3e5f7a9b1c2d4e6f8a0b1c3d5e7f9a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e"
	tests := []struct {
		name  string
		rec   []byte
		path  string
		attrs CgroupAttribution
	}{
		{"root", cgroupRecord(t, 0), "/", CgroupAttribution{}},
		{"cgroupfs container, whole path", cgroupRecord(t, 4, cid, "pod"+testPodUID, "besteffort", "kubepods"),
			"/kubepods/besteffort/pod" + testPodUID + "/" + cid, CgroupAttribution{PodUID: testPodUID, ContainerID: cid}},
		{"deeper than the names", cgroupRecord(t, 6, "cri-containerd-"+cid+".scope", "kubelet-kubepods-besteffort-pod"+testPodUIDUnderscores+".slice", "kubelet-kubepods-besteffort.slice", "kubelet-kubepods.slice"),
			"/.../kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + testPodUIDUnderscores + ".slice/cri-containerd-" + cid + ".scope",
			CgroupAttribution{PodUID: testPodUID, ContainerID: cid}},
		{"shallow", cgroupRecord(t, 1, "system.slice"), "/system.slice", CgroupAttribution{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := DecodeProcessEvent(tt.rec, testClock)
			if err != nil {
				t.Fatal(err)
			}
			cn, ok := ev.(*CgroupName)
			if !ok || cn.CgroupID != 4242 {
				t.Fatalf("got %#v", ev)
			}
			if got := cn.Path(); got != tt.path {
				t.Errorf("Path() = %q, want %q", got, tt.path)
			}
			if got := ParseCgroupPath(cn.Path()); got != tt.attrs {
				t.Errorf("attribution %+v, want %+v", got, tt.attrs)
			}
		})
	}
}
