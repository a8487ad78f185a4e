package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Media types written by WriteArchive (OCI image spec v1.1).
const (
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
)

// Image describes the single-layer image WriteArchive produces.
type Image struct {
	// Ref is the image reference, e.g. "localhost/busybox:local". It is stored
	// normalized (see NormalizeRef).
	Ref string
	// OS and Architecture of the image's binaries, e.g. "linux" and "amd64",
	// and the architecture's Variant when it has one (e.g. "v7" of "arm").
	OS           string
	Architecture string
	Variant      string
	// Created is the image's creation time; the same time is used as the
	// modification time of every file in the layer, which keeps archives
	// byte-for-byte reproducible.
	Created time.Time

	Entrypoint   []string
	Cmd          []string
	Env          []string
	WorkingDir   string
	User         string
	ExposedPorts []string
	Labels       map[string]string
}

// descriptor is an OCI content descriptor.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// Platform is set on the manifests of an image index.
	Platform *Platform `json:"platform,omitempty"`
}

// Platform is the operating system and CPU architecture an image's binaries
// run on, as an image index names it ("linux/arm64", "linux/arm/v7").
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

func (p Platform) String() string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// ParsePlatform parses OS/ARCH or OS/ARCH/VARIANT, e.g. "linux/arm64".
func ParsePlatform(s string) (Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || strings.ContainsAny(s, " \t=") {
		return Platform{}, fmt.Errorf("platform %q: want OS/ARCH or OS/ARCH/VARIANT", s)
	}
	for _, p := range parts {
		if p == "" {
			return Platform{}, fmt.Errorf("platform %q: want OS/ARCH or OS/ARCH/VARIANT", s)
		}
	}
	p := Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = parts[2]
	}
	return p, nil
}

type imageConfig struct {
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Variant      string    `json:"variant,omitempty"`
	Created      time.Time `json:"created"`
	Config       struct {
		User         string              `json:"User,omitempty"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
		Env          []string            `json:"Env,omitempty"`
		Entrypoint   []string            `json:"Entrypoint,omitempty"`
		Cmd          []string            `json:"Cmd,omitempty"`
		WorkingDir   string              `json:"WorkingDir,omitempty"`
		Labels       map[string]string   `json:"Labels,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	History []struct {
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by"`
	} `json:"history"`
}

// WriteArchive writes an image archive with one uncompressed layer holding the
// contents of the directory rootfs. The archive is both an OCI image layout
// (oci-layout, index.json, blobs/) and a docker-archive (manifest.json pointing
// at the same blobs), the format `docker save` writes since Docker 25, so it can
// be imported with `ctr images import`, `docker load` or `kind load image-archive`.
//
// Files are stored owned by root with their permission bits; modification times
// are set to img.Created. Device files and sockets are rejected.
func WriteArchive(w io.Writer, rootfs string, img Image) error {
	ref, err := NormalizeRef(img.Ref)
	if err != nil {
		return err
	}
	m, err := buildManifest(rootfs, img)
	if err != nil {
		return err
	}
	defer m.close()

	manifestDesc := m.manifestDesc
	manifestDesc.Annotations = refAnnotations(ref)
	indexJSON, err := indexOf([]descriptor{manifestDesc})
	if err != nil {
		return err
	}
	dockerManifestJSON, err := dockerManifestOf(ref, m)
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	out := archiveWriter{tw: tw, mtime: img.Created, written: map[string]bool{}}
	out.dir("blobs/")
	out.dir("blobs/sha256/")
	out.manifest(m)
	out.bytes("index.json", indexJSON)
	out.bytes("manifest.json", dockerManifestJSON)
	out.bytes("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	if out.err != nil {
		return out.err
	}
	return tw.Close()
}

// PlatformRootfs is one platform of a multi-platform image and the root file
// system directory its layer holds.
type PlatformRootfs struct {
	Platform
	Rootfs string
}

