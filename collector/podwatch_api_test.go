package collector

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/kubeapi/kubeapitest"
)

// TestPodWatchAPIServer runs a PodWatch built from a kubeconfig against an
// httptest API server speaking protobuf: every list and watch asks for this
// node's pods in protobuf as readyline, the watch's updates arrive, and a
// 410 Expired in the watch stream makes it relist at once.
func TestPodWatchAPIServer(t *testing.T) {
	a, b := testPod("a", "node1"), testPod("b", "node1")
	a.ResourceVersion, b.ResourceVersion = "10", "12"
	a11 := a.DeepCopy()
	a11.ResourceVersion = "11"
	marker := testPod("marker", "node1")
	marker.ResourceVersion = "13"
	var (
		mu             sync.Mutex
		lists, watches int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/pods" {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		if sel := q.Get("fieldSelector"); sel != "spec.nodeName=node1" {
			t.Errorf("%s: fieldSelector %q, want spec.nodeName=node1", r.URL, sel)
		}
		if acc, ua := r.Header.Get("Accept"), r.Header.Get("User-Agent"); acc != kubeapitest.Accept || ua != "readyline" {
			t.Errorf("%s: Accept %q User-Agent %q, want %q readyline", r.URL, acc, ua, kubeapitest.Accept)
		}
		mu.Lock()
		if q.Get("watch") != "true" {
			lists++
			items, rv := []corev1.Pod{*a}, "10"
			if lists > 1 {
				items, rv = []corev1.Pod{*a11, *b}, "12"
			}
			mu.Unlock()
			kubeapitest.WriteObject(t, w, http.StatusOK, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items})
			return
		}
		watches++
		first := watches == 1
		mu.Unlock()
		s := kubeapitest.StartWatch(t, w)
		if first {
			s.Send(watch.Modified, a11)
			s.Send(watch.Error, kubeapitest.Expired())
			return
		}
		// The watch after the relist: a marker pod, then quiet until the
		// PodWatch stops.
		s.Send(watch.Added, marker)
		<-r.Context().Done()
	}))
	// A cleanup, not a defer: Close waits for the quiet watch, which ends
	// when runPodWatch's cleanup (registered later, so run first) stops the
	// PodWatch.
	t.Cleanup(srv.Close)

	w, err := NewPodWatch(PodWatchConfig{NodeName: "node1", Kubeconfig: writeKubeconfig(t, "api", srv.URL)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := runPodWatch(t, w)
	for _, want := range []struct {
		action event.PodAction
		name   string
		rv     string
	}{{event.PodAdded, "a", "10"}, {event.PodUpdated, "a", "11"}, {event.PodAdded, "b", "12"}} {
		u := next(t, out)
		if u.Action != want.action || u.Pod.Name != want.name || u.Pod.ResourceVersion != want.rv {
			t.Fatalf("got %s %s at %s, want %s %s at %s", u.Action, u.Pod.Name, u.Pod.ResourceVersion, want.action, want.name, want.rv)
		}
		checkStripped(t, u.Pod)
		if u.Pod.Spec.Containers[0].Image != "localhost/busybox:local" {
			t.Errorf("%s: spec not decoded: %+v", u.Pod.Name, u.Pod.Spec)
		}
	}
	nextIsMarker(t, out, "marker")
	mu.Lock()
	defer mu.Unlock()
	if lists != 2 || watches != 2 {
		t.Errorf("%d lists and %d watches, want 2 of each (a relist after the 410)", lists, watches)
	}
}
