package collector

import "testing"

// TestBinaryCacheKeepsTheLastUsed: the cache holds maxCachedBinaries
// files, dropping the one least recently used.
func TestBinaryCacheKeepsTheLastUsed(t *testing.T) {
	var c binaryCache
	id := func(ino uint64) fileID { return fileID{dev: 1, ino: ino, size: 100, mtime: 5} }
	for ino := range uint64(maxCachedBinaries) {
		c.put(&kubeletBinary{id: id(ino)})
	}
	if c.get(id(0)) == nil { // 0 is now the most recently used
		t.Fatal("file 0 not cached")
	}
	c.put(&kubeletBinary{id: id(99)}) // drops 1
	for ino, want := range map[uint64]bool{0: true, 1: false, 2: true, 3: true, 99: true} {
		if got := c.get(id(ino)) != nil; got != want {
			t.Errorf("file %d cached: %v, want %v", ino, got, want)
		}
	}
	// Same inode, another content (size or mtime): another file.
	if c.get(fileID{dev: 1, ino: 0, size: 100, mtime: 6}) != nil {
		t.Error("a file rewritten in place was taken for the one read")
	}
	if len(c.entries) != maxCachedBinaries {
		t.Errorf("%d entries, want %d", len(c.entries), maxCachedBinaries)
	}
}