// WriteIndexArchive writes a multi-platform image archive: an OCI image layout
// whose index.json has one entry, an image index (a blob of media type
// application/vnd.oci.image.index.v1+json) with a manifest for each platform,
// in the order given, its platform on its descriptor. Each manifest has a
// config and one layer as WriteArchive writes them; img's OS, Architecture and
// Variant are replaced by the platform's.
//
// The name annotations are on index.json's entry, the image index: containerd's
// import names images after the entries of index.json and takes the image to
// be what the entry points at, then walks down to the manifests of the
// platforms it imports (ctr images import: the host's, or all with
// --all-platforms). The manifests in the image index have no name of their own.
//
// The docker-archive part, manifest.json, lists the manifest of one platform
// only: the first one with docker's OS and architecture (the host's, as mkimage
// passes it), else the first platform. docker load takes no image index:
// manifest.json's entries carry no platform, and a second entry under the
// same tag would be another image that replaces the first, not a choice.
func WriteIndexArchive(w io.Writer, img Image, platforms []PlatformRootfs, docker Platform) error {
	ref, err := NormalizeRef(img.Ref)
	if err != nil {
		return err
	}
	if len(platforms) == 0 {
		return errors.New("no platform")
	}
	seen := map[Platform]bool{}
	for _, p := range platforms {
		if seen[p.Platform] {
			return fmt.Errorf("platform %s given twice", p.Platform)
		}
		seen[p.Platform] = true
	}

	var (
		built     []*builtManifest
		manifests []descriptor
	)
	defer func() {
		for _, m := range built {
			m.close()
		}
	}()
	dockerManifest := -1
	for i, p := range platforms {
		pimg := img
		pimg.OS, pimg.Architecture, pimg.Variant = p.OS, p.Architecture, p.Variant
		m, err := buildManifest(p.Rootfs, pimg)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Platform, err)
		}
		built = append(built, m)
		d := m.manifestDesc
		d.Platform = &Platform{Architecture: p.Architecture, OS: p.OS, Variant: p.Variant}
		manifests = append(manifests, d)
		if dockerManifest < 0 && p.OS == docker.OS && p.Architecture == docker.Architecture {
			dockerManifest = i
		}
	}
	if dockerManifest < 0 {
		dockerManifest = 0
	}

	indexBlob, err := indexOf(manifests)
	if err != nil {
		return err
	}
	indexDesc := blobDescriptor(mediaTypeIndex, indexBlob)
	indexDesc.Annotations = refAnnotations(ref)
	indexJSON, err := indexOf([]descriptor{indexDesc})
	if err != nil {
		return err
	}
	dockerManifestJSON, err := dockerManifestOf(ref, built[dockerManifest])
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	out := archiveWriter{tw: tw, mtime: img.Created, written: map[string]bool{}}
	out.dir("blobs/")
	out.dir("blobs/sha256/")
	for _, m := range built {
		out.manifest(m)
	}
	out.blob(indexDesc, bytes.NewReader(indexBlob))
	out.bytes("index.json", indexJSON)
	out.bytes("manifest.json", dockerManifestJSON)
	out.bytes("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	if out.err != nil {
		return out.err
	}
	return tw.Close()
}

// builtManifest is one image manifest, its config and its layer, ready to be
// written: the layer in a temporary file, the rest in memory.
type builtManifest struct {
	layer                               *os.File
	layerDesc, configDesc, manifestDesc descriptor
	configJSON, manifestJSON            []byte
}

