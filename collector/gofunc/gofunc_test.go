package gofunc

import (
	"bytes"
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// crilikeMethods are the methods of testdata/crilike, shaped like the
// kubelet's CRI client methods.
var crilikeMethods = []string{
	"main.(*remoteRuntimeService).RunPodSandbox",
	"main.(*remoteRuntimeService).StopPodSandbox",
	"main.(*remoteRuntimeService).RemovePodSandbox",
	"main.(*remoteRuntimeService).CreateContainer",
	"main.(*remoteRuntimeService).createContainerV1",
	"main.(*remoteRuntimeService).StartContainer",
	"main.(*remoteRuntimeService).StopContainer",
	"main.(*remoteRuntimeService).RemoveContainer",
	"main.(*remoteRuntimeService).ExecSync",
	"main.(*remoteRuntimeService).execSyncV1",
	"main.(*remoteRuntimeService).ContainerStatus",
	"main.(*remoteRuntimeService).PodSandboxStatus",
	"main.(*remoteRuntimeService).ListContainers",
	"main.(*remoteImageService).PullImage",
	"main.(*remoteImageService).pullImageV1",
}

// build is one way of building testdata/crilike.
type build struct {
	name    string
	goarch  string   // amd64 or arm64
	args    []string // go build flags
	cgo     bool     // external linking needs cgo and a C toolchain
	objcopy []string // objcopy arguments applied after the build
	pie     bool
	symtab  bool // keeps its symbol table
	// ref names the unstripped build with the same text layout, whose
	// symbol table says where each function is.
	ref string
}

var builds = []build{
	{name: "unstripped", goarch: "amd64", symtab: true, ref: "unstripped"},
	{name: "stripped", goarch: "amd64", args: []string{"-ldflags=-s -w"}, ref: "unstripped"},
	{name: "pie-unstripped", goarch: "amd64", args: []string{"-buildmode=pie"}, pie: true, symtab: true, ref: "pie-unstripped"},
	{name: "pie-stripped", goarch: "amd64", args: []string{"-buildmode=pie", "-ldflags=-s -w"}, pie: true, ref: "pie-unstripped"},
	// External linkers put C start-up code before the Go text, so
	// runtime.text is not where .text starts: the module data path.
	{name: "pie-external-unstripped", goarch: "amd64", args: []string{"-buildmode=pie", "-ldflags=-linkmode=external"}, cgo: true, pie: true, symtab: true,
		ref: "pie-external-unstripped"},
	{name: "pie-external-stripped", goarch: "amd64", args: []string{"-buildmode=pie", "-ldflags=-s -w -linkmode=external"}, cgo: true, pie: true,
		ref: "pie-external-unstripped"},
	// lld merges the table into .data.rel.ro, leaving no section named
	// .gopclntab (release docker CLIs look like that): only the module
	// data leads to it. Renaming the section makes such a binary here,
	// where the toolchain has no lld.
	{name: "pie-external-stripped-merged", goarch: "amd64", args: []string{"-buildmode=pie", "-ldflags=-s -w -linkmode=external"}, cgo: true, pie: true,
		objcopy: []string{"--rename-section", ".gopclntab=.data.rel.ro.gopclntab"}, ref: "pie-external-unstripped"},
	// linux/arm64, cross-built: internal linking only, as external
	// linking would need an arm64 C toolchain.
	{name: "arm64-unstripped", goarch: "arm64", symtab: true, ref: "arm64-unstripped"},
	{name: "arm64-stripped", goarch: "arm64", args: []string{"-ldflags=-s -w"}, ref: "arm64-unstripped"},
	{name: "arm64-pie-unstripped", goarch: "arm64", args: []string{"-buildmode=pie"}, pie: true, symtab: true, ref: "arm64-pie-unstripped"},
	{name: "arm64-pie-stripped", goarch: "arm64", args: []string{"-buildmode=pie", "-ldflags=-s -w"}, pie: true, ref: "arm64-pie-unstripped"},
}

// buildNamed returns the build of that name.
func buildNamed(tb testing.TB, name string) build {
	tb.Helper()
	i := slices.IndexFunc(builds, func(bd build) bool { return bd.name == name })
	if i < 0 {
		tb.Fatalf("no build %q", name)
	}
	return builds[i]
}

var (
	buildDir  string
	buildOnce sync.Map // build name -> *onceBuild
)

type onceBuild struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gofunc-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	buildDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// crilike builds testdata/crilike the given way, once per test binary, and
// returns the executable's path. A build needing a C toolchain is skipped
// without one; any other build failure fails the test.
func crilike(tb testing.TB, bd build) string {
	tb.Helper()
	v, _ := buildOnce.LoadOrStore(bd.name, &onceBuild{})
	ob := v.(*onceBuild)
	ob.once.Do(func() {
		if bd.cgo {
			if _, err := exec.LookPath("gcc"); err != nil {
				ob.err = fmt.Errorf("skip: no C toolchain for external linking: %w", err)
				return
			}
		}
		if bd.objcopy != nil {
			if _, err := exec.LookPath("objcopy"); err != nil {
				ob.err = fmt.Errorf("skip: no objcopy (binutils): %w", err)
				return
			}
		}
		ob.path = filepath.Join(buildDir, "crilike-"+bd.name)
		args := append([]string{"build", "-o", ob.path}, bd.args...)
		cmd := exec.Command("go", append(args, ".")...)
		cmd.Dir = "testdata/crilike"
		cmd.Env = append(os.Environ(), "GOFLAGS=", "GOARCH="+bd.goarch, "GOOS=linux", "CGO_ENABLED="+map[bool]string{true: "1", false: "0"}[bd.cgo])
		if out, err := cmd.CombinedOutput(); err != nil {
			ob.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		if bd.objcopy != nil {
			args := append(slices.Clone(bd.objcopy), ob.path)
			if out, err := exec.Command("objcopy", args...).CombinedOutput(); err != nil {
				ob.err = fmt.Errorf("objcopy %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	if ob.err != nil {
		if strings.HasPrefix(ob.err.Error(), "skip: ") {
			tb.Skip(ob.err)
		}
		tb.Fatal(ob.err)
	}
	return ob.path
}

// symtabFuncs returns the unstripped build's FUNC symbols with a size.
func symtabFuncs(t *testing.T, path string) map[string]elf.Symbol {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]elf.Symbol{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			out[s.Name] = s
		}
	}
	return out
}

func open(tb testing.TB, path string) *Binary {
	tb.Helper()
	b, err := Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { b.Close() })
	return b
}

func mustLookup(t *testing.T, b *Binary, names ...string) map[string]*Func {
	t.Helper()
	fns, errs := b.Lookup(names...)
	for _, err := range errs {
		t.Error(err)
	}
	return fns
}

// plainBuilds are the unstripped, non-PIE builds of each architecture.
var plainBuilds = map[string]string{"amd64": "unstripped", "arm64": "arm64-unstripped"}

func TestLookupCrilike(t *testing.T) {
	for _, bd := range builds {
		t.Run(bd.name, func(t *testing.T) {
			path := crilike(t, bd)
			refPath := crilike(t, buildNamed(t, bd.ref))
			ref, refGosym := symtabFuncs(t, refPath), gosymEntries(t, refPath)
			plain := mustLookup(t, open(t, crilike(t, buildNamed(t, plainBuilds[bd.goarch]))), crilikeMethods...)
			b := open(t, path)
			if b.Arch() != bd.goarch {
				t.Errorf("Arch() = %q, want %q", b.Arch(), bd.goarch)
			}
			fns := mustLookup(t, b, crilikeMethods...)
			if len(fns) != len(crilikeMethods) {
				t.Fatalf("found %d of %d functions", len(fns), len(crilikeMethods))
			}
			wantSource := map[bool]string{true: ".symtab", false: ".gopclntab"}[bd.symtab]
			for _, name := range crilikeMethods {
				fn := fns[name]
				if fn.Name != name || fn.Source != wantSource {
					t.Errorf("%s: got name %q from %s, want from %s", name, fn.Name, fn.Source, wantSource)
				}
				s := ref[name]
				if end := symbolEnd(t, refPath, s); fn.Entry != s.Value || fn.End != end {
					t.Errorf("%s: %#x-%#x, symbol table of %s says %#x-%#x", name, fn.Entry, fn.End, bd.ref, s.Value, end)
				}
				if fn.Entry != refGosym[name] {
					t.Errorf("%s: entry %#x, debug/gosym on %s says %#x", name, fn.Entry, bd.ref, refGosym[name])
				}
				// The code does not depend on where it is linked: same
				// size and RETs in every build of an architecture.
				if r := plain[name]; r != nil && (fn.Size() != r.Size() || !slices.Equal(fn.RetOffsets, r.RetOffsets)) {
					t.Errorf("%s: size %d, RETs %v; unstripped build: size %d, RETs %v", name, fn.Size(), fn.RetOffsets, r.Size(), r.RetOffsets)
				}
				checkFunc(t, path, fn)
			}
			checkAgainstObjdump(t, path, fns)
		})
	}
}

// symbolEnd is where the symbol table of the executable at path says s
// ends; on arm64, whose assembler pads a function's own code to 16 bytes
// with zero words, before that padding.
func symbolEnd(t *testing.T, path string, s elf.Symbol) uint64 {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	if ef.Machine != elf.EM_AARCH64 {
		return s.Value + s.Size
	}
	text := ef.Section(".text")
	code := make([]byte, s.Size)
	if _, err := text.ReadAt(code, int64(s.Value-text.Addr)); err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	end := len(code)
	for end >= 4 && binary.LittleEndian.Uint32(code[end-4:]) == 0 {
		end -= 4
	}
	if len(code)-end >= 16 {
		t.Errorf("%s: %d zero bytes at its end, more than alignment padding", s.Name, len(code)-end)
	}
	return s.Value + uint64(end)
}

// gosymEntries returns the entry of every function debug/gosym finds in
// the .gopclntab of the unstripped executable at path (the first, for a
// name that has two).
func gosymEntries(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	pcln, err := ef.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	syms, err := ef.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(syms, func(s elf.Symbol) bool { return s.Name == symText })
	if i < 0 {
		t.Fatalf("%s: no %s symbol", path, symText)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, syms[i].Value))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]uint64, len(tab.Funcs))
	for _, f := range tab.Funcs {
		if _, dup := out[f.Name]; !dup {
			out[f.Name] = f.Entry
		}
	}
	return out
}

