package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	linuxAMD64 = Platform{OS: "linux", Architecture: "amd64"}
	linuxARM64 = Platform{OS: "linux", Architecture: "arm64"}
)

// platformRootfs builds a tiny tree whose files say which platform they are
// for: bin/app holds "app for ARCH", etc/arch just ARCH.
func platformRootfs(t *testing.T, arch string) string {
	t.Helper()
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "etc"), 0o755))
	must(os.WriteFile(filepath.Join(root, "bin", "app"), []byte("app for "+arch+"\n"), 0o755))
	must(os.WriteFile(filepath.Join(root, "etc", "arch"), []byte(arch), 0o644))
	return root
}

// twoPlatforms is linux/amd64 then linux/arm64, each with its own tree.
func twoPlatforms(t *testing.T) []PlatformRootfs {
	t.Helper()
	return []PlatformRootfs{
		{Platform: linuxAMD64, Rootfs: platformRootfs(t, "amd64")},
		{Platform: linuxARM64, Rootfs: platformRootfs(t, "arm64")},
	}
}

// blob returns the blob d points at in an archive's files after checking
// that it is there, that its size is d.Size and its sha256 d.Digest.
func blob(t *testing.T, files map[string][]byte, d descriptor) []byte {
	t.Helper()
	b, ok := files[blobPath(d)]
	if !ok {
		t.Fatalf("blob %s (%s) is not in the archive", d.Digest, d.MediaType)
	}
	if int64(len(b)) != d.Size {
		t.Errorf("blob %s (%s): %d bytes, descriptor says %d", d.Digest, d.MediaType, len(b), d.Size)
	}
	sum := sha256.Sum256(b)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != d.Digest {
		t.Errorf("blob %s (%s) has digest %s", d.Digest, d.MediaType, got)
	}
	return b
}

type testIndex struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

type testManifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type testDockerManifest []struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// platformImage is what one platform's manifest in an image index leads to.
type platformImage struct {
	desc     descriptor // the manifest's, in the image index
	manifest testManifest
	config   imageConfig
	layer    map[string][]byte // the layer's regular files by name
}

// readIndexArchive checks an archive WriteIndexArchive wrote, down to every
// blob's digest and size and that no blob is left over, and returns its image
// index's descriptor (from index.json) and each manifest's image, in order.
func readIndexArchive(t *testing.T, archive []byte) (map[string][]byte, descriptor, []platformImage) {
	t.Helper()
	files, hdrs := readTar(t, bytes.NewReader(archive))
	names := map[string]bool{}
	for _, h := range hdrs {
		if names[h.Name] {
			t.Errorf("%s is twice in the archive", h.Name)
		}
		names[h.Name] = true
	}
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	used := map[string]bool{}
	use := func(d descriptor) []byte {
		t.Helper()
		used[blobPath(d)] = true
		return blob(t, files, d)
	}

	var top testIndex
	mustUnmarshal(t, files["index.json"], &top)
	if top.SchemaVersion != 2 || top.MediaType != mediaTypeIndex || len(top.Manifests) != 1 {
		t.Fatalf("index.json = %s, want one entry", files["index.json"])
	}
	indexDesc := top.Manifests[0]
	if indexDesc.MediaType != mediaTypeIndex || indexDesc.Platform != nil {
		t.Errorf("index.json's entry = %+v, want an image index with no platform", indexDesc)
	}
	var index testIndex
	mustUnmarshal(t, use(indexDesc), &index)
	if index.SchemaVersion != 2 || index.MediaType != mediaTypeIndex {
		t.Errorf("image index = %+v", index)
	}

	var images []platformImage
	for _, d := range index.Manifests {
		if d.MediaType != mediaTypeManifest || d.Platform == nil || len(d.Annotations) != 0 {
			t.Fatalf("image index entry = %+v, want a manifest with a platform and no annotations", d)
		}
		img := platformImage{desc: d}
		mustUnmarshal(t, use(d), &img.manifest)
		if img.manifest.SchemaVersion != 2 || img.manifest.MediaType != mediaTypeManifest ||
			img.manifest.Config.MediaType != mediaTypeConfig || len(img.manifest.Layers) != 1 ||
			img.manifest.Layers[0].MediaType != mediaTypeLayer {
			t.Fatalf("%s manifest = %+v", d.Platform, img.manifest)
		}
		mustUnmarshal(t, use(img.manifest.Config), &img.config)
		layer := use(img.manifest.Layers[0])
		if len(img.config.RootFS.DiffIDs) != 1 || img.config.RootFS.DiffIDs[0] != img.manifest.Layers[0].Digest {
			t.Errorf("%s: diff_ids %v, layer %s (uncompressed: they are the same)", d.Platform,
				img.config.RootFS.DiffIDs, img.manifest.Layers[0].Digest)
		}
		img.layer, _ = readTar(t, bytes.NewReader(layer))
		images = append(images, img)
	}
	for name := range files {
		if strings.HasPrefix(name, "blobs/") && !used[name] {
			t.Errorf("%s is in the archive but nothing points at it", name)
		}
	}
	return files, indexDesc, images
}

