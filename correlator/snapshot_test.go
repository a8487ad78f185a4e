package correlator

import (
	"encoding/json"
	"errors"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// pullBackOffPod is a pod whose image pull fails twice, then waits in
// ImagePullBackOff: a start in progress.
func pullBackOffPod(t testing.TB) *scenario {
	sc := newScenario(t, "pull-backoff", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:nope"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.1)
	sc.sandboxCallFor(0.3, 0.8, sandboxID, 0, 101)
	sc.cond(corev1.PodReadyToStartContainers, 0.9)
	uid := sc.uid
	pull := func(start, end float64) {
		sc.call(start, end, event.CRIPullImage, func(c *event.CRICall) { c.PodUID, c.Image, c.Err = uid, "nginx:nope", true })
	}
	pull(0.9, 1.4)
	sc.status(false, waiting("app", "ErrImagePull", `failed to pull and unpack image "docker.io/library/nginx:nope": not found`))
	sc.update(1.5)
	sc.status(false, waiting("app", "ImagePullBackOff", `Back-off pulling image "nginx:nope"`))
	sc.update(1.6)
	pull(11.6, 12.0)
	sc.status(false, waiting("app", "ErrImagePull", `failed to pull and unpack image "docker.io/library/nginx:nope": not found`))
	sc.update(12.1)
	sc.status(false, waiting("app", "ImagePullBackOff", `Back-off pulling image "nginx:nope"`))
	sc.update(12.2)
	sc.ticks(1, 20)
	return sc
}

// snapshotAt feeds sc's events up to s seconds and takes a snapshot of its
// pod, by name, with inFlight.
func snapshotAt(t *testing.T, sc *scenario, s float64, inFlight ...*event.CRICall) *Timeline {
	t.Helper()
	c := New(Config{})
	for _, ev := range sc.events {
		if ev.When().After(at(s)) {
			break
		}
		c.Handle(ev)
	}
	tl, ok := c.Snapshot(Query{Namespace: sc.pod.Namespace, Name: sc.pod.Name}, inFlight...)
	if !ok {
		t.Fatalf("no start of %s in progress at +%.1fs", sc.pod.Name, s)
	}
	return tl
}

func TestSnapshotWaitsOnThePull(t *testing.T) {
	sc := pullBackOffPod(t)
	tl := snapshotAt(t, sc, 15)
	if tl.Outcome != OutcomeStarting || !tl.AsOf.Equal(at(15)) || !tl.End.Equal(at(15)) {
		t.Errorf("outcome %s as of %v, end %v: want starting as of +15s", tl.Outcome, tl.AsOf.Sub(t0), tl.End.Sub(t0))
	}
	for _, want := range []string{"app: ImagePullBackOff after 2 failed pulls of nginx:nope", `Back-off pulling image "nginx:nope"`} {
		if !strings.Contains(tl.Waiting, want) {
			t.Errorf("waiting %q, want it to say %q", tl.Waiting, want)
		}
	}
	if len(tl.ImagePulls) != 2 || !tl.ImagePulls[1].Call.Err {
		t.Errorf("pulls %+v, want the two failed ones", tl.ImagePulls)
	}
	if tl.Facts == 0 {
		t.Error("no facts counted")
	}
	// By UID, too; and a pod of another name is not it.
	c := New(Config{})
	for _, ev := range sc.events {
		c.Handle(ev)
	}
	if got, ok := c.Snapshot(Query{UID: sc.uid}); !ok || got.Pod.Name != sc.pod.Name {
		t.Errorf("by uid: %v, %v", got, ok)
	}
	if _, ok := c.Snapshot(Query{Namespace: "default", Name: "other"}); ok {
		t.Error("a snapshot of a pod never seen")
	}
	if got := c.InProgress(); len(got) != 1 || got[0].Pod.UID != sc.uid || got[0].Outcome != OutcomeStarting {
		t.Errorf("in progress %+v", got)
	}
}

func TestSnapshotInFlightCalls(t *testing.T) {
	sc := newScenario(t, "slow-sandbox", corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.1)
	sc.ticks(1, 20)
	hung := &event.CRICall{Time: at(0.4), Method: event.CRIRunPodSandbox, PodUID: sc.uid}
	other := &event.CRICall{Time: at(0.5), Method: event.CRIPullImage, PodUID: "someone-else", Image: "redis:7"}
	tl := snapshotAt(t, sc, 12.4, hung, other)
	if len(tl.InFlight) != 1 || tl.InFlight[0].Method != event.CRIRunPodSandbox || !tl.InFlight[0].Start.Equal(at(0.4)) {
		t.Fatalf("in flight %+v, want the RunPodSandbox only", tl.InFlight)
	}
	// As of the correlator's clock, the last tick (+12s).
	if want := "RunPodSandbox: running for 11.6s, not returned yet"; !strings.HasPrefix(tl.Waiting, want) {
		t.Errorf("waiting %q, want %q first", tl.Waiting, want)
	}
	// Nothing of the call stays: the next snapshot without it has none.
	c := New(Config{})
	for _, ev := range sc.events {
		c.Handle(ev)
	}
	c.Snapshot(Query{UID: sc.uid}, hung)
	if tl, _ := c.Snapshot(Query{UID: sc.uid}); len(tl.InFlight) != 0 {
		t.Errorf("a call in flight was kept: %+v", tl.InFlight)
	}
}

// TestPropertySnapshotsChangeNothing replays every recording and random
// starts twice, once taking a snapshot of every start in progress after
// every event, and requires the same timelines both ways; and checks that
// no snapshot contradicts the start as it ended: each condition it shows is
// one the final timeline shows (or an earlier rise of it), each container
// attempt it shows is in the final one with the same process and exit.
func TestPropertySnapshotsChangeNothing(t *testing.T) {
	type run struct {
		name   string
		events []event.Event
		cfg    Config
	}
	var runs []run
	recs, _ := filepath.Glob("testdata/recordings/*.jsonl")
	for _, rec := range recs {
		name := strings.TrimSuffix(filepath.Base(rec), ".jsonl")
		runs = append(runs, run{name, readRecording(t, rec), configFor(name)})
	}
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		r := rand.New(rand.NewSource(int64(seed)))
		runs = append(runs, run{name: "random", events: jumble(r, randomStart(t, r, "snap", 0).events)})
	}
	if len(recs) == 0 {
		t.Fatal("no recordings")
	}
	taken := 0
	for _, rn := range runs {
		plain := New(rn.cfg)
		var want []*Timeline
		for _, ev := range rn.events {
			want = append(want, plain.Handle(ev)...)
		}
		want = append(want, plain.Flush()...)

		c := New(rn.cfg)
		var got []*Timeline
		snaps := map[string][]*Timeline{}
		for i, ev := range rn.events {
			got = append(got, c.Handle(ev)...)
			if len(rn.events) > 2000 && i%7 != 0 {
				continue // a long recording: every 7th event is enough
			}
			for _, s := range c.InProgress() {
				tl, ok := c.Snapshot(Query{UID: s.Pod.UID})
				if !ok {
					t.Fatalf("%s: %s listed in progress, no snapshot", rn.name, s.Pod)
				}
				snaps[s.Pod.UID] = append(snaps[s.Pod.UID], tl)
				taken++
			}
		}
		got = append(got, c.Flush()...)
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Errorf("%s: the snapshots changed the timelines", rn.name)
			continue
		}
		final := map[string]*Timeline{}
		for _, tl := range got {
			final[tl.Pod.UID] = tl // the last: a completion after a report
		}
		for uid, list := range snaps {
			for _, snap := range list {
				noContradiction(t, rn.name, snap, final[uid])
			}
		}
	}
	if taken < 1000 {
		t.Errorf("%d snapshots taken: the test did not look", taken)
	}
	t.Logf("%d snapshots of %d event streams", taken, len(runs))
}