// checkFunc checks fn against the file by another route than the package's:
// through the section headers instead of the program headers.
func checkFunc(t *testing.T, path string, fn *Func) {
	t.Helper()
	if len(fn.RetOffsets) == 0 || !slices.IsSorted(fn.RetOffsets) {
		t.Errorf("%s: RET offsets %v: want some, increasing", fn.Name, fn.RetOffsets)
	}
	if fn.End <= fn.Entry {
		t.Fatalf("%s: empty range %#x-%#x", fn.Name, fn.Entry, fn.End)
	}
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	if text == nil {
		t.Fatal("no .text section")
	}
	if fn.Entry < text.Addr || fn.End > text.Addr+text.Size {
		t.Fatalf("%s: %#x-%#x outside .text %#x-%#x", fn.Name, fn.Entry, fn.End, text.Addr, text.Addr+text.Size)
	}
	viaSection := make([]byte, fn.Size())
	if _, err := text.ReadAt(viaSection, int64(fn.Entry-text.Addr)); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	viaOffset := make([]byte, fn.Size())
	if _, err := file.ReadAt(viaOffset, int64(fn.EntryOffset)); err != nil {
		t.Fatalf("%s: reading %d bytes at file offset %#x: %v", fn.Name, fn.Size(), fn.EntryOffset, err)
	}
	if !bytes.Equal(viaOffset, viaSection) {
		t.Errorf("%s: bytes at file offset %#x differ from the code at %#x", fn.Name, fn.EntryOffset, fn.Entry)
	}
	for i, off := range fn.RetFileOffsets() {
		if fn.RetOffsets[i] >= fn.Size() {
			t.Errorf("%s: RET at +%#x outside the function (%d bytes)", fn.Name, fn.RetOffsets[i], fn.Size())
			continue
		}
		if inst, ok := decodeRet(ef.Machine, viaOffset[off-fn.EntryOffset:]); !ok {
			t.Errorf("%s: at +%#x (file offset %#x): %s, want RET", fn.Name, fn.RetOffsets[i], off, inst)
		}
	}
	if ef.Machine == elf.EM_AARCH64 {
		// Every word is an instruction, and compiled Go code has no
		// literal pools: each RET arm64asm finds must be there.
		var all []uint64
		for off := uint64(0); off+4 <= fn.Size(); off += 4 {
			if _, ok := decodeRet(ef.Machine, viaOffset[off:]); ok {
				all = append(all, off)
			}
		}
		if !slices.Equal(all, fn.RetOffsets) {
			t.Errorf("%s: RETs at %v, arm64asm finds %v", fn.Name, fn.RetOffsets, all)
		}
	}
}

