package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestNormalizeRef(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{in: "localhost/busybox:local", want: "localhost/busybox:local"},
		{in: "localhost/busybox", want: "localhost/busybox:latest"},
		{in: "localhost:5000/a/b:v1", want: "localhost:5000/a/b:v1"},
		{in: "registry.example.com/x:1.0", want: "registry.example.com/x:1.0"},
		{in: "busybox", want: "docker.io/library/busybox:latest"},
		{in: "busybox:1.36", want: "docker.io/library/busybox:1.36"},
		{in: "user/app:v2", want: "docker.io/user/app:v2"},
		{in: "", err: true},
		{in: "Busybox:1", err: true},
		{in: "busybox@sha256:abcd", err: true},
		{in: "busybox:", err: true},
	}
	for _, tt := range tests {
		got, err := NormalizeRef(tt.in)
		if tt.err {
			if !errors.Is(err, ErrInvalidRef) {
				t.Errorf("NormalizeRef(%q) = %q, %v; want ErrInvalidRef", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeRef(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// testRootfs builds a small tree with a directory, an executable, a symlink and
// a hard link.
func testRootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "tmp"), 0o755))
	must(os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777))
	must(os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.Symlink("tool", filepath.Join(root, "bin", "sh")))
	must(os.Link(filepath.Join(root, "bin", "tool"), filepath.Join(root, "bin", "tool2")))
	return root
}

func testImage() Image {
	return Image{
		Ref: "localhost/test:v1", OS: "linux", Architecture: "amd64",
		Created: time.Unix(1700000000, 0).UTC(), Cmd: []string{"sh"},
		Env: []string{defaultPath}, WorkingDir: "/", ExposedPorts: []string{"80/tcp"},
	}
}

// readTar returns the regular files of a tar stream by name and all headers in order.
func readTar(t *testing.T, r io.Reader) (map[string][]byte, []*tar.Header) {
	t.Helper()
	files := map[string][]byte{}
	var hdrs []*tar.Header
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, hdrs
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

func TestWriteArchive(t *testing.T) {
	root := testRootfs(t)
	var buf bytes.Buffer
	if err := WriteArchive(&buf, root, testImage()); err != nil {
		t.Fatal(err)
	}
	files, _ := readTar(t, &buf)

	// Every blob is stored under its own digest.
	for name, b := range files {
		if !strings.HasPrefix(name, "blobs/sha256/") {
			continue
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); "blobs/sha256/"+got != name {
			t.Errorf("blob %s has digest %s", name, got)
		}
	}

	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	mustUnmarshal(t, files["index.json"], &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index has %d manifests", len(index.Manifests))
	}
	m := index.Manifests[0]
	if m.MediaType != mediaTypeManifest || m.Annotations["io.containerd.image.name"] != "localhost/test:v1" ||
		m.Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Errorf("index manifest descriptor = %+v", m)
	}

	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	mustUnmarshal(t, files[blobPath(m)], &manifest)
	if len(manifest.Layers) != 1 || manifest.Layers[0].MediaType != mediaTypeLayer {
		t.Fatalf("manifest layers = %+v", manifest.Layers)
	}
	layer := files[blobPath(manifest.Layers[0])]
	if int64(len(layer)) != manifest.Layers[0].Size {
		t.Errorf("layer size %d, manifest says %d", len(layer), manifest.Layers[0].Size)
	}

	var cfg imageConfig
	mustUnmarshal(t, files[blobPath(manifest.Config)], &cfg)
	if cfg.RootFS.DiffIDs[0] != manifest.Layers[0].Digest {
		t.Errorf("diff_id %s != layer digest %s (layer is uncompressed)", cfg.RootFS.DiffIDs[0], manifest.Layers[0].Digest)
	}
	if cfg.Architecture != "amd64" || cfg.OS != "linux" || strings.Join(cfg.Config.Cmd, " ") != "sh" {
		t.Errorf("config = %+v", cfg)
	}
	if _, ok := cfg.Config.ExposedPorts["80/tcp"]; !ok {
		t.Errorf("exposed ports = %v", cfg.Config.ExposedPorts)
	}

	var docker []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	mustUnmarshal(t, files["manifest.json"], &docker)
	if len(docker) != 1 || docker[0].Config != blobPath(manifest.Config) ||
		docker[0].RepoTags[0] != "localhost/test:v1" || docker[0].Layers[0] != blobPath(manifest.Layers[0]) {
		t.Errorf("manifest.json = %+v", docker)
	}
}

