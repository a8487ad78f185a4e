package collector

import "github.com/readyline/readyline/collector/event"

// procInfo is what readyline remembers of a live process.
type procInfo struct {
	filename string      // last program executed
	helper   event.Scope // ScopeRuntime or ScopeCNI for runtime helpers and their children, else ""
	exited   bool
}

// processTable remembers live processes, to name the program in exit
// events, keep a helper's children marked as helpers, and report each exit
// once. Bounded: exited entries are forgotten after maxExited later exits;
// the whole table is reset if lost exits ever fill it. Not safe for
// concurrent use.
type processTable struct {
	procs  map[uint32]*procInfo
	exited []uint32 // ring of exited pids, oldest at next
	next   int
}

const (
	maxExited = 4096
	maxProcs  = 1 << 17
)

func newProcessTable() processTable {
	return processTable{procs: make(map[uint32]*procInfo), exited: make([]uint32, 0, maxExited)}
}

func (t *processTable) put(pid uint32, info *procInfo) {
	if len(t.procs) >= maxProcs {
		clear(t.procs)
	}
	t.procs[pid] = info
}

func (t *processTable) exec(pid uint32, filename string, helper event.Scope) {
	t.put(pid, &procInfo{filename: filename, helper: helper})
}

// fork records a new process and returns the helper scope it inherits
// from its parent.
func (t *processTable) fork(pid, ppid uint32) event.Scope {
	info := &procInfo{}
	if parent, ok := t.procs[ppid]; ok {
		info.filename, info.helper = parent.filename, parent.helper
	}
	t.put(pid, info)
	return info.helper
}

// exitedProc stands for every process outside helpers whose exit was
// reported: all the table keeps of it is that, for the pre-6.16 second
// report, not its program (4096 exited processes, 0.3 MiB).
var exitedProc = &procInfo{exited: true}

// exit returns what is known of the process and whether this is the first
// report of its exit.
func (t *processTable) exit(pid uint32) (procInfo, bool) {
	info, ok := t.procs[pid]
	if ok && info.exited {
		return *info, false
	}
	var known procInfo
	if ok {
		known = *info
		known.exited = true
	}
	if known.helper != "" {
		t.put(pid, &procInfo{helper: known.helper, exited: true})
	} else {
		t.put(pid, exitedProc)
	}
	if len(t.exited) < maxExited {
		t.exited = append(t.exited, pid)
	} else {
		old := t.exited[t.next]
		if o, ok := t.procs[old]; ok && o.exited {
			delete(t.procs, old)
		}
		t.exited[t.next] = pid
		t.next = (t.next + 1) % maxExited
	}
	return known, true
}
