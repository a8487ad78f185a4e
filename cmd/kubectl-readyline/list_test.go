package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
)

// listAnswer is `readyline explain --json`'s list of starts.
func listAnswer(t *testing.T, starts ...exporter.TimelineSummary) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"timelines": starts})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func summary(namespace, name string, start time.Time, took time.Duration) exporter.TimelineSummary {
	return exporter.TimelineSummary{Namespace: namespace, Name: name, UID: "uid-" + name, Outcome: correlator.OutcomeReady,
		Start: start, End: start.Add(took), DurationSeconds: took.Seconds()}
}

// listFixture: n1 and n2 answer (n1's previous readyline pod still
// terminating), n3's readyline fails, n4's is Pending.
func listFixture(t *testing.T) (*daemonSet, *fakeConn) {
	ending := daemonPod("rl-n1-old", "n1", corev1.PodRunning, true, t0.Add(-time.Hour))
	ending.DeletionTimestamp = &metav1.Time{Time: t0}
	answers := map[string]string{
		"rl-n1": listAnswer(t, summary("team", "web", t0.Add(time.Minute), 1500*time.Millisecond), summary("kube-system", "dns", t0, time.Second)),
		"rl-n2": listAnswer(t, summary("team", "db", t0.Add(2*time.Minute), 12*time.Second), summary("team", "web", t0, 2*time.Second)),
	}
	conn := &fakeConn{answer: func(daemon *corev1.Pod, args []string, stdout, stderr io.Writer) error {
		if !slices.Equal(args, []string{"--json"}) {
			return fmt.Errorf("list asked %v, want --json", args)
		}
		a, ok := answers[daemon.Name]
		if !ok {
			fmt.Fprintln(stderr, "readyline explain: asking the daemon at 127.0.0.1:9465: connection refused")
			return exitError(1)
		}
		_, err := io.WriteString(stdout, a)
		return err
	}}
	ds := testDaemonSet(t, conn, nil, ending,
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0), daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0),
		daemonPod("rl-n3", "n3", corev1.PodRunning, true, t0), daemonPod("rl-n4", "n4", corev1.PodPending, false, t0))
	return ds, conn
}

// TestList: the starts of every node that answers, in the namespace,
// newest first, with their node; the nodes that did not answer on stderr,
// and a non-zero exit.
func TestList(t *testing.T) {
	ds, conn := listFixture(t)
	now := t0.Add(time.Hour)
	var stdout, stderr bytes.Buffer
	err := ds.list(context.Background(), "team", "text", &stdout, &stderr, now)
	if !errors.Is(err, errReported) {
		t.Errorf("list with failing nodes: %v, want errReported (exit status 1)", err)
	}
	want := `NAME   NODE   OUTCOME   DURATION   AGE
db     n2     ready     12s        58m
web    n1     ready     1.5s       59m
web    n2     ready     2s         60m
`
	if got := stdout.String(); got != want {
		t.Errorf("list printed\n%s\nwant\n%s", got, want)
	}
	for _, w := range []string{
		"error: node n3: the readyline (pod readyline/rl-n3) answered: asking the daemon at 127.0.0.1:9465: connection refused\n",
		"error: node n4: readyline pod rl-n4 is Pending, not asked\n",
	} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr %q does not say %q", stderr.String(), w)
		}
	}
	if len(conn.calls) != 3 || strings.Contains(stderr.String(), "n1") {
		t.Errorf("asked %v, want the 3 running readyline pods, and nothing said of n1's that ends:\n%s", conn.calls, stderr.String())
	}

	stdout.Reset()
	ds.list(context.Background(), "", "text", &stdout, io.Discard, now)
	if got := stdout.String(); !strings.HasPrefix(got, "NAMESPACE     NAME   NODE") || !strings.Contains(got, "kube-system   dns    n1") {
		t.Errorf("list -A printed\n%s\nwant a NAMESPACE column and kube-system's pod", got)
	}

	stdout.Reset()
	stderr.Reset()
	ds.list(context.Background(), "empty", "text", &stdout, &stderr, now)
	if stdout.Len() > 0 || !strings.Contains(stderr.String(), "No pod starts kept by readyline in empty namespace.") {
		t.Errorf("an empty list printed %q, %q", stdout.String(), stderr.String())
	}
}

// TestListJSON: -o json is the daemon's list, merged, each start with its
// node.
func TestListJSON(t *testing.T) {
	ds, _ := listFixture(t)
	var stdout bytes.Buffer
	ds.list(context.Background(), "team", "json", &stdout, io.Discard, t0)
	var got startList
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("list -o json: %v\n%s", err, stdout.Bytes())
	}
	var names []string
	for _, s := range got.Timelines {
		names = append(names, s.Node+":"+s.Namespace+"/"+s.Name+":"+s.UID)
	}
	if want := []string{"n2:team/db:uid-db", "n1:team/web:uid-web", "n2:team/web:uid-web"}; !slices.Equal(names, want) {
		t.Errorf("list -o json has %v, want %v", names, want)
	}

	stdout.Reset()
	ds.list(context.Background(), "empty", "json", &stdout, io.Discard, t0)
	if got := strings.TrimSpace(stdout.String()); got != "{\n  \"timelines\": []\n}" {
		t.Errorf("an empty list -o json: %s", got)
	}
}

// TestListForbidden: pods/exec forbidden is one error, not one per node.
func TestListForbidden(t *testing.T) {
	refused := &fakeConn{answer: func(*corev1.Pod, []string, io.Writer, io.Writer) error {
		return errors.New("unable to upgrade connection: forbidden")
	}}
	ds := testDaemonSet(t, refused, []string{"create pods/exec"},
		daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0), daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0))
	var stderr bytes.Buffer
	err := ds.list(context.Background(), "team", "text", io.Discard, &stderr, t0)
	if !errors.Is(err, errReported) {
		t.Errorf("list: %v, want errReported", err)
	}
	if n := strings.Count(stderr.String(), "may not create pods/exec in namespace readyline"); n != 1 {
		t.Errorf("stderr says pods/exec is forbidden %d times, want once:\n%s", n, stderr.String())
	}

	ds = testDaemonSet(t, refused, nil)
	wantErr(t, ds.list(context.Background(), "team", "text", io.Discard, io.Discard, t0), "no readyline pod runs (namespace readyline")
}

// TestStartSummaryIsTheDaemons: every field of the daemon's
// TimelineSummary survives startSummary, with the same JSON names.
func TestStartSummaryIsTheDaemons(t *testing.T) {
	s := exporter.TimelineSummary{Namespace: "ns", Name: "n", UID: "u", Outcome: correlator.OutcomeFailed, Reason: "r",
		Start: t0, End: t0.Add(time.Second), DurationSeconds: 1}
	daemon, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var mine startSummary
	if err := json.Unmarshal(daemon, &mine); err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(mine)
	if err != nil {
		t.Fatal(err)
	}
	var want, got map[string]any
	json.Unmarshal(daemon, &want)
	json.Unmarshal(again, &got)
	delete(got, "node")
	if !maps.EqualFunc(got, want, func(a, b any) bool { return fmt.Sprint(a) == fmt.Sprint(b) }) {
		t.Errorf("the daemon's summary\n%s\nbecomes\n%s", daemon, again)
	}
}
