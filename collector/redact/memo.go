package redact

import (
	"hash/maphash"
	"slices"
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

// memo remembers the redaction of long argvs by their content: what a pod
// spec's commands are for the correlator at every timeline built from the
// pod, for a recording at every update, and for the exporter at every
// export. It keeps no copy of what it read, only a 128-bit hash of it
// under seeds drawn at start (which no input can aim at), and the result:
// at most memoEntries times MaxBytes in all. The oldest entry goes first.
// It is safe for concurrent use.
type memo struct {
	seeds [2]maphash.Seed

	mu      sync.Mutex
	entries map[memoKey][]string // the result; nil when it is the argv itself
	order   [memoEntries]memoKey // oldest at next once full
	next    int

	misses atomic.Uint64 // redactions done (for tests)
}

type memoKey [2]uint64

var argvMemo = newMemo()

func newMemo() *memo {
	return &memo{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, entries: make(map[memoKey][]string, memoEntries)}
}

// redact returns what redactArgv(in, cut) does for argv, remembered.
func (m *memo) redact(argv, in []string, cut bool) []string {
	key := memoKey{hashArgv(m.seeds[0], in, cut), hashArgv(m.seeds[1], in, cut)}
	m.mu.Lock()
	out, ok := m.entries[key]
	m.mu.Unlock()
	if !ok {
		m.misses.Add(1)
		out = redactArgv(in, cut)
		if !cut && sameArgv(out, in) {
			out = nil
		}
		m.put(key, out)
	}
	if out == nil {
		return argv
	}
	return slices.Clone(out) // the caller's to keep and change
}

// hashArgv hashes the arguments with their lengths, and cut.
func hashArgv(seed maphash.Seed, argv []string, cut bool) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, a := range argv {
		maphash.WriteComparable(&h, len(a))
		h.WriteString(a)
	}
	maphash.WriteComparable(&h, cut)
	return h.Sum64()
}

func (m *memo) put(key memoKey, out []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.entries[key]; !ok {
		if len(m.entries) == memoEntries {
			delete(m.entries, m.order[m.next])
		}
		m.order[m.next] = key
		m.next = (m.next + 1) % memoEntries
	}
	m.entries[key] = out
}

// sameArgv reports whether a and b are the same slice.
func sameArgv(a, b []string) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
