package gofunc

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// allocated returns the bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// synthFormats are defaultSynth and arm64Synth in each .gopclntab format.
func synthFormats() map[string]synthELF {
	out := map[string]synthELF{}
	for prefix, base := range map[string]synthELF{"": defaultSynth(), "arm64 ": arm64Synth()} {
		for name, magic := range map[string]uint32{"go1.20": magicGo120, "go1.18": magicGo118, "go1.16": magicGo116, "go1.2": magicGo12} {
			s := base
			s.magic = magic
			out[prefix+name] = s
		}
	}
	return out
}

// pclntabOf returns the .gopclntab of the executable at path, or of data,
// as the reader finds it.
func pclntabOf(tb testing.TB, b *Binary) ([]byte, pclnHeader) {
	tb.Helper()
	sym, _ := b.symbols(nil)
	_, data, _, err := b.findPclntab(sym)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := parsePclnHeader(data)
	if err != nil {
		tb.Fatal(err)
	}
	return data, h
}

// checkAgainstGosym compares the reader's view of a function table with
// debug/gosym's, the reference reader: same functions, same order, same
// ranges and names. It reports false when gosym read nothing of it (a
// malformed table, which gosym recovers from by returning no function).
func checkAgainstGosym(t *testing.T, data []byte, h pclnHeader) bool {
	t.Helper()
	tab := newPclnTable(data, h, 0)
	ref, err := gosym.NewTable(nil, gosym.NewLineTable(data, 0))
	if err != nil || len(ref.Funcs) != tab.nfunc() {
		return false
	}
	for i := range ref.Funcs {
		f := &ref.Funcs[i]
		name := tab.name(i)
		if tab.entry(i) != f.Entry || tab.end(i) != f.End || name == nil || string(name) != f.Name {
			t.Fatalf("function %d: %#x-%#x %q; debug/gosym says %#x-%#x %q", i, tab.entry(i), tab.end(i), name, f.Entry, f.End, f.Name)
		}
	}
	return true
}

// TestPclntabMatchesGosym reads every function of real and synthetic
// tables of each format and compares with debug/gosym (the kubelet's:
// TestIntegrationKubeletPclntab).
func TestPclntabMatchesGosym(t *testing.T) {
	for name, s := range synthFormats() {
		t.Run("synthetic "+name, func(t *testing.T) {
			data := s.bytes()
			b, err := newBinary(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			if pcln, h := pclntabOf(t, b); !checkAgainstGosym(t, pcln, h) {
				t.Fatal("debug/gosym read nothing")
			}
		})
	}
	for _, bd := range builds {
		t.Run(bd.name, func(t *testing.T) {
			if pcln, h := pclntabOf(t, open(t, crilike(t, bd))); !checkAgainstGosym(t, pcln, h) {
				t.Fatal("debug/gosym read nothing")
			}
		})
	}
}

// TestIntegrationKubeletPclntab is TestPclntabMatchesGosym on the kubelet
// deploy/node builds: make test runs it after node.sh up has built it, and
// with READYLINE_REQUIRE_NODE=1 it fails instead of skipping without it.
func TestIntegrationKubeletPclntab(t *testing.T) {
	pcln, h := pclntabOf(t, open(t, kubeletBinary(t)))
	if !checkAgainstGosym(t, pcln, h) {
		t.Fatal("debug/gosym read nothing")
	}
	t.Logf("%d functions, %d bytes", h.nfunc, len(pcln))
}

// FuzzPclntab compares the reader with debug/gosym on any table whose
// header it accepts: it must never panic, and it must agree with gosym
// wherever gosym reads the table.
func FuzzPclntab(f *testing.F) {
	for _, s := range synthFormats() {
		data := s.bytes()
		b, err := newBinary(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			f.Fatal(err)
		}
		pcln, _ := pclntabOf(f, b)
		f.Add(pcln)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parsePclnHeader(data)
		if err != nil {
			return
		}
		tab := newPclnTable(data, h, 0)
		for i := range tab.nfunc() {
			tab.name(i)
			tab.end(i)
		}
		tab.find(archAMD64.rt0)
		tab.inlinedOnly("main.f")
		tab.isAsm(0)
		checkAgainstGosym(t, data, h)
	})
}

// patchSection sets the size a section header declares.
func patchSection(tb testing.TB, data []byte, name string, size uint64) {
	tb.Helper()
	ef, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		tb.Fatal(err)
	}
	for i, s := range ef.Sections {
		if s.Name == name {
			shoff := binary.LittleEndian.Uint64(data[40:])
			binary.LittleEndian.PutUint64(data[shoff+uint64(i)*64+32:], size)
			return
		}
	}
	tb.Fatalf("no section %s", name)
}

// sparseFile writes data to a file of size bytes, the rest a hole: a
// file that claims hundreds of MiB costs its maker nothing.
func sparseFile(tb testing.TB, data []byte, size int64) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "kubelet")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Truncate(path, size); err != nil {
		tb.Fatal(err)
	}
	return path
}

const mib = 1 << 20

