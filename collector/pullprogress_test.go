package collector

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	contentapi "github.com/containerd/containerd/api/services/content/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// fakeContent is a content store as containerd's content service shows it
// mid-pull: committed blobs with their labels, and ingests.
type fakeContent struct {
	contentapi.UnimplementedContentServer
	blobs    []*contentapi.Info
	bodies   map[string][]byte
	statuses []*contentapi.Status
	filters  []string
	ns       []string
}

func (f *fakeContent) ListStatuses(ctx context.Context, _ *contentapi.ListStatusesRequest) (*contentapi.ListStatusesResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.ns = append(f.ns, md.Get("containerd-namespace")...)
	return &contentapi.ListStatusesResponse{Statuses: f.statuses}, nil
}

func (f *fakeContent) List(req *contentapi.ListContentRequest, stream contentapi.Content_ListServer) error {
	f.filters = append(f.filters, req.GetFilters()...)
	// The one filter the reader sends: a label's value, matched by a
	// regular expression.
	key, quoted, _ := strings.Cut(strings.TrimPrefix(req.GetFilters()[0], "labels."), "~=")
	value, err := strconv.Unquote(quoted)
	if err != nil {
		return err
	}
	re, err := regexp.Compile(value)
	if err != nil {
		return err
	}
	var out []*contentapi.Info
	for _, b := range f.blobs {
		if v, ok := b.GetLabels()[strings.Trim(key, `"`)]; ok && re.MatchString(v) {
			out = append(out, b)
		}
	}
	return stream.Send(&contentapi.ListContentResponse{Info: out})
}

func (f *fakeContent) Read(req *contentapi.ReadContentRequest, stream contentapi.Content_ReadServer) error {
	return stream.Send(&contentapi.ReadContentResponse{Data: f.bodies[req.GetDigest()]})
}

// serveContent serves f on a unix socket, as containerd does.
func serveContent(t *testing.T, f *fakeContent) *PullProgressReader {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	contentapi.RegisterContentServer(srv, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	r, err := NewPullProgressReader("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestPullProgress: mid-pull of 127.0.0.1:5000/app:1 (three layers: one
// committed, one being written, one not begun), the reader finds the
// manifest by the registry's label, and counts the layers' bytes; another
// repository's blobs and a manifest of an earlier pull are not this one's.
// Before the manifest is there, the ingests begun since the call are.
func TestPullProgress(t *testing.T) {
	since := time.Now().Add(-10 * time.Second).Truncate(time.Second)
	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(since.Add(d)) }
	manifest, _ := json.Marshal(map[string]any{"layers": []layer{
		{Digest: "sha256:aaa", Size: 100e6}, {Digest: "sha256:bbb", Size: 150e6}, {Digest: "sha256:ccc", Size: 20e6}}})
	old, _ := json.Marshal(map[string]any{"layers": []layer{{Digest: "sha256:old", Size: 5}}})
	// The registry's host without its port, as containerd labels it.
	label := map[string]string{"containerd.io/distribution.source.127.0.0.1": "app"}
	f := &fakeContent{
		blobs: []*contentapi.Info{
			{Digest: "sha256:man", Size: int64(len(manifest)), Labels: label, CreatedAt: at(time.Second), UpdatedAt: at(time.Second)},
			// A layer the node had from another image: both repositories.
			{Digest: "sha256:aaa", Size: 100e6, Labels: map[string]string{"containerd.io/distribution.source.127.0.0.1": "base,app"},
				CreatedAt: at(4 * time.Second), UpdatedAt: at(4 * time.Second)},
			{Digest: "sha256:oldman", Size: int64(len(old)), Labels: label, CreatedAt: at(-time.Hour), UpdatedAt: at(-time.Hour)},
			{Digest: "sha256:prefix", Size: 7, Labels: map[string]string{"containerd.io/distribution.source.127.0.0.1": "application"}, UpdatedAt: at(time.Second)},
			{Digest: "sha256:other", Size: 7, Labels: map[string]string{"containerd.io/distribution.source.docker.io": "library/nginx"}, UpdatedAt: at(time.Second)},
		},
		bodies: map[string][]byte{"sha256:man": manifest, "sha256:oldman": old},
		statuses: []*contentapi.Status{
			{Ref: "layer-sha256:bbb", Offset: 12e6, Total: 150e6, StartedAt: at(2 * time.Second), UpdatedAt: at(9 * time.Second)},
		},
	}
	r := serveContent(t, f)
	ctx := context.Background()
	p, err := r.Progress(ctx, "127.0.0.1:5000/app:1", since)
	if err != nil {
		t.Fatal(err)
	}
	if p.Layers != 3 || p.LayersDone != 1 || p.InProgress != 1 || p.Bytes != 112e6 || p.Total != 270e6 || !p.LastByte.Equal(since.Add(9*time.Second)) {
		t.Errorf("mid-pull: %+v; want 3 layers, 1 done, 1 in progress, 112/270 MB, last byte at 9 s", p)
	}
	if want := `labels."containerd.io/distribution.source.127.0.0.1"~="(^|,)app(,|$)"`; len(f.filters) != 1 || f.filters[0] != want {
		t.Errorf("filters %q, want %q", f.filters, want)
	}
	if len(f.ns) != 1 || f.ns[0] != "k8s.io" {
		t.Errorf("namespace %q, want the CRI's k8s.io", f.ns)
	}

	// The registry has not sent the manifest yet: the ingests since the
	// call began, an older one (another pull's, abandoned) not.
	f.blobs = f.blobs[2:]
	f.statuses = append(f.statuses, &contentapi.Status{Ref: "layer-sha256:stale", Offset: 1e6, Total: 9e6, StartedAt: at(-time.Hour), UpdatedAt: at(-time.Hour)})
	p, err = r.Progress(ctx, "127.0.0.1:5000/app:1", since)
	if err != nil {
		t.Fatal(err)
	}
	if p.Layers != 0 || p.InProgress != 1 || p.Bytes != 12e6 || p.Total != 0 {
		t.Errorf("no manifest yet: %+v; want the one ingest since the call, 12 MB of no known total", p)
	}
}

// TestRepositoryOf: the registry and repository containerd labels a
// pull's blobs with.
func TestRepositoryOf(t *testing.T) {
	for image, want := range map[string]string{
		"nginx:1.27":                         "docker.io library/nginx",
		"nginx":                              "docker.io library/nginx",
		"grafana/grafana:11":                 "docker.io grafana/grafana",
		"docker.io/library/busybox@sha256:1": "docker.io library/busybox",
		"127.0.0.1:5000/readyline-e2e/app:1": "127.0.0.1:5000 readyline-e2e/app",
		"localhost/app":                      "localhost app",
		"registry.k8s.io/pause:3.10":         "registry.k8s.io pause",
	} {
		if host, repo := repositoryOf(image); host+" "+repo != want {
			t.Errorf("%s: %s %s, want %s", image, host, repo, want)
		}
	}
}