func TestWriteIndexArchive(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteIndexArchive(&buf, testImage(), twoPlatforms(t), linuxAMD64); err != nil {
		t.Fatal(err)
	}
	files, indexDesc, images := readIndexArchive(t, buf.Bytes())

	// containerd names the image after index.json's entries: the name goes
	// on the image index's.
	if indexDesc.Annotations["io.containerd.image.name"] != "localhost/test:v1" ||
		indexDesc.Annotations["org.opencontainers.image.ref.name"] != "v1" {
		t.Errorf("index.json's entry annotations = %v", indexDesc.Annotations)
	}

	if len(images) != 2 {
		t.Fatalf("image index has %d manifests, want 2", len(images))
	}
	layers := map[string]bool{}
	for i, want := range []string{"amd64", "arm64"} {
		img := images[i]
		if p := *img.desc.Platform; p != (Platform{OS: "linux", Architecture: want}) {
			t.Errorf("manifest %d: platform %+v, want linux/%s", i, p, want)
		}
		if img.config.Architecture != want || img.config.OS != "linux" || img.config.Variant != "" {
			t.Errorf("%s manifest: config says %s/%s/%s", want, img.config.OS, img.config.Architecture, img.config.Variant)
		}
		// The layer is the platform's own tree.
		if got := string(img.layer["bin/app"]); got != "app for "+want+"\n" {
			t.Errorf("%s layer: bin/app = %q", want, got)
		}
		if got := string(img.layer["etc/arch"]); got != want {
			t.Errorf("%s layer: etc/arch = %q", want, got)
		}
		layers[img.manifest.Layers[0].Digest] = true
		// Everything else in the config is img's.
		if strings.Join(img.config.Config.Cmd, " ") != "sh" || !img.config.Created.Equal(testImage().Created) {
			t.Errorf("%s config = %+v", want, img.config)
		}
		if _, ok := img.config.Config.ExposedPorts["80/tcp"]; !ok {
			t.Errorf("%s exposed ports = %v", want, img.config.Config.ExposedPorts)
		}
	}
	if len(layers) != 2 {
		t.Error("the two platforms have the same layer")
	}

	// docker load's manifest.json: the host's platform only, here amd64.
	var docker testDockerManifest
	mustUnmarshal(t, files["manifest.json"], &docker)
	amd64 := images[0].manifest
	if len(docker) != 1 || docker[0].Config != blobPath(amd64.Config) || len(docker[0].RepoTags) != 1 ||
		docker[0].RepoTags[0] != "localhost/test:v1" || len(docker[0].Layers) != 1 ||
		docker[0].Layers[0] != blobPath(amd64.Layers[0]) {
		t.Errorf("manifest.json = %+v, want amd64's config %s and layer %s", docker,
			blobPath(amd64.Config), blobPath(amd64.Layers[0]))
	}
}