// TestRefusesDeclaredSizes opens executables whose headers declare a
// .gopclntab, a symbol table or section headers of hundreds of MiB, in
// files that are small or sparse: each lookup must fail (or find the
// functions elsewhere) without allocating what was declared.
func TestRefusesDeclaredSizes(t *testing.T) {
	const claim = 600 * mib
	small := func(data []byte) func(testing.TB) (*Binary, error) {
		return func(testing.TB) (*Binary, error) { return newBinary(bytes.NewReader(data), int64(len(data))) }
	}
	sparse := func(data []byte) func(testing.TB) (*Binary, error) {
		return func(tb testing.TB) (*Binary, error) { return Open(sparseFile(tb, data, claim+mib)) }
	}
	pclntab600 := defaultSynth().bytes()
	patchSection(t, pclntab600, ".gopclntab", claim)
	pclntab100 := defaultSynth().bytes()
	patchSection(t, pclntab100, ".gopclntab", 100*mib)
	md600 := mergedSynth().bytes()
	{
		ef, err := elf.NewFile(bytes.NewReader(md600))
		if err != nil {
			t.Fatal(err)
		}
		binary.LittleEndian.PutUint64(md600[ef.Progs[1].Off+8*mdPclntableLen:], claim)
	}
	manySections := defaultSynth().bytes()
	binary.LittleEndian.PutUint16(manySections[60:], 60000)
	longNames := defaultSynth().bytes()
	patchSection(t, longNames, ".shstrtab", claim)
	unstripped, err := os.ReadFile(crilike(t, builds[0]))
	if err != nil {
		t.Fatal(err)
	}
	symtab600 := bytes.Clone(unstripped)
	patchSection(t, symtab600, ".symtab", claim)
	strtab600 := bytes.Clone(unstripped)
	patchSection(t, strtab600, ".strtab", claim)

	for _, tc := range []struct {
		name  string
		open  func(testing.TB) (*Binary, error)
		want  string // in the error of Open or Lookup; "" for a lookup that succeeds
		limit uint64 // bytes it may allocate
	}{
		{".gopclntab of 600 MiB in a small file", small(pclntab600), ".gopclntab: larger than the reader's limit", mib},
		{".gopclntab of 100 MiB in a small file", small(pclntab100), "run past the end of the file", mib},
		{".gopclntab of 600 MiB in a sparse file", sparse(pclntab600), ".gopclntab: larger than the reader's limit: 629145600 bytes declared, more than 128 MiB", mib},
		{"module data saying 600 MiB", small(md600), "larger than the reader's limit", 2 * mib},
		{"60,000 section headers", sparse(manySections), "60000 section headers, more than 1024", mib},
		{"section names of 600 MiB", sparse(longNames), "section names of 629145600 bytes", mib},
		// The symbol table is refused, .gopclntab still leads to the
		// functions.
		{".symtab of 600 MiB", sparse(symtab600), "", 8 * mib},
		{".strtab of 600 MiB", sparse(strtab600), "", 8 * mib},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b *Binary
			var err error
			var fns map[string]*Func
			var errs []error
			n := allocated(func() {
				if b, err = tc.open(t); err != nil {
					return
				}
				defer b.Close()
				fns, errs = b.Lookup("main.f", "main.(*remoteRuntimeService).RunPodSandbox")
				if len(errs) > 1 { // a name of the other binary
					err = errs[0]
				}
			})
			switch {
			case tc.want == "" && (err != nil || len(fns) != 1):
				t.Errorf("lookup: %v; found %d functions, want 1", err, len(fns))
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one saying %q", err, tc.want)
			case tc.want != "" && strings.Contains(tc.want, "limit") && !errors.Is(err, ErrTooLarge):
				t.Errorf("error %v, want ErrTooLarge", err)
			}
			if n > tc.limit {
				t.Errorf("allocated %d bytes, want at most %d", n, tc.limit)
			}
			t.Logf("%v; allocated %d KiB", err, n>>10)
		})
	}
}

// TestManyFunctionsOfOneName: a table of 1M functions that all share one
// record (after the runtime's entry points, which tell where Go text
// starts), which debug/gosym turned into 152 MB of Funcs and Syms from 8 MB,
// costs the table and no more.
func TestManyFunctionsOfOneName(t *testing.T) {
	s := defaultSynth()
	data := s.bytes()
	b, err := newBinary(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	pcln, h := pclntabOf(t, b)
	le := binary.LittleEndian
	const n = 1 << 20
	hdr := bytes.Clone(pcln[:h.functabOf])
	le.PutUint64(hdr[8:], n+2)
	functab := make([]byte, (2*(n+2)+1)*4)
	var records []byte
	record := func(name string) uint32 {
		off := uint32(len(functab) + len(records))
		rec := make([]byte, 44)
		le.PutUint32(rec[4:], uint32(strings.Index(string(pcln[h.funcnameOf:]), name+"\x00")))
		records = append(records, rec...)
		return off
	}
	put := func(i int, entry, rec uint32) {
		le.PutUint32(functab[8*i:], entry)
		le.PutUint32(functab[8*i+4:], rec)
	}
	put(0, 0, record(archAMD64.rt0))
	put(1, synthAlign, record(archAMD64.rt0Arch))
	f := record("main.f")
	for i := range n {
		put(2+i, uint32(2*synthAlign+i), f)
	}
	le.PutUint32(functab[8*(n+2):], n+2*synthAlign)
	s.rawPcln = append(append(hdr, functab...), records...)
	data = s.bytes()
	var errs []error
	got := allocated(func() {
		b, err := newBinary(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		_, errs = b.Lookup("main.f")
		b.Close()
	})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "more than 4 functions of that name") {
		t.Errorf("lookup: %v, want one error: too many functions named main.f", errs)
	}
	if limit := uint64(len(s.rawPcln)) + 2*mib; got > limit {
		t.Errorf("allocated %d bytes for a %d-byte table, want at most %d", got, len(s.rawPcln), limit)
	}
	t.Logf("%d functions in %d bytes: %v; allocated %d KiB", n, len(s.rawPcln), errs, got>>10)
}