// buildManifest writes the layer of rootfs to a temporary file and encodes
// the config and the manifest of img around it. The caller closes the result.
func buildManifest(rootfs string, img Image) (*builtManifest, error) {
	layer, err := os.CreateTemp("", "mkimage-layer-*.tar")
	if err != nil {
		return nil, fmt.Errorf("creating layer file: %w", err)
	}
	m := &builtManifest{layer: layer}
	ok := false
	defer func() {
		if !ok {
			m.close()
		}
	}()
	digester := sha256.New()
	if err := writeLayer(io.MultiWriter(layer, digester), rootfs, img.Created); err != nil {
		return nil, fmt.Errorf("writing layer: %w", err)
	}
	layerSize, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("sizing layer: %w", err)
	}
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("rewinding layer: %w", err)
	}
	m.layerDesc = descriptor{MediaType: mediaTypeLayer, Digest: digestOf(digester), Size: layerSize}

	m.configJSON, err = json.Marshal(newImageConfig(img, m.layerDesc.Digest))
	if err != nil {
		return nil, fmt.Errorf("encoding image config: %w", err)
	}
	m.configDesc = blobDescriptor(mediaTypeConfig, m.configJSON)

	m.manifestJSON, err = json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{2, mediaTypeManifest, m.configDesc, []descriptor{m.layerDesc}})
	if err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	m.manifestDesc = blobDescriptor(mediaTypeManifest, m.manifestJSON)
	ok = true
	return m, nil
}

func (m *builtManifest) close() {
	_ = m.layer.Close()
	_ = os.Remove(m.layer.Name())
}

// refAnnotations name the image where containerd's import looks: on the
// descriptors of index.json. containerd takes io.containerd.image.name as it
// is; org.opencontainers.image.ref.name is the tag, for other OCI tools.
func refAnnotations(ref string) map[string]string {
	return map[string]string{
		"io.containerd.image.name":          ref,
		"org.opencontainers.image.ref.name": tagOf(ref),
	}
}

// indexOf encodes an image index of manifests, for index.json or as a blob.
func indexOf(manifests []descriptor) ([]byte, error) {
	b, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{2, mediaTypeIndex, manifests})
	if err != nil {
		return nil, fmt.Errorf("encoding index: %w", err)
	}
	return b, nil
}

// dockerManifestOf encodes the manifest.json of a docker-archive naming ref,
// with m's config and layer.
func dockerManifestOf(ref string, m *builtManifest) ([]byte, error) {
	b, err := json.Marshal([]struct {
		Config   string
		RepoTags []string
		Layers   []string
	}{{blobPath(m.configDesc), []string{ref}, []string{blobPath(m.layerDesc)}}})
	if err != nil {
		return nil, fmt.Errorf("encoding docker manifest: %w", err)
	}
	return b, nil
}

func newImageConfig(img Image, layerDigest string) imageConfig {
	var c imageConfig
	c.Architecture = img.Architecture
	c.OS = img.OS
	c.Variant = img.Variant
	c.Created = img.Created.UTC()
	c.Config.User = img.User
	c.Config.Env = img.Env
	c.Config.Entrypoint = img.Entrypoint
	c.Config.Cmd = img.Cmd
	c.Config.WorkingDir = img.WorkingDir
	c.Config.Labels = img.Labels
	if len(img.ExposedPorts) > 0 {
		c.Config.ExposedPorts = make(map[string]struct{}, len(img.ExposedPorts))
		for _, p := range img.ExposedPorts {
			c.Config.ExposedPorts[p] = struct{}{}
		}
	}
	c.RootFS.Type = "layers"
	c.RootFS.DiffIDs = []string{layerDigest}
	c.History = append(c.History, struct {
		Created   time.Time `json:"created"`
		CreatedBy string    `json:"created_by"`
	}{c.Created, "mkimage (readyline deploy/node)"})
	return c
}

// writeLayer writes the tree under root as a tar stream in lexical order.
func writeLayer(w io.Writer, root string, mtime time.Time) error {
	tw := tar.NewWriter(w)
	hardlinks := map[[2]uint64]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := layerHeader(p, filepath.ToSlash(rel), info, mtime)
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if st, ok := info.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				key := [2]uint64{uint64(st.Dev), st.Ino}
				if first, seen := hardlinks[key]; seen {
					hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
				} else {
					hardlinks[key] = hdr.Name
				}
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func layerHeader(p, name string, info fs.FileInfo, mtime time.Time) (*tar.Header, error) {
	hdr := &tar.Header{
		Name:    name,
		Mode:    int64(info.Mode().Perm()),
		ModTime: mtime,
		Format:  tar.FormatPAX,
	}
	if info.Mode()&fs.ModeSetuid != 0 {
		hdr.Mode |= 0o4000
	}
	if info.Mode()&fs.ModeSetgid != 0 {
		hdr.Mode |= 0o2000
	}
	if info.Mode()&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch {
	case info.Mode().IsRegular():
		hdr.Typeflag = tar.TypeReg
		hdr.Size = info.Size()
	case info.IsDir():
		hdr.Typeflag = tar.TypeDir
		hdr.Name += "/"
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return nil, err
		}
		hdr.Typeflag = tar.TypeSymlink
		hdr.Linkname = target
	default:
		return nil, fmt.Errorf("%s: unsupported file type %s", p, info.Mode().Type())
	}
	return hdr, nil
}

