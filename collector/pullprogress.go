package collector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/readyline/readyline/collector/event"
)

// PullProgressReader reads how far the runtime's pulls in flight have come
// from containerd's content store, which the CRI has no word for (KEP-3542):
// the blobs a pull writes are ingests (ref layer-<digest>, offset of total)
// until they are committed, and each blob a pull fetched carries the
// label containerd.io/distribution.source.<registry>=<repository>. A pull's
// manifest, found by that label, lists its layers: each is done
// (committed), in progress (an ingest) or not begun. It is asked only
// when a question about a start finds a PullImage in flight; a runtime
// without containerd's content service (CRI-O) answers nothing, and the
// pull is drawn without bytes. It is safe for concurrent use.
type PullProgressReader struct {
	content contentapi.ContentClient
	close   func() error
}

// criNamespace is the containerd namespace of the CRI plugin's images.
const criNamespace = "k8s.io"

// maxManifestBytes bounds a manifest read from the content store.
const maxManifestBytes = 1 << 20

// NewPullProgressReader reads the content store of the containerd at
// endpoint (unix:///run/containerd/containerd.sock: the CRI's socket).
// It connects when first asked.
func NewPullProgressReader(endpoint string) (*PullProgressReader, error) {
	cc, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		return nil, fmt.Errorf("the runtime's content store at %s: %w", endpoint, err)
	}
	return &PullProgressReader{content: contentapi.NewContentClient(cc), close: cc.Close}, nil
}

// newPullProgressReader reads content (tests).
func newPullProgressReader(content contentapi.ContentClient) *PullProgressReader {
	return &PullProgressReader{content: content, close: func() error { return nil }}
}

// Close closes the connection.
func (r *PullProgressReader) Close() error { return r.close() }

// Progress says how far the pull of image, begun at since, has come. With
// its manifest found: the layers' bytes of their total; without (the
// registry has not answered yet, or an older containerd): the ingests
// written since it began.
func (r *PullProgressReader) Progress(ctx context.Context, image string, since time.Time) (*event.PullProgress, error) {
	ctx = metadata.AppendToOutgoingContext(ctx, "containerd-namespace", criNamespace)
	st, err := r.content.ListStatuses(ctx, &contentapi.ListStatusesRequest{})
	if err != nil {
		return nil, fmt.Errorf("the runtime's ingests: %w", err)
	}
	p := &event.PullProgress{AsOf: time.Now().UTC()}
	ingests := map[string]*contentapi.Status{} // by digest
	for _, s := range st.GetStatuses() {
		if d := ingestDigest(s); d != "" {
			ingests[d] = s
		}
	}
	host, repo := repositoryOf(image)
	blobs, err := r.labeled(ctx, host, repo)
	if err != nil {
		return nil, err
	}
	layers := r.layersOf(ctx, blobs, since)
	if layers == nil {
		// No manifest yet: the ingests begun since the call began.
		for _, s := range ingests {
			if s.GetStartedAt().AsTime().Before(since.Add(-time.Second)) {
				continue
			}
			p.InProgress++
			p.Bytes += s.GetOffset()
			p.LastByte = latestTime(p.LastByte, s.GetUpdatedAt().AsTime())
		}
		return p, nil
	}
	for _, l := range layers {
		p.Layers++
		p.Total += l.Size
		switch s, ok := ingests[l.Digest]; {
		case ok:
			p.InProgress++
			p.Bytes += s.GetOffset()
			p.LastByte = latestTime(p.LastByte, s.GetUpdatedAt().AsTime())
		case blobs[l.Digest] != nil:
			p.LayersDone++
			p.Bytes += l.Size
			p.LastByte = latestTime(p.LastByte, blobs[l.Digest].GetCreatedAt().AsTime())
		}
	}
	return p, nil
}

// ingestDigest is the digest an ingest writes: its expected one, or the
// digest in its ref (remotes.MakeRefKey: layer-sha256:..., and the like).
func ingestDigest(s *contentapi.Status) string {
	if s.GetExpected() != "" {
		return s.GetExpected()
	}
	_, d, _ := strings.Cut(s.GetRef(), "-")
	return d
}

// labeled lists the committed blobs fetched from host/repo, by digest.
// containerd's label names the registry by its host name alone, without
// its port (docker.AppendDistributionSourceLabel: url.Hostname).
func (r *PullProgressReader) labeled(ctx context.Context, host, repo string) (map[string]*contentapi.Info, error) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	// The label's value lists every repository the blob came from
	// (comma-separated): a layer shared with another image has both.
	filter := `labels."containerd.io/distribution.source.` + host + `"~=` + strconv.Quote(`(^|,)`+regexp.QuoteMeta(repo)+`(,|$)`)
	stream, err := r.content.List(ctx, &contentapi.ListContentRequest{Filters: []string{filter}})
	if err != nil {
		return nil, fmt.Errorf("the runtime's content of %s/%s: %w", host, repo, err)
	}
	out := map[string]*contentapi.Info{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the runtime's content of %s/%s: %w", host, repo, err)
		}
		for _, info := range resp.GetInfo() {
			out[info.GetDigest()] = info
		}
	}
}

// layer is one layer a manifest lists.
type layer struct {
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// layersOf reads, among blobs, the image manifest this pull fetched (the
// one labeled since it began, the latest), and returns its layers; nil
// when there is none.
func (r *PullProgressReader) layersOf(ctx context.Context, blobs map[string]*contentapi.Info, since time.Time) []layer {
	var newest *contentapi.Info
	var layers []layer
	for _, info := range blobs {
		if info.GetSize() > maxManifestBytes || info.GetUpdatedAt().AsTime().Before(since.Add(-time.Second)) {
			continue
		}
		if newest != nil && !info.GetUpdatedAt().AsTime().After(newest.GetUpdatedAt().AsTime()) {
			continue
		}
		body, err := r.read(ctx, info.GetDigest(), info.GetSize())
		if err != nil {
			continue
		}
		var m struct {
			Layers []layer `json:"layers"`
		}
		if json.Unmarshal(body, &m) != nil || len(m.Layers) == 0 {
			continue // a layer, a config or an index: not a manifest
		}
		newest, layers = info, m.Layers
	}
	return layers
}

// read reads a committed blob of size bytes.
func (r *PullProgressReader) read(ctx context.Context, digest string, size int64) ([]byte, error) {
	stream, err := r.content.Read(ctx, &contentapi.ReadContentRequest{Digest: digest, Size: size})
	if err != nil {
		return nil, err
	}
	var out []byte
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if out = append(out, resp.GetData()...); int64(len(out)) > size {
			return nil, fmt.Errorf("blob %s is over its size %d", digest, size)
		}
	}
}

// repositoryOf is the registry host and repository of an image reference,
// as containerd labels what it fetched from them: docker.io/library/nginx
// for nginx:1.27.
func repositoryOf(image string) (host, repo string) {
	name, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	host, rest, ok := strings.Cut(name, "/")
	if !ok || (!strings.ContainsAny(host, ".:") && host != "localhost") {
		host, rest = "docker.io", name
	}
	if host == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return host, rest
}

func latestTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b.UTC()
	}
	return a
}
