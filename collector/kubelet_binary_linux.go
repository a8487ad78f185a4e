package collector

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"syscall"

	"github.com/readyline/readyline/collector/gofunc"
)

// kubeletBinary is what reading a kubelet executable found: the CRI client
// methods to probe and how to read their arguments, or why it cannot be
// probed.
type kubeletBinary struct {
	id fileID
	// funcs are the methods found, by symbol; lookupErr says why the
	// others were not.
	funcs     map[string]*gofunc.Func
	lookupErr error
	// offsets are the field offsets of the binary's cri-api, nil to read
	// ids only (see probeTarget.offsets).
	offsets *criOffsets
	// version is the kubelet's Kubernetes version (kubeletVersion).
	version string
	// err, when set, says why nothing in the binary can be probed.
	err error
}

// binaryCache remembers the last few kubelet executables read, by their
// identity (device, inode, size, mtime), with what was found in them:
// reading one takes seconds and tens of MiB, and a kubelet restarted from
// the same file, or another process of a file that could not be used,
// needs none of it again. Not safe for concurrent use.
type binaryCache struct {
	entries []*kubeletBinary // least recently used first
}

// maxCachedBinaries is how many executables the cache remembers: the
// kubelet's, an upgrade's, and a few it was shown that were not kubelets.
const maxCachedBinaries = 4

func (c *binaryCache) get(id fileID) *kubeletBinary {
	i := slices.IndexFunc(c.entries, func(e *kubeletBinary) bool { return e.id == id })
	if i < 0 {
		return nil
	}
	e := c.entries[i]
	c.entries = append(slices.Delete(c.entries, i, i+1), e)
	return e
}

func (c *binaryCache) put(e *kubeletBinary) {
	if len(c.entries) >= maxCachedBinaries {
		c.entries = slices.Delete(c.entries, 0, 1)
	}
	c.entries = append(c.entries, e)
}

// readBinary returns what the executable at exe (a /proc/<pid>/exe) offers
// to probe: from the cache when the same file was read before, else read
// from the very file opened, whose identity keys the cache.
func (s *KubeletCallSource) readBinary(exe string) (*kubeletBinary, error) {
	f, err := os.Open(exe)
	if err != nil {
		return nil, fmt.Errorf("opening the kubelet binary: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening the kubelet binary: %w", err)
	}
	id := fileIDOf(st.Sys().(*syscall.Stat_t))
	if e := s.binaries.get(id); e != nil {
		return e, e.err
	}
	e := s.lookupMethods(f, st.Size())
	e.id = id
	s.binaries.put(e)
	return e, e.err
}

// lookupMethods reads the CRI client methods and the cri-api version out of
// the executable f holds.
func (s *KubeletCallSource) lookupMethods(f *os.File, size int64) *kubeletBinary {
	s.binaryReads.Add(1)
	bin, err := gofunc.NewBinary(f, size)
	if err != nil {
		return &kubeletBinary{err: fmt.Errorf("reading the kubelet binary: %w", err)}
	}
	defer func() {
		// Reading the kubelet's function table took ~36 MiB of heap,
		// garbage from here on: give it back now rather than at the
		// 2-minute forced GC (a DaemonSet's memory limit sees the peak).
		bin.Close()
		debug.FreeOSMemory()
	}()
	info, _ := bin.BuildInfo()
	e := &kubeletBinary{offsets: s.cfg.target.offsets(info, s.logger), version: kubeletVersion(info)}
	symbols := make([]string, len(s.cfg.target.methods))
	for i, m := range s.cfg.target.methods {
		symbols[i] = m.Symbol
	}
	funcs, errs := bin.Lookup(symbols...)
	e.funcs, e.lookupErr = funcs, errors.Join(errs...)
	if len(funcs) == 0 {
		e.err = fmt.Errorf("none of the CRI client methods found in kubelet %s (readyline knows %s): %w",
			e.version, knownKubelets(), e.lookupErr)
	}
	return e
}