// archiveWriter writes the outer archive and keeps the first error.
type archiveWriter struct {
	tw    *tar.Writer
	mtime time.Time
	err   error
	// written holds the blobs written so far: two platforms whose layers
	// are the same file share one blob.
	written map[string]bool
}

func (a *archiveWriter) header(name string, typ byte, mode, size int64) {
	if a.err != nil {
		return
	}
	a.err = a.tw.WriteHeader(&tar.Header{
		Name: name, Typeflag: typ, Mode: mode, Size: size, ModTime: a.mtime, Format: tar.FormatPAX,
	})
}

func (a *archiveWriter) dir(name string) { a.header(name, tar.TypeDir, 0o755, 0) }

func (a *archiveWriter) file(name string, size int64, r io.Reader) {
	a.header(name, tar.TypeReg, 0o644, size)
	if a.err == nil {
		_, a.err = io.CopyN(a.tw, r, size)
	}
}

func (a *archiveWriter) bytes(name string, b []byte) {
	a.file(name, int64(len(b)), bytes.NewReader(b))
}

// blob writes the blob d from r unless it is in the archive already.
func (a *archiveWriter) blob(d descriptor, r io.Reader) {
	if a.written[d.Digest] {
		return
	}
	a.written[d.Digest] = true
	a.file(blobPath(d), d.Size, r)
}

// manifest writes m's layer, config and manifest blobs, in that order.
func (a *archiveWriter) manifest(m *builtManifest) {
	a.blob(m.layerDesc, m.layer)
	a.blob(m.configDesc, bytes.NewReader(m.configJSON))
	a.blob(m.manifestDesc, bytes.NewReader(m.manifestJSON))
}

func blobDescriptor(mediaType string, b []byte) descriptor {
	sum := sha256.Sum256(b)
	return descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(b))}
}

func digestOf(h hash.Hash) string { return "sha256:" + hex.EncodeToString(h.Sum(nil)) }

func blobPath(d descriptor) string { return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:") }

// ErrInvalidRef is returned for image references NormalizeRef cannot accept.
var ErrInvalidRef = errors.New("invalid image reference")

// NormalizeRef returns ref in the fully qualified form containerd stores and the
// kubelet asks for: a registry host is added the way Docker does
// ("busybox" -> "docker.io/library/busybox:latest") and a missing tag becomes
// "latest". Digest references are not accepted.
func NormalizeRef(ref string) (string, error) {
	if ref == "" || strings.ContainsAny(ref, " \t@") || strings.HasSuffix(ref, ":") || strings.HasSuffix(ref, "/") {
		return "", fmt.Errorf("%w: %q", ErrInvalidRef, ref)
	}
	name, tag := ref, "latest"
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	if name != strings.ToLower(name) {
		return "", fmt.Errorf("%w: %q: repository names are lower case", ErrInvalidRef, ref)
	}
	first, _, hasSlash := strings.Cut(name, "/")
	isHost := hasSlash && (strings.ContainsAny(first, ".:") || first == "localhost")
	switch {
	case isHost:
	case !hasSlash:
		name = "docker.io/library/" + name
	default:
		name = "docker.io/" + name
	}
	return name + ":" + tag, nil
}

func tagOf(ref string) string { return ref[strings.LastIndex(ref, ":")+1:] }
