package main

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// smapsOf builds an smaps text: each mapping is its header and its Rss and
// Anonymous in kB.
func smapsOf(mappings ...[3]string) []byte {
	var b strings.Builder
	for _, m := range mappings {
		b.WriteString(m[0] + "\n")
		b.WriteString("Size:              12468 kB\nKernelPageSize:        4 kB\n")
		b.WriteString("Rss:            " + m[1] + " kB\nPss:               10 kB\n")
		b.WriteString("Anonymous:      " + m[2] + " kB\nTHPeligible:           0\n")
		b.WriteString("VmFlags: rd ex mr mw me\n")
	}
	return []byte(b.String())
}

func TestBinaryMappings(t *testing.T) {
	bin := binaryFile{dev: unix.Mkdev(0xfe, 0), ino: 9977871, path: "/readyline"}
	smaps := smapsOf(
		[3]string{"00400000-00f76000 r-xp 00000000 fe:00 9977871                            /readyline", "5120", "0"},
		[3]string{"00f76000-01ba3000 r--p 00b76000 fe:00 9977871                            /readyline", "9020", "0"},
		// Written: its data.
		[3]string{"01ba3000-01ca1000 rw-p 017a3000 fe:00 9977871                            /readyline", "964", "172"},
		// Read-only but with copy-on-write pages (a relocated RELRO).
		[3]string{"01ca1000-01ca2000 r--p 018a1000 fe:00 9977871                            /readyline", "4", "4"},
		// Another file, and the same inode number on another device.
		[3]string{"7f0000000000-7f0000100000 r-xp 00000000 fe:00 12                         /usr/lib/libc.so.6", "824", "0"},
		[3]string{"7f0000200000-7f0000300000 r-xp 00000000 00:2a 9977871                    /other", "100", "0"},
		// On overlayfs: another inode, but the binary's path.
		[3]string{"7f0000400000-7f0000500000 r--p 00000000 00:2f 555                        /readyline", "64", "0"},
		[3]string{"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]", "132", "132"},
		[3]string{"7f0000600000-7f0000700000 rw-p 00000000 00:00 0 ", "2048", "2048"},
	)
	got, err := binaryMappings(smaps, bin)
	if err != nil {
		t.Fatal(err)
	}
	want := []mapping{
		{start: 0x400000, end: 0xf76000, rss: 5120 << 10},
		{start: 0xf76000, end: 0x1ba3000, rss: 9020 << 10},
		{start: 0x7f0000400000, end: 0x7f0000500000, rss: 64 << 10},
	}
	if len(got) != len(want) {
		t.Fatalf("mappings %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBinaryMappingsBadInput(t *testing.T) {
	for _, smaps := range []string{
		"00400000-00f76000 r-xp 00000000 fe:00\n",
		"00400000 r-xp 00000000 fe:00 1 /readyline\n",
		"0040zz00-00f76000 r-xp 00000000 fe:00 1 /readyline\n",
		"00400000-00f76000 r-xp 00000000 fe00 1 /readyline\n",
	} {
		if got, err := binaryMappings([]byte(smaps), binaryFile{ino: 1, path: "/readyline"}); err == nil {
			t.Errorf("%q: %+v, want an error", smaps, got)
		}
	}
	// Nothing of the binary: no mapping and no error (the caller says so).
	got, err := binaryMappings(smapsOf([3]string{"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0 [stack]", "132", "132"}), binaryFile{ino: 1, path: "/readyline"})
	if err != nil || len(got) != 0 {
		t.Errorf("%+v, %v; want none", got, err)
	}
}

// TestReleaseBinaryPages drops this test binary's own pages, on the real
// kernel, and checks that fewer of them are resident afterwards and that
// the code still runs (it is faulted back in).
func TestReleaseBinaryPages(t *testing.T) {
	before := binaryRSS(t)
	if before == 0 {
		t.Fatal("none of the test binary's read-only pages is resident, though it runs")
	}
	released, err := releaseBinaryPages("/proc/self/smaps", "/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	if released == 0 || released > before+1<<20 {
		t.Errorf("released %d bytes of %d resident", released, before)
	}
	if after := binaryRSS(t); after >= before {
		t.Errorf("the binary's read-only pages: %d bytes resident before, %d after", before, after)
	} else {
		t.Logf("the binary's read-only pages: %.1f MiB resident before, %.1f after", float64(before)/(1<<20), float64(after)/(1<<20))
	}
	if _, err := releaseBinaryPages("/proc/self/smaps", "/nonexistent"); err == nil {
		t.Error("no error for a binary that is not there")
	}
}

// binaryRSS is how many bytes of this process's binary's read-only
// mappings are resident.
func binaryRSS(t *testing.T) uint64 {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var rss uint64
	mine := false
	for _, line := range strings.Split(string(smaps), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
		case !strings.HasSuffix(f[0], ":"):
			mine = len(f) == 6 && f[5] == exe && f[1][1] != 'w'
		case mine && f[0] == "Rss:":
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			rss += kb << 10
		}
	}
	return rss
}

// TestReleaseFreeHeap: a heap that grew and shrank is handed back at the
// next trim, and one with little free is left alone (no collection).
func TestReleaseFreeHeap(t *testing.T) {
	free := func() uint64 {
		s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	const burst = 64 << 20
	func() {
		held := make([][]byte, 0, 64)
		for range 64 {
			held = append(held, make([]byte, burst/64))
		}
		runtime.KeepAlive(held)
	}()
	runtime.GC() // the burst is garbage now: free, still mapped
	before := free()
	if before < burst/2 {
		t.Fatalf("after a %d MiB burst was collected only %d MiB of the heap is free: the test measures nothing", burst>>20, before>>20)
	}
	if got := releaseFreeHeap(before * 2); got != 0 {
		t.Errorf("releaseFreeHeap with %d MiB free and %d MiB to keep gave back %d bytes, want none", before>>20, 2*before>>20, got)
	}
	if got := releaseFreeHeap(heapKeepFree); got < burst/2 {
		t.Errorf("releaseFreeHeap gave back %d MiB after a %d MiB burst, want at least half", got>>20, burst>>20)
	}
	// Other tests' goroutines may free a little meanwhile; the burst must
	// have gone back.
	if after := free(); after > burst/8 {
		t.Errorf("%d MiB of the heap still free and mapped after releaseFreeHeap, want the %d MiB burst given back", after>>20, burst>>20)
	}
}
