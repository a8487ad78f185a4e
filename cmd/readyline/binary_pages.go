package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// binaryTrimAfter is how long after it starts the daemon first gives back
// the pages of its binary it maps but does not use: by then the eBPF
// programs are loaded, the kubelet's binary parsed and the pod list read.
// binaryTrimEvery is how often it does so again, since each burst of pod
// starts maps back much more of the binary than it runs (see
// releaseBinaryPages).
const (
	binaryTrimAfter = 30 * time.Second
	binaryTrimEvery = time.Minute
)

// heapKeepFree is how much free heap the daemon keeps mapped at a trim:
// more is handed back to the kernel (releaseFreeHeap).
const heapKeepFree = 2 << 20

// trimBinaryPages runs releaseBinaryPages and releaseFreeHeap
// binaryTrimAfter from now and then every binaryTrimEvery, until ctx ends.
// The first release is logged at Info, with how much it gave back (most of
// the binary), the later ones at Debug.
func trimBinaryPages(ctx context.Context, logger *slog.Logger) {
	t := time.NewTimer(binaryTrimAfter)
	defer t.Stop()
	level := slog.LevelInfo
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		released, err := releaseBinaryPages("/proc/self/smaps", "/proc/self/exe")
		if err != nil {
			// Nothing that failed once would work later: the daemon
			// keeps its binary mapped as it is.
			logger.Warn("the pages of readyline's binary stay mapped", "error", err)
			return
		}
		logger.Log(ctx, level, "gave back the pages of readyline's binary it was not using", "MiB", fmt.Sprintf("%.1f", float64(released)/(1<<20)))
		if freed := releaseFreeHeap(heapKeepFree); freed > 0 {
			logger.Debug("gave back the free heap", "MiB", fmt.Sprintf("%.1f", float64(freed)/(1<<20)))
		}
		level = slog.LevelDebug
		t.Reset(binaryTrimEvery)
	}
}

// releaseBinaryPages unmaps the pages of the process's own binary (exe)
// from its address space with madvise(MADV_DONTNEED), and returns how many
// bytes of them were resident.
//
// Why: the kernel maps a file's pages around each one faulted in (64 KiB
// at a time), so a start that runs code all over the binary (package
// init, ELF and BTF parsing, eBPF loading, client-go's setup), and later
// each burst of pod starts, leaves nearly all of its ~24 MiB of code and
// read-only data resident, counted in the daemon's RSS, though a steady
// daemon uses a quarter of it (bench-node: 6.8 of 20.5 MiB mapped in the 2
// minutes after 200 pod starts). The pages stay in the page cache, clean
// and reclaimable; those used again come back on their next access
// through a minor fault, without I/O.
//
// Only read-only mappings of the binary without private (copy-on-write)
// pages are touched: dropping a written page would lose what was written,
// and a read-only page of the binary can only have been written by a
// relocation (a PIE's RELRO), so such a mapping is left alone.
func releaseBinaryPages(smapsPath, exePath string) (uint64, error) {
	var exe unix.Stat_t
	if err := unix.Stat(exePath, &exe); err != nil {
		return 0, fmt.Errorf("the binary: %w", err)
	}
	smaps, err := os.ReadFile(smapsPath)
	if err != nil {
		return 0, err
	}
	path, err := os.Readlink(exePath)
	if err != nil {
		return 0, fmt.Errorf("the binary: %w", err)
	}
	mappings, err := binaryMappings(smaps, binaryFile{dev: exe.Dev, ino: exe.Ino, path: path})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", smapsPath, err)
	}
	if len(mappings) == 0 {
		return 0, fmt.Errorf("%s maps no read-only part of the binary (%s, inode %d)", smapsPath, exePath, exe.Ino)
	}
	var released uint64
	for _, m := range mappings {
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return released, fmt.Errorf("madvise %#x-%#x: %w", m.start, m.end, errno)
		}
		released += m.rss
	}
	return released, nil
}

// mapping is one mapping of /proc/PID/smaps.
type mapping struct {
	start, end uintptr
	rss        uint64 // bytes resident
}

// binaryFile is how smaps names the binary: by its device and inode, or
// by its path (on overlayfs, smaps may give the inode of the layer below).
type binaryFile struct {
	dev, ino uint64
	path     string
}

// binaryMappings returns the mappings in smaps of the binary that may be
// dropped: not writable, and without anonymous (copy-on-write) pages.
func binaryMappings(smaps []byte, bin binaryFile) ([]mapping, error) {
	var out []mapping
	var cur *mapping // the binary's current mapping, nil while in another's
	var rss, anon uint64
	keep := func() {
		if cur != nil && anon == 0 {
			cur.rss = rss
			out = append(out, *cur)
		}
		cur, rss, anon = nil, 0, 0
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			// A mapping's header: start-end perms offset major:minor inode [path].
			keep()
			if len(f) < 5 {
				return nil, fmt.Errorf("a mapping without its fields: %q", sc.Text())
			}
			start, end, ok := strings.Cut(f[0], "-")
			if !ok {
				return nil, fmt.Errorf("a mapping without its range: %q", sc.Text())
			}
			var m mapping
			s, err1 := strconv.ParseUint(start, 16, 64)
			e, err2 := strconv.ParseUint(end, 16, 64)
			major, minor, _ := strings.Cut(f[3], ":")
			maj, err3 := strconv.ParseUint(major, 16, 32)
			mnr, err4 := strconv.ParseUint(minor, 16, 32)
			n, err5 := strconv.ParseUint(f[4], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err5 != nil {
				return nil, fmt.Errorf("a mapping that does not parse: %q", sc.Text())
			}
			m.start, m.end = uintptr(s), uintptr(e)
			same := n == bin.ino && unix.Mkdev(uint32(maj), uint32(mnr)) == bin.dev ||
				len(f) == 6 && f[5] == bin.path
			if same && len(f[1]) >= 2 && f[1][1] != 'w' {
				cur = &m
			}
			continue
		}
		if cur == nil || len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			rss = kb << 10
		case "Anonymous:":
			anon = kb << 10
		}
	}
	keep()
	return out, sc.Err()
}

// releaseFreeHeap hands the heap the daemon holds free back to the kernel
// (debug.FreeOSMemory: a collection, then every free page) when more than
// keep is free, and returns how much was free. Go's own scavenger gives
// back only what exceeds about a tenth over the heap's goal, and slowly: a
// burst of pod starts grows the heap, and the daemon kept its peak mapped
// long after (bench-node's churn: 26 MiB of anonymous memory minutes after
// 1000 starts, with 13 MiB in use). A collection of the daemon's heap once
// a minute costs a few milliseconds.
func releaseFreeHeap(keep uint64) uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	free := s[0].Value.Uint64()
	if free <= keep {
		return 0
	}
	debug.FreeOSMemory()
	return free
}
