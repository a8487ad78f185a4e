package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// listFixture: n1 and n2 answer (n1's previous readyline pod still
// terminating), n3's readyline is older than the plugin, n4's is Pending.
// The user may read the starts of team and kube-system, not of other.
func listFixture(t *testing.T) (*daemonSet, *fakeConn) {
	ending := daemonPod("rl-n1-old", "n1", corev1.PodRunning, true, t0.Add(-time.Hour))
	ending.DeletionTimestamp = &metav1.Time{Time: t0}
	may := []string{"team", "kube-system"}
	conn := &fakeConn{apis: map[string]http.Handler{
		"rl-n1": daemonAPI(may, startOf("team", "web", t0.Add(time.Minute), 1500*time.Millisecond), startOf("kube-system", "dns", t0, time.Second),
			startOf("other", "secret", t0, time.Second)),
		"rl-n2": daemonAPI(may, startOf("team", "db", t0.Add(2*time.Minute), 12*time.Second), startOf("team", "web", t0, 2*time.Second)),
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
		"error: node n3: asking the readyline on node n3 (pod readyline/rl-n3): no secure API on port 9467: it is older than this plugin",
		"error: node n4: readyline pod rl-n4 is Pending, not asked\n",
	} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr %q does not say %q", stderr.String(), w)
		}
	}
	if len(conn.forwards) != 3 || strings.Contains(stderr.String(), "n1") {
		t.Errorf("asked %v, want the 3 running readyline pods, and nothing said of n1's that ends:\n%s", conn.forwards, stderr.String())
	}

	stdout.Reset()
	ds.list(context.Background(), "", "text", &stdout, io.Discard, now)
	if got := stdout.String(); !strings.HasPrefix(got, "NAMESPACE     NAME   NODE") || !strings.Contains(got, "kube-system   dns    n1") || strings.Contains(got, "secret") {
		t.Errorf("list -A printed\n%s\nwant a NAMESPACE column and kube-system's pod, and nothing of other, which the user may not read", got)
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

// TestListForbidden: pods/portforward forbidden, or credentials the
// daemons do not accept, is one error, not one per node.
func TestListForbidden(t *testing.T) {
	nodes := []runtime.Object{daemonPod("rl-n1", "n1", corev1.PodRunning, true, t0), daemonPod("rl-n2", "n2", corev1.PodRunning, true, t0)}
	refused := &fakeConn{refuse: errors.New("unable to upgrade connection: forbidden")}
	ds := testDaemonSet(t, refused, []string{"create pods/portforward"}, nodes...)
	var stderr bytes.Buffer
	err := ds.list(context.Background(), "team", "text", io.Discard, &stderr, t0)
	if !errors.Is(err, errReported) {
		t.Errorf("list: %v, want errReported", err)
	}
	if n := strings.Count(stderr.String(), "may not create pods/portforward in namespace readyline"); n != 1 {
		t.Errorf("stderr says pods/portforward is forbidden %d times, want once:\n%s", n, stderr.String())
	}

	apis := map[string]http.Handler{"rl-n1": daemonAPI(nil), "rl-n2": daemonAPI(nil)}
	ds = testDaemonSet(t, &fakeConn{apis: apis}, nil, nodes...)
	ds.transport = userTransport("expired")
	stderr.Reset()
	if err := ds.list(context.Background(), "team", "text", io.Discard, &stderr, t0); !errors.Is(err, errReported) {
		t.Errorf("list: %v, want errReported", err)
	}
	if n := strings.Count(stderr.String(), "did not accept the kubeconfig's credentials"); n != 1 {
		t.Errorf("stderr says the credentials were refused %d times, want once:\n%s", n, stderr.String())
	}

	ds = testDaemonSet(t, refused, nil)
	wantErr(t, ds.list(context.Background(), "team", "text", io.Discard, io.Discard, t0), "no readyline pod runs (namespace readyline")
}