// objdumpRet matches a RET line of objdump -d, GNU's or LLVM's, such as
// "  4d9a3e:\tc3                   \tret" or "   8c16c: c0 03 5f d6  \tret".
var objdumpRet = regexp.MustCompile(`(?m)^\s*([0-9a-f]+):\s[^\t]*\t(?:repz? |bnd )?retq?\b`)

// objdumps are the disassemblers that know each architecture, in the order
// tried: GNU objdump is most often built for its host only (llvm-14, which
// make test-deps installs, has its objdump as llvm-objdump-14 on PATH).
var objdumps = map[elf.Machine][]string{
	elf.EM_X86_64:  {"objdump", "llvm-objdump", "llvm-objdump-14"},
	elf.EM_AARCH64: {"llvm-objdump", "llvm-objdump-14", "aarch64-linux-gnu-objdump"},
}

// checkAgainstObjdump compares the RETs with those objdump finds, an
// independent decoder, when one for the executable's architecture is
// installed.
func checkAgainstObjdump(t *testing.T, path string, fns map[string]*Func) {
	t.Helper()
	ef, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ef.Close()
	objdump := ""
	for _, tool := range objdumps[ef.Machine] {
		if _, err := exec.LookPath(tool); err == nil {
			objdump = tool
			break
		}
	}
	if objdump == "" {
		t.Logf("none of %v installed: RET offsets not compared with objdump's", objdumps[ef.Machine])
		return
	}
	for _, fn := range fns {
		out, err := exec.Command(objdump, "-d",
			fmt.Sprintf("--start-address=%#x", fn.Entry), fmt.Sprintf("--stop-address=%#x", fn.End), path).Output()
		if err != nil {
			t.Fatalf("objdump: %v", err)
		}
		var got []uint64
		for _, m := range objdumpRet.FindAllSubmatch(out, -1) {
			addr, _ := strconv.ParseUint(string(m[1]), 16, 64)
			got = append(got, addr-fn.Entry)
		}
		if !slices.Equal(got, fn.RetOffsets) {
			t.Errorf("%s: RETs at %v, %s says %v", fn.Name, fn.RetOffsets, objdump, got)
		}
	}
}

