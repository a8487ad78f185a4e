package correlator

import (
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// pullRecording is a synthetic recording, written from the scenarios of
// pullNode (see syntheticRecordings), that the golden test replays: its
// golden shows the image pulls' rules as one reviewable diff.
const pullRecording = "testdata/recordings/pulls-node.jsonl"

// pullNode is a node with the serialized puller where three pods start:
// web pulls nginx (50 MB, sampled twice as it comes) while cache, whose sandbox was ready meanwhile,
// waits for it; nope's first pull waits for both, and its image does not
// exist: three failed pulls with back-off between them, until the start
// is reported at its 40 s deadline and, still starting, flushed.
func pullNode(t *testing.T) []event.Event {
	web := pullPod(t, "web", 0.3, 0.8, ctr("nginx", "nginx:1.27"))
	web.pullSample(2.0, 1.0, "nginx:1.27", 9_000_000, 50_000_000, 1)
	web.pullSample(4.0, 1.0, "nginx:1.27", 32_000_000, 50_000_000, 3)
	web.pull(1.0, 6.0, "nginx:1.27", false, 50_000_000)
	web.startContainer(6.2, "nginx")
	web.ready(6.6)
	cache := pullPod(t, "cache", 0.4, 1.2, ctr("redis", "redis"))
	cache.pull(6.05, 8.0, "redis:latest", false, 0)
	cache.startContainer(8.1, "redis")
	cache.ready(8.5)
	nope := pullPod(t, "nope", 2.0, 2.4, ctr("app", "nginx:nope"))
	notFound := `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": not found`
	for _, p := range [][2]float64{{8.05, 8.5}, {18.6, 19.0}, {39.1, 39.4}} {
		nope.pull(p[0], p[1], "nginx:nope", true, 0)
		nope.status(false, waiting("app", "ErrImagePull", notFound))
		nope.update(p[1] + 0.1)
		nope.status(false, waiting("app", "ImagePullBackOff", `Back-off pulling image "nginx:nope": ErrImagePull: `+notFound))
		nope.update(p[1] + 0.5)
	}
	nope.ticks(0, 50)
	return mergeEvents(web, cache, nope)
}

// TestPullRecording checks what the pull recording must show,
// independently of its golden file.
func TestPullRecording(t *testing.T) {
	tls := map[string][]*Timeline{}
	for _, tl := range replayFile(t, pullRecording, configFor("pulls-node")) {
		tls[tl.Pod.Name] = append(tls[tl.Pod.Name], tl)
	}
	if len(tls["web"]) != 1 || len(tls["cache"]) != 1 || len(tls["nope"]) != 2 {
		t.Fatalf("timelines %v", tls)
	}
	if p := tls["web"][0].ImagePulls[0].Progress; len(p) != 2 || p[0].Bytes != 9_000_000 || p[1].Bytes != 32_000_000 || !p[1].Time.Equal(at(4.0)) {
		t.Errorf("web's pull's progress %+v, want its two samples", p)
	}
	if w := tls["cache"][0].ImagePulls[0].Wait; w == nil || w.Duration() != 4850*time.Millisecond || w.Behind[0].Image != "nginx:1.27" {
		t.Errorf("cache's wait %+v", w)
	}
	report := tls["nope"][0]
	if !report.Partial || len(report.ImagePulls) != 3 || !strings.Contains(report.Reason, "app: ImagePullBackOff after 3 failed pulls of nginx:nope (") {
		t.Errorf("nope's report %+v", report)
	}
	first := report.ImagePulls[0]
	if w := first.Wait; w == nil || len(w.Behind) != 2 || w.Behind[0].Image != "nginx:1.27" || w.Behind[1].Image != "redis:latest" || !w.Start.Equal(at(2.4)) {
		t.Errorf("nope's first pull %+v", first)
	}
	if b := report.ImagePulls[2].BackOff; b != 20100*time.Millisecond {
		t.Errorf("nope's second back-off %v", b)
	}
}