// noContradiction fails when a snapshot says something the finished start
// does not.
func noContradiction(t *testing.T, what string, snap, final *Timeline) {
	t.Helper()
	if final == nil {
		t.Errorf("%s: a snapshot of %s, no timeline at the end", what, snap.Pod)
		return
	}
	if snap.Outcome == OutcomeStarting && snap.AsOf.IsZero() {
		t.Errorf("%s: a start in progress without AsOf", what)
	}
	checkBreakdown(t, what+" "+snap.Pod.String()+" as of "+snap.AsOf.String(), snap)
	for _, c := range snap.Conditions {
		ok := false
		for _, f := range final.Conditions {
			if f.Type != c.Type {
				continue
			}
			ok = f.Observed.Equal(c.Observed) || f.Coarse
			for _, e := range f.EarlierObserved {
				ok = ok || e.Equal(c.Observed)
			}
		}
		if !ok {
			t.Errorf("%s %s: the snapshot as of %v shows %s observed at %v; the final timeline does not", what, snap.Pod, snap.AsOf, c.Type, c.Observed)
		}
	}
	attempts := map[string]ContainerAttempt{}
	for _, c := range final.Containers {
		for _, a := range c.Attempts {
			attempts[a.ContainerID] = a
		}
	}
	for _, c := range snap.Containers {
		for _, a := range c.Attempts {
			if a.ContainerID == "" {
				continue
			}
			f, ok := attempts[a.ContainerID]
			switch {
			case !ok:
				t.Errorf("%s %s: attempt %s of %s in a snapshot, not at the end", what, snap.Pod, a.ContainerID, c.Name)
			case a.Process != nil && f.Process != nil && !a.Process.Exec.Equal(f.Process.Exec):
				t.Errorf("%s %s: %s's process exec %v in a snapshot, %v at the end", what, snap.Pod, c.Name, a.Process.Exec, f.Process.Exec)
			case a.Process != nil && !a.Process.Exit.IsZero() && (f.Process == nil || !a.Process.Exit.Equal(f.Process.Exit)):
				t.Errorf("%s %s: %s's process exit %v in a snapshot, not at the end", what, snap.Pod, c.Name, a.Process.Exit)
			}
		}
	}
}