// TestPclntabMatchesSymtab looks up every function of each architecture's
// unstripped build through .gopclntab alone and compares with the symbol table: the stripped
// path must find the same range (padding trimmed) and the same RETs, or fail
// the same way.
func TestPclntabMatchesSymtab(t *testing.T) {
	for _, goarch := range slices.Sorted(maps.Keys(plainBuilds)) {
		t.Run(goarch, func(t *testing.T) { checkPclntabMatchesSymtab(t, crilike(t, buildNamed(t, plainBuilds[goarch]))) })
	}
}

func checkPclntabMatchesSymtab(t *testing.T, path string) {
	var names []string
	for name := range symtabFuncs(t, path) {
		names = append(names, name)
	}
	slices.Sort(names)
	b := open(t, path)
	viaSym, symErrs := b.lookup(names, false)
	viaPcln, pclnErrs := b.lookup(names, true)
	pclnErr := map[string]error{}
	for _, err := range pclnErrs {
		var le *LookupError
		if errors.As(err, &le) {
			pclnErr[le.Name] = err
		}
	}
	if len(viaSym) < len(names)*9/10 {
		t.Fatalf("only %d of %d functions found through the symbol table: %v", len(viaSym), len(names), errors.Join(symErrs...))
	}
	symtabOnly := 0
	for _, name := range names {
		s, p := viaSym[name], viaPcln[name]
		switch {
		case s != nil && p == nil && errors.Is(pclnErr[name], ErrNotFound):
			// The symbol table names assembly functions "….abi0";
			// .gopclntab does not.
			symtabOnly++
		case s == nil && p == nil:
		case s == nil || p == nil:
			t.Errorf("%s: found through one table only (symtab %v, pclntab %v)", name, s != nil, p != nil)
		case s.Entry != p.Entry || s.End != p.End || !slices.Equal(s.RetOffsets, p.RetOffsets) || s.EntryOffset != p.EntryOffset:
			t.Errorf("%s: symtab %#x-%#x RETs %v; pclntab %#x-%#x RETs %v", name, s.Entry, s.End, s.RetOffsets, p.Entry, p.End, p.RetOffsets)
		}
	}
	t.Logf("%d functions: %d probeable, %d not; %d named differently in .gopclntab", len(names), len(viaSym), len(symErrs), symtabOnly)
	if symtabOnly > len(names)/10 {
		t.Errorf("%d of %d names not in .gopclntab", symtabOnly, len(names))
	}
	for _, err := range symErrs {
		// Assembly functions may use instructions x86asm does not
		// know (amd64), and some never return; compiled Go code never
		// fails.
		var le *LookupError
		if errors.As(err, &le) && strings.HasPrefix(le.Name, "main.") && le.Name != "main.fatalf" {
			t.Errorf("compiled Go function not probeable: %v", err)
		}
	}
}

