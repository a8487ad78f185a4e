package redact

import (
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// An argv of memoMinBytes or more (the script of a probe, as a pod spec
// holds it and as the kubelet runs it again and again) is redacted once:
// the result is remembered, for memoEntries such argvs. A shorter one is
// redacted again each time, in a few µs.
const (
	memoMinBytes = 1024
	memoEntries  = 64
)

// memo remembers the redaction of long argvs, by their content: what a
// pod spec's commands are for the correlator at every update of the pod
// and at every timeline built from it, for a recording at every update,
// and for the exporter at every export. An entry holds a copy of what was
// read (at most MaxBytes, so at most memoEntries times twice that in all)
// and is used only when that is what is asked again, byte for byte. The
// oldest entry goes first. It is safe for concurrent use.
type memo struct {
	seed maphash.Seed

	mu      sync.Mutex
	entries map[uint64]*memoEntry
	order   [memoEntries]uint64 // keys, oldest at next once full
	next    int

	misses atomic.Uint64 // redactions done (for tests)
}

type memoEntry struct {
	in  []string // what was read, copied
	cut bool
	out []string // the result; nil when it is the argv itself
}

var argvMemo = newMemo()

func newMemo() *memo {
	return &memo{seed: maphash.MakeSeed(), entries: make(map[uint64]*memoEntry, memoEntries)}
}

// redact returns what redactArgv(in, cut) does for argv, remembered.
func (m *memo) redact(argv, in []string, cut bool) []string {
	key := m.key(in, cut)
	m.mu.Lock()
	e := m.entries[key]
	m.mu.Unlock()
	if e == nil || e.cut != cut || !slices.Equal(e.in, in) {
		m.misses.Add(1)
		out := redactArgv(in, cut)
		e = &memoEntry{in: cloneArgv(in), cut: cut}
		if cut || !sameArgv(out, in) {
			e.out = cloneArgv(out)
		}
		m.put(key, e)
	}
	if e.out == nil {
		return argv
	}
	return slices.Clone(e.out) // the caller's to keep and change
}

func (m *memo) key(in []string, cut bool) uint64 {
	var h maphash.Hash
	h.SetSeed(m.seed)
	for _, a := range in {
		maphash.WriteComparable(&h, len(a))
		h.WriteString(a)
	}
	if cut {
		h.WriteByte(1)
	}
	return h.Sum64()
}

func (m *memo) put(key uint64, e *memoEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[key]; !ok {
		if len(m.entries) == memoEntries {
			delete(m.entries, m.order[m.next])
		}
		m.order[m.next] = key
		m.next = (m.next + 1) % memoEntries
	}
	m.entries[key] = e
}

// cloneArgv copies argv's strings, so that an entry keeps no larger
// string alive (a pod object's).
func cloneArgv(argv []string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.Clone(a)
	}
	return out
}

// sameArgv reports whether a and b are the same slice.
func sameArgv(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