// TestWriteIndexArchiveDockerPlatform: manifest.json follows the host's
// platform wherever it is in the list, and falls back to the first one.
func TestWriteIndexArchiveDockerPlatform(t *testing.T) {
	platforms := twoPlatforms(t)
	for _, tt := range []struct {
		docker Platform
		want   string
	}{
		{linuxARM64, "arm64"},
		{linuxAMD64, "amd64"},
		{Platform{OS: "linux", Architecture: "riscv64"}, "amd64"},
	} {
		var buf bytes.Buffer
		if err := WriteIndexArchive(&buf, testImage(), platforms, tt.docker); err != nil {
			t.Fatal(err)
		}
		files, _, _ := readIndexArchive(t, buf.Bytes())
		var docker testDockerManifest
		mustUnmarshal(t, files["manifest.json"], &docker)
		if len(docker) != 1 || len(docker[0].Layers) != 1 {
			t.Fatalf("docker %s: manifest.json = %+v", tt.docker, docker)
		}
		var cfg imageConfig
		mustUnmarshal(t, files[docker[0].Config], &cfg)
		layer, _ := readTar(t, bytes.NewReader(files[docker[0].Layers[0]]))
		if cfg.Architecture != tt.want || string(layer["etc/arch"]) != tt.want {
			t.Errorf("docker %s: manifest.json names the %s config and a layer of %q, want %s",
				tt.docker, cfg.Architecture, layer["etc/arch"], tt.want)
		}
	}
}