// TestTextStart checks the ways a stripped binary tells where Go text starts
// against the symbol table: the module data (all builds) and the ELF entry
// point (internally linked builds only; an externally linked one starts in
// C code, which must be refused).
func TestTextStart(t *testing.T) {
	for _, bd := range builds {
		if !bd.symtab {
			continue
		}
		t.Run(bd.name, func(t *testing.T) {
			b := open(t, crilike(t, bd))
			sym, err := b.symbols(nil)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := sym[symText]
			if !ok {
				t.Fatalf("no %s symbol", symText)
			}
			addr, data, _, err := b.findPclntab(sym)
			if err != nil {
				t.Fatal(err)
			}
			h, err := parsePclnHeader(data)
			if err != nil {
				t.Fatal(err)
			}
			md, ok := b.findModuleData(b.describesPclntab)
			if !ok || md.text != want.Value || md.pcHeader != addr || md.funcnametab != addr+h.funcnameOf {
				t.Errorf("module data: %+v, %v; %s is %#x, .gopclntab %#x", md, ok, symText, want.Value, addr)
			}
			got, ok := b.entryText(newPclnTable(data, h, 0))
			external := bd.cgo
			switch {
			case external && ok:
				t.Errorf("entry point: %#x from C start-up code, want a refusal", got)
			case !external && (!ok || got != want.Value):
				t.Errorf("entry point: %#x, %v; %s is %#x", got, ok, symText, want.Value)
			}
		})
	}
}

// TestConcurrentUse looks up from several goroutines at once, the first of
// them parsing .gopclntab (run with -race).
func TestConcurrentUse(t *testing.T) {
	b := open(t, crilike(t, builds[1]))
	want := mustLookup(t, open(t, crilike(t, builds[1])), crilikeMethods...)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			fns, errs := b.Lookup(crilikeMethods...)
			if len(errs) > 0 || len(fns) != len(crilikeMethods) {
				t.Errorf("lookup: %v", errs)
			}
			for name, fn := range fns {
				if fmt.Sprint(*fn) != fmt.Sprint(*want[name]) {
					t.Errorf("%s: %+v, want %+v", name, *fn, *want[name])
				}
			}
			if _, err := b.BuildInfo(); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
}

func TestLookupErrors(t *testing.T) {
	for _, name := range []string{"stripped", "arm64-stripped"} {
		t.Run(name, func(t *testing.T) { checkLookupErrors(t, open(t, crilike(t, buildNamed(t, name)))) })
	}
}

func checkLookupErrors(t *testing.T, b *Binary) {
	fns, errs := b.Lookup("main.(*remoteRuntimeService).RunPodSandbox", "main.noSuchFunction", "main.every", "main.fatalf", "main.noSuchFunction")
	if len(fns) != 1 || fns["main.(*remoteRuntimeService).RunPodSandbox"] == nil {
		t.Errorf("found %v, want RunPodSandbox only", slices.Collect(maps.Keys(fns)))
	}
	want := []struct {
		name string
		err  error
		text string
	}{
		{"main.noSuchFunction", ErrNotFound, "main.noSuchFunction: function not found"},
		{"main.every", ErrNotFound, "main.every: function not found: every call to it was inlined"},
		{"main.fatalf", ErrNoReturn, "main.fatalf: function has no RET instruction"},
	}
	if len(errs) != len(want) {
		t.Fatalf("errors %v, want one for each of %d names", errs, len(want))
	}
	for i, w := range want {
		var le *LookupError
		if !errors.As(errs[i], &le) || le.Name != w.name || !errors.Is(errs[i], w.err) || errs[i].Error() != w.text {
			t.Errorf("error %d: %v, want %q wrapping %v", i, errs[i], w.text, w.err)
		}
	}

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, errs := b.Lookup("main.main"); len(errs) != 1 || !errors.Is(errs[0], os.ErrClosed) {
		t.Errorf("lookup after Close: %v, want os.ErrClosed", errs)
	}
	if _, err := b.BuildInfo(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("BuildInfo after Close: %v, want os.ErrClosed", err)
	}
}

func TestBuildInfo(t *testing.T) {
	b := open(t, crilike(t, builds[1]))
	bi, err := b.BuildInfo()
	if err != nil {
		t.Fatal(err)
	}
	if bi.GoVersion != runtime.Version() || bi.Main.Path != "github.com/readyline/readyline" || !strings.HasSuffix(bi.Path, "/testdata/crilike") {
		t.Errorf("build info: Go %s, main module %s, package %s", bi.GoVersion, bi.Main.Path, bi.Path)
	}
	ldflags := ""
	for _, s := range bi.Settings {
		if s.Key == "-ldflags" {
			ldflags = s.Value
		}
	}
	if ldflags != "-s -w" {
		t.Errorf("-ldflags %q in build settings, want %q", ldflags, "-s -w")
	}
}
