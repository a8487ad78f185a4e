package main

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"io"
	"testing"
)

// layerSum reads a random layer and returns its digest and the name and size
// of the file in it.
func layerSum(t *testing.T, seed uint64, size int64) (sum [32]byte, file string, fileSize int64) {
	t.Helper()
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(randomLayerTar(seed, size), h))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			file, fileSize = hdr.Name, hdr.Size
		}
		if _, err := io.Copy(io.Discard, tr); err != nil {
			t.Fatal(err)
		}
	}
	copy(sum[:], h.Sum(nil))
	return sum, file, fileSize
}

func TestRandomLayerIsReproducible(t *testing.T) {
	const size = 1 << 20
	a, file, n := layerSum(t, 13, size)
	b, _, _ := layerSum(t, 13, size)
	other, _, _ := layerSum(t, 14, size)
	if file != "large/random.bin" || n != size {
		t.Errorf("layer holds %q of %d bytes, want large/random.bin of %d", file, n, size)
	}
	if a != b {
		t.Error("two layers from seed 13 differ")
	}
	if a == other {
		t.Error("seeds 13 and 14 give the same layer")
	}
}

func TestLastElem(t *testing.T) {
	for in, want := range map[string]string{
		"localhost/busybox:local":     "busybox:local",
		"localhost/coredns:v1.15.0":   "coredns:v1.15.0",
		"docker.io/library/nginx:1.2": "nginx:1.2",
		"pause:local":                 "pause:local",
	} {
		if got := lastElem(in); got != want {
			t.Errorf("lastElem(%q) = %q, want %q", in, got, want)
		}
	}
}