func TestWriteIndexArchiveReproducible(t *testing.T) {
	platforms := twoPlatforms(t)
	var a, b bytes.Buffer
	if err := WriteIndexArchive(&a, testImage(), platforms, linuxAMD64); err != nil {
		t.Fatal(err)
	}
	// Modification times must not leak into the archive.
	for _, p := range platforms {
		if err := os.Chtimes(filepath.Join(p.Rootfs, "bin", "app"), time.Now(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteIndexArchive(&b, testImage(), platforms, linuxAMD64); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same trees differ")
	}
}

// TestWriteIndexArchiveSharedLayer: platforms whose trees are the same share
// one layer blob, written once; their configs still differ.
func TestWriteIndexArchiveSharedLayer(t *testing.T) {
	root := platformRootfs(t, "any")
	platforms := []PlatformRootfs{{Platform: linuxAMD64, Rootfs: root}, {Platform: linuxARM64, Rootfs: root}}
	var buf bytes.Buffer
	if err := WriteIndexArchive(&buf, testImage(), platforms, linuxAMD64); err != nil {
		t.Fatal(err)
	}
	_, _, images := readIndexArchive(t, buf.Bytes())
	if len(images) != 2 {
		t.Fatalf("image index has %d manifests", len(images))
	}
	if images[0].manifest.Layers[0].Digest != images[1].manifest.Layers[0].Digest {
		t.Error("the same tree made two layers")
	}
	if images[0].config.Architecture != "amd64" || images[1].config.Architecture != "arm64" {
		t.Errorf("configs say %s and %s", images[0].config.Architecture, images[1].config.Architecture)
	}
}

func TestWriteIndexArchiveVariant(t *testing.T) {
	armv7 := Platform{OS: "linux", Architecture: "arm", Variant: "v7"}
	platforms := []PlatformRootfs{{Platform: armv7, Rootfs: platformRootfs(t, "arm")}}
	var buf bytes.Buffer
	if err := WriteIndexArchive(&buf, testImage(), platforms, linuxAMD64); err != nil {
		t.Fatal(err)
	}
	_, _, images := readIndexArchive(t, buf.Bytes())
	if len(images) != 1 || *images[0].desc.Platform != armv7 || images[0].config.Variant != "v7" ||
		images[0].config.Architecture != "arm" {
		t.Errorf("images = %+v", images)
	}
}

func TestWriteIndexArchiveErrors(t *testing.T) {
	root := platformRootfs(t, "amd64")
	twice := []PlatformRootfs{{Platform: linuxAMD64, Rootfs: root}, {Platform: linuxAMD64, Rootfs: root}}
	if err := WriteIndexArchive(&bytes.Buffer{}, testImage(), twice, linuxAMD64); err == nil ||
		!strings.Contains(err.Error(), "twice") {
		t.Errorf("a platform given twice: err = %v", err)
	}
	if err := WriteIndexArchive(&bytes.Buffer{}, testImage(), nil, linuxAMD64); err == nil {
		t.Error("no platform accepted")
	}
	bad := testImage()
	bad.Ref = "Bad:1"
	if err := WriteIndexArchive(&bytes.Buffer{}, bad, twice[:1], linuxAMD64); err == nil {
		t.Error("an invalid reference accepted")
	}
}

func TestParsePlatform(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want Platform
		err  bool
	}{
		{in: "linux/amd64", want: linuxAMD64},
		{in: "linux/arm64", want: linuxARM64},
		{in: "linux/arm/v7", want: Platform{OS: "linux", Architecture: "arm", Variant: "v7"}},
		{in: "linux", err: true},
		{in: "linux/", err: true},
		{in: "/amd64", err: true},
		{in: "linux/arm/v7/x", err: true},
		{in: "linux/amd 64", err: true},
	} {
		got, err := ParsePlatform(tt.in)
		if tt.err != (err != nil) || got != tt.want {
			t.Errorf("ParsePlatform(%q) = %+v, %v", tt.in, got, err)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("ParsePlatform(%q).String() = %q", tt.in, got.String())
		}
	}
}

func TestRunPlatformFlags(t *testing.T) {
	amd64, arm64 := platformRootfs(t, "amd64"), platformRootfs(t, "arm64")
	out := filepath.Join(t.TempDir(), "img.tar")
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	err := run([]string{"-platform", "linux/arm64=" + arm64, "-platform", "linux/amd64=" + amd64,
		"-ref", "localhost/x:y", "-o", out, "-entrypoint", `["/bin/app"]`, "-label", "k=v"})
	if err != nil {
		t.Fatal(err)
	}
	archive, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, indexDesc, images := readIndexArchive(t, archive)
	if indexDesc.Annotations["io.containerd.image.name"] != "localhost/x:y" {
		t.Errorf("index.json's entry annotations = %v", indexDesc.Annotations)
	}
	// The order given is the image index's.
	if len(images) != 2 || images[0].config.Architecture != "arm64" || images[1].config.Architecture != "amd64" {
		t.Fatalf("images = %+v", images)
	}
	for _, img := range images {
		arch := img.config.Architecture
		if img.desc.Platform.Architecture != arch || string(img.layer["etc/arch"]) != arch {
			t.Errorf("%s: platform %+v, layer's etc/arch %q", arch, img.desc.Platform, img.layer["etc/arch"])
		}
		if img.config.Config.Labels["k"] != "v" || img.config.Config.Entrypoint[0] != "/bin/app" ||
			!img.config.Created.Equal(time.Unix(1700000000, 0)) {
			t.Errorf("%s config = %+v", arch, img.config)
		}
	}

	for _, argv := range [][]string{
		{"-platform", "linux/amd64=" + amd64, "-rootfs", amd64},
		{"-platform", "linux/amd64=" + amd64, "-arch", "arm64"},
		{"-platform", "linux/amd64=" + filepath.Join(amd64, "missing")},
		{"-platform", "linux/amd64=" + filepath.Join(amd64, "etc", "arch")},
		{"-platform", "linux/amd64"},
		{"-platform", "amd64=" + amd64},
		{"-platform", "linux/amd64=" + amd64, "-platform", "linux/amd64=" + arm64},
	} {
		if err := run(append(argv, "-ref", "x", "-o", out)); err == nil {
			t.Errorf("mkimage %s accepted", strings.Join(argv, " "))
		}
	}
}

// The layer of a platform is written like WriteArchive's: a regular file is
// stored with its mode, owned by root.
func TestWriteIndexArchiveLayerHeaders(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteIndexArchive(&buf, testImage(), twoPlatforms(t), linuxAMD64); err != nil {
		t.Fatal(err)
	}
	files, _, images := readIndexArchive(t, buf.Bytes())
	_, hdrs := readTar(t, bytes.NewReader(files[blobPath(images[1].manifest.Layers[0])]))
	var names []string
	for _, h := range hdrs {
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(testImage().Created) {
			t.Errorf("%s: uid %d gid %d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		if h.Name == "bin/app" && (h.Typeflag != tar.TypeReg || h.Mode != 0o755) {
			t.Errorf("bin/app = %+v", h)
		}
	}
	if got := strings.Join(names, " "); got != "bin/ bin/app etc/ etc/arch" {
		t.Errorf("arm64 layer entries = %q", got)
	}
}
