package collector

import (
	"testing"

	"github.com/readyline/readyline/collector/event"
)

func TestProcessTableReportsEachExitOnce(t *testing.T) {
	pt := newProcessTable()
	pt.exec(10, "/bin/sh", event.ScopeHost)
	if info, first := pt.exit(10); !first || info.filename != "/bin/sh" {
		t.Fatalf("first exit: %+v %v", info, first)
	}
	if _, first := pt.exit(10); first {
		t.Fatal("second exit of the same process reported as first")
	}
	if p := pt.procs[10]; p.filename != "" {
		t.Errorf("an exited process still holds its program %q", p.filename)
	}
	// PID reuse: a new process with the same pid exits again.
	pt.fork(10, 1)
	if _, first := pt.exit(10); !first {
		t.Fatal("exit after pid reuse not reported")
	}
}

func TestProcessTableHelperChildren(t *testing.T) {
	pt := newProcessTable()
	pt.exec(20, "/usr/bin/runc", event.ScopeRuntime)
	if pt.fork(21, 20) != event.ScopeRuntime {
		t.Fatal("child of a runtime helper is not a helper")
	}
	pt.exit(20)
	if pt.fork(22, 20) != event.ScopeRuntime {
		t.Fatal("child of a runtime helper reported after its exit is not a helper")
	}
	if pt.fork(31, 30) != "" {
		t.Fatal("child of an unknown process is a helper")
	}
}

func TestProcessTableIsBounded(t *testing.T) {
	pt := newProcessTable()
	for pid := uint32(1); pid <= 3*maxExited; pid++ {
		pt.exec(pid, "/bin/true", event.ScopeHost)
		pt.exit(pid)
	}
	if n := len(pt.procs); n > maxExited {
		t.Fatalf("%d entries after %d exits, want at most %d", n, 3*maxExited, maxExited)
	}
}