func TestWriteArchiveLayer(t *testing.T) {
	root := testRootfs(t)
	var buf bytes.Buffer
	img := testImage()
	if err := writeLayer(&buf, root, img.Created); err != nil {
		t.Fatal(err)
	}
	files, hdrs := readTar(t, &buf)
	var names []string
	byName := map[string]*tar.Header{}
	for _, h := range hdrs {
		names = append(names, h.Name)
		byName[h.Name] = h
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(img.Created) {
			t.Errorf("%s: uid %d gid %d mtime %v; want root and %v", h.Name, h.Uid, h.Gid, h.ModTime, img.Created)
		}
	}
	want := "bin/ bin/sh bin/tool bin/tool2 tmp/"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("layer entries = %q, want %q", got, want)
	}
	if h := byName["bin/sh"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "tool" {
		t.Errorf("bin/sh = %+v, want symlink to tool", h)
	}
	if h := byName["bin/tool2"]; h.Typeflag != tar.TypeLink || h.Linkname != "bin/tool" {
		t.Errorf("bin/tool2 = %+v, want hard link to bin/tool", h)
	}
	if h := byName["bin/tool"]; h.Mode != 0o755 || string(files["bin/tool"]) != "#!/bin/sh\necho hi\n" {
		t.Errorf("bin/tool mode %o content %q", h.Mode, files["bin/tool"])
	}
	if h := byName["tmp/"]; h.Mode != 0o1777 {
		t.Errorf("tmp/ mode = %o, want 1777", h.Mode)
	}
}

func TestWriteArchiveReproducible(t *testing.T) {
	root := testRootfs(t)
	var a, b bytes.Buffer
	if err := WriteArchive(&a, root, testImage()); err != nil {
		t.Fatal(err)
	}
	// Touch a file: modification times must not leak into the archive.
	if err := os.Chtimes(filepath.Join(root, "bin", "tool"), time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := WriteArchive(&b, root, testImage()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same tree differ")
	}
}

func TestWriteArchiveRejectsSpecialFiles(t *testing.T) {
	root := testRootfs(t)
	if err := os.Symlink("x", filepath.Join(root, "ok")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteArchive(io.Discard, root, testImage())
	if err == nil || !strings.Contains(err.Error(), "unsupported file type") {
		t.Errorf("WriteArchive with a fifo: err = %v, want unsupported file type", err)
	}
}

func TestRunFlags(t *testing.T) {
	root := testRootfs(t)
	out := filepath.Join(t.TempDir(), "img.tar")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	err := run([]string{"-rootfs", root, "-ref", "localhost/x:y", "-o", out,
		"-entrypoint", `["/bin/tool"]`, "-cmd", `["a","b"]`, "-env", "A=1", "-label", "k=v", "-expose", "80/tcp"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _ := readTar(t, f)
	var docker []struct{ Config string }
	mustUnmarshal(t, files["manifest.json"], &docker)
	var cfg imageConfig
	mustUnmarshal(t, files[docker[0].Config], &cfg)
	if got := strings.Join(cfg.Config.Env, " "); got != defaultPath+" A=1" {
		t.Errorf("env = %q", got)
	}
	if cfg.Config.Labels["k"] != "v" || cfg.Config.Entrypoint[0] != "/bin/tool" || len(cfg.Config.Cmd) != 2 {
		t.Errorf("config = %+v", cfg.Config)
	}
	if !cfg.Created.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("created = %v", cfg.Created)
	}

	if err := run([]string{"-rootfs", root, "-ref", "x", "-o", out, "-cmd", "sh"}); err == nil {
		t.Error("-cmd sh (not JSON) accepted")
	}
	if err := run([]string{"-rootfs", root, "-o", out}); err == nil {
		t.Error("missing -ref accepted")
	}
}

func mustUnmarshal(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// goldenRootfs builds a tree whose archive's bytes do not depend on the umask
// or the file system: explicit modes, no hard links.
func goldenRootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "tmp"), 0o755))
	must(os.WriteFile(filepath.Join(root, "bin", "tool"), []byte("#!/bin/sh\necho hi\n"), 0o755))
	must(os.Symlink("tool", filepath.Join(root, "bin", "sh")))
	must(os.Chmod(filepath.Join(root, "bin"), 0o755))
	must(os.Chmod(filepath.Join(root, "bin", "tool"), 0o755))
	must(os.Chmod(filepath.Join(root, "tmp"), os.ModeSticky|0o777))
	return root
}

// TestWriteArchiveUnchanged pins a single-platform archive's bytes: the
// digest is what mkimage wrote before it learned -platform (commit 345eb0b),
// and node.sh, kind.sh and their caches expect the same images still.
func TestWriteArchiveUnchanged(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteArchive(&buf, goldenRootfs(t), testImage()); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	if got, want := hex.EncodeToString(sum[:]), "374185d02a5180aa10d5c3b1b749d29d3d24f5836fe43275751466ddc4449b24"; got != want || buf.Len() != 11264 {
		t.Errorf("archive: %d bytes, sha256 %s; want 11264 bytes, sha256 %s", buf.Len(), got, want)
	}
}