// readRecording reads a recording's events.
func readRecording(t *testing.T, path string) []event.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []event.Event
	r := event.NewReader(f)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
}

// maxSnapshotCost bounds one question's derivation (README).
const maxSnapshotCost = 50 * time.Millisecond

// BenchmarkSnapshot is the cost of one question about a start in progress:
// what the daemon's loop spends on it between two events. The start is as
// large as one gets: a container that has run MaxProcessesPerPod processes
// (an exec probe every second for over an hour), with an ExecSync call for
// each.
func BenchmarkSnapshot(b *testing.B) {
	sc := startedApp(b, "busy", corev1.PodSpec{Containers: []corev1.Container{{Name: "app",
		ReadinessProbe: execProbe(0, 1, "check", "--deep")}}})
	sc.status(false, running("app", idMain, 1, true, false))
	sc.update(1.1)
	c := New(Config{Timeout: 2 * time.Hour})
	// One probe process a second, MaxProcessesPerPod of them: over an hour.
	probes := c.cfg.MaxProcessesPerPod
	if probes != 4096 || time.Duration(probes)*time.Second <= time.Hour {
		b.Fatalf("%d processes a start: the README says the largest start is 4096, an exec probe a second for over an hour", probes)
	}
	for i := range probes {
		s := 2 + float64(i)
		pid := uint32(20000 + i)
		sc.call(s-0.01, s+0.02, event.CRIExecSync, func(c *event.CRICall) { c.ContainerID, c.Cmd, c.Err = idMain, []string{"check", "--deep"}, true })
		sc.exec(s, idMain, pid, shimPID, "check", "--deep")
		sc.exit(s+0.01, idMain, pid, 1)
		if i%60 == 0 {
			sc.events = append(sc.events, &event.Tick{Time: at(s)})
		}
	}
	for _, ev := range sc.events {
		c.Handle(ev)
	}
	tl, ok := c.Snapshot(Query{UID: sc.uid})
	if !ok || len(tl.Containers[0].Attempts) != 1 {
		b.Fatalf("snapshot %v: %+v", ok, tl)
	}
	if n := len(tl.Containers[0].Attempts[0].Probes); n < 64 {
		b.Fatalf("%d probe attempts in the snapshot: the start is not the busy one meant", n)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Snapshot(Query{UID: sc.uid}); !ok {
			b.Fatal("no snapshot")
		}
	}
	// The README's bound: a question holds the daemon's loop (and the
	// node's events behind it, 8192 of room) for at most this.
	if per := b.Elapsed() / time.Duration(b.N); per > maxSnapshotCost {
		b.Errorf("a snapshot of the largest start took %v, over %v", per, maxSnapshotCost)
	}
}
