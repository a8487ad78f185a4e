// Command imagepush fills the local node's image registry: it pushes the image
// archives that deploy/node/mkimage writes, one large image made of a base
// archive and a layer of random data, and makes sure that one reference is
// absent, so that pulls of every kind (small, large, missing) can be tried
// against a real registry.
//
//	imagepush -registry 127.0.0.1:5000 \
//	    -large readyline/large:256mib -large-base busybox.tar -large-mib 256 -large-seed 13 \
//	    -absent readyline/missing:nope \
//	    pause.tar busybox.tar nginx.tar coredns.tar
//
// An archive whose image is named localhost/busybox:local goes to
// REGISTRY/PREFIX/busybox:local (-prefix, default readyline), unchanged: the manifest in the registry is
// the one containerd imported, digest for digest. A reference whose manifest
// is already in the registry is skipped, and blobs already there are not sent
// again, so a run against a filled registry only reads.
//
// The random layer is generated from -large-seed (ChaCha8), never stored: the
// same seed and size give the same layer, byte for byte, on every machine.
package main

import (
	"archive/tar"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("imagepush: ")
	if err := run(os.Args[1:]); err != nil {
		log.Fatal(err)
	}
}

func run(argv []string) error {
	fs := flag.NewFlagSet("imagepush", flag.ContinueOnError)
	var (
		registry  = fs.String("registry", "127.0.0.1:5000", "registry address (plain HTTP)")
		prefix    = fs.String("prefix", "readyline", "repository path the archives' images are pushed under")
		large     = fs.String("large", "", "repository:tag of the large image in the registry, e.g. readyline/large:256mib (empty: none)")
		largeBase = fs.String("large-base", "", "image archive the large image is built on")
		largeMiB  = fs.Int64("large-mib", 256, "size of the large image's random layer in MiB")
		largeSeed = fs.Uint64("large-seed", 13, "seed of the large image's random data")
		absent    = fs.String("absent", "", "repository:tag that must not exist in the registry (deleted if it does)")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: imagepush [flags] ARCHIVE...\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *large != "" && *largeBase == "" {
		return errors.New("-large needs -large-base")
	}
	if *largeMiB <= 0 {
		return fmt.Errorf("-large-mib must be positive, got %d", *largeMiB)
	}
	work, err := os.MkdirTemp("", "imagepush-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	p := pusher{registry: *registry, work: work}

	for _, archive := range fs.Args() {
		img, src, err := p.loadArchive(archive)
		if err != nil {
			return err
		}
		ref, err := p.ref(path.Join(*prefix, lastElem(src)))
		if err != nil {
			return err
		}
		if err := p.push(ref, img); err != nil {
			return err
		}
	}

	if *large != "" {
		base, _, err := p.loadArchive(*largeBase)
		if err != nil {
			return err
		}
		ref, err := p.ref(*large)
		if err != nil {
			return err
		}
		img, err := largeImage(base, *largeSeed, *largeMiB<<20)
		if err != nil {
			return fmt.Errorf("making the large image: %w", err)
		}
		if err := p.push(ref, img); err != nil {
			return err
		}
	}

	if *absent != "" {
		ref, err := p.ref(*absent)
		if err != nil {
			return err
		}
		if err := p.ensureAbsent(ref); err != nil {
			return err
		}
	}
	return nil
}

// pusher pushes to one registry over plain HTTP.
type pusher struct {
	registry string
	work     string // where archives are unpacked
}

func (p pusher) ref(repoTag string) (name.Reference, error) {
	ref, err := name.ParseReference(p.registry+"/"+repoTag, name.Insecure, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("parsing %q: %w", repoTag, err)
	}
	return ref, nil
}

// loadArchive unpacks an archive written by mkimage (an OCI image layout in a
// tar) and returns its one image and the name it was written with
// (io.containerd.image.name, e.g. localhost/busybox:local).
func (p pusher) loadArchive(archive string) (v1.Image, string, error) {
	dir := filepath.Join(p.work, strings.TrimSuffix(filepath.Base(archive), ".tar"))
	if _, err := os.Stat(dir); err != nil {
		if err := untar(archive, dir); err != nil {
			return nil, "", fmt.Errorf("unpacking %s: %w", archive, err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, "", fmt.Errorf("reading the OCI layout in %s: %w", archive, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("reading index.json of %s: %w", archive, err)
	}
	if len(im.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s holds %d images, want 1", archive, len(im.Manifests))
	}
	desc := im.Manifests[0]
	src := desc.Annotations["io.containerd.image.name"]
	if src == "" {
		return nil, "", fmt.Errorf("%s: its image has no io.containerd.image.name annotation", archive)
	}
	img, err := idx.Image(desc.Digest)
	if err != nil {
		return nil, "", fmt.Errorf("reading image %s of %s: %w", desc.Digest, archive, err)
	}
	return img, src, nil
}

// push writes img to ref unless the registry already has that manifest there.
// remote.Write asks for each blob first and only uploads the missing ones.
func (p pusher) push(ref name.Reference, img v1.Image) error {
	t0 := time.Now()
	want, err := img.Digest()
	if err != nil {
		return fmt.Errorf("computing the digest of %s: %w", ref, err)
	}
	size, err := imageSize(img)
	if err != nil {
		return fmt.Errorf("sizing %s: %w", ref, err)
	}
	if have, err := remote.Head(ref); err == nil && have.Digest == want {
		log.Printf("%s@%s present (%s)", ref, want, mib(size))
		return nil
	} else if err != nil && !isNotFound(err) {
		return fmt.Errorf("asking the registry for %s: %w", ref, err)
	}
	if err := remote.Write(ref, img); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	log.Printf("%s@%s pushed (%s) in %.1fs", ref, want, mib(size), time.Since(t0).Seconds())
	return nil
}

// ensureAbsent deletes ref from the registry if it is there and checks that
// the registry then answers not found for it.
func (p pusher) ensureAbsent(ref name.Reference) error {
	_, err := remote.Head(ref)
	if err == nil {
		log.Printf("%s exists, deleting it", ref)
		if err := remote.Delete(ref); err != nil {
			return fmt.Errorf("deleting %s: %w", ref, err)
		}
		_, err = remote.Head(ref)
	}
	if !isNotFound(err) {
		return fmt.Errorf("%s should not exist, but the registry answers: %v", ref, err)
	}
	log.Printf("%s absent (the registry answers 404)", ref)
	return nil
}

func isNotFound(err error) bool {
	var terr *transport.Error
	return errors.As(err, &terr) && terr.StatusCode == http.StatusNotFound
}

// largeImage is base with one more layer: a file of size bytes of ChaCha8
// output from seed, at /large/random.bin.
func largeImage(base v1.Image, seed uint64, size int64) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return randomLayerTar(seed, size), nil
	},
		// Random data does not compress: stored deflate blocks keep the
		// layer's bytes independent of the compressor's version and cost no
		// CPU, while the pull still goes through gzip like a real image's.
		tarball.WithCompressionLevel(gzip.NoCompression),
		tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	return mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: time.Unix(0, 0).UTC()},
			CreatedBy: fmt.Sprintf("imagepush: /large/random.bin, %s of ChaCha8 output from seed %d", mib(size), seed),
			Comment:   "deploy/node/tools/imagepush",
		},
	})
}

// randomLayerTar streams an uncompressed layer holding /large/random.bin.
func randomLayerTar(seed uint64, size int64) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeRandomLayer(pw, seed, size))
	}()
	return pr
}

func writeRandomLayer(w io.Writer, seed uint64, size int64) error {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rng := rand.NewChaCha8(key)
	epoch := time.Unix(0, 0).UTC()
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "large/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "large/random.bin", Mode: 0o644, Size: size, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, rng, size); err != nil {
		return err
	}
	return tw.Close()
}

func imageSize(img v1.Image) (int64, error) {
	layers, err := img.Layers()
	if err != nil {
		return 0, err
	}
	var total int64
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// lastElem prints the last path element and tag of an image name:
// localhost/busybox:local -> busybox:local.
func lastElem(ref string) string { return ref[strings.LastIndex(ref, "/")+1:] }

// untar unpacks the regular files and directories of archive into dir.
func untar(archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("entry %q leaves the archive", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			_, err = io.Copy(out, tr)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: unexpected type %c", h.Name, h.Typeflag)
		}
	}
}
