package correlator

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/readyline/readyline/collector/event"
)

var writeRecordings = flag.Bool("write-recordings", false, "rewrite the synthetic recordings in testdata/recordings from their scenarios")

// syntheticRecordings are the recordings of testdata/recordings written
// from scenarios, by name: what no recording of a real node shows yet.
// The golden test replays them like the others.
var syntheticRecordings = map[string]func(*testing.T) []event.Event{
	"pulls-node": pullNode,
	"steps-node": stepsNode,
}

// stepsNode is a node where two pods start with the critical path's
// steps that no other recording has: csi waits for its volume's CSI
// calls (one of them failed) and for a RunPodSandbox retried after it
// failed, then is Ready; graceful is killed by the kubelet for its
// startup probe, again and again (gracefulKills). With the other
// recordings, every kind of step is in a golden timeline, for the
// exporter's tests to draw.
func stepsNode(t *testing.T) []event.Event {
	csi := csiPod(t, "csi")
	csi.csiCall(0.3, 5.3, event.CSINodeStageVolume, false)
	csi.csiCall(5.31, 5.8, event.CSINodePublishVolume, true)
	csi.csiCall(6.3, 7.3, event.CSINodePublishVolume, false)
	uid := csi.uid
	csi.call(7.4, 7.9, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.Err = uid, true })
	csi.sandboxAndReady(9.5)
	return mergeEvents(csi, gracefulKills(t, true))
}

// TestSyntheticRecordingsCurrent fails when a committed synthetic
// recording is not what its scenarios write (rewrite them with
// -write-recordings, then the goldens with -update).
func TestSyntheticRecordingsCurrent(t *testing.T) {
	for name, events := range syntheticRecordings {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			w := event.NewWriter(&buf)
			for _, ev := range events(t) {
				if err := w.Write(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "recordings", name+".jsonl")
			if *writeRecordings {
				if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -write-recordings to create it)", err)
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%s is not what its scenarios write (rerun with -write-recordings)", path)
			}
		})
	}
}
