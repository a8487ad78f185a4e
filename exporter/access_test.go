package exporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// fakeReader may read the pods of the namespaces and the "namespace/name"
// pods in may, as RBAC would answer; it cannot tell for those in broken.
// It keeps what it was asked.
type fakeReader struct {
	may    []string
	broken []string
	exec   []string // pods (namespace/name) or namespaces it may exec into

	mu    sync.Mutex
	asked []string
}

func (f *fakeReader) MayRead(namespace, name string) error {
	key := namespace
	if name != "" {
		key += "/" + name
	}
	f.mu.Lock()
	f.asked = append(f.asked, key)
	f.mu.Unlock()
	switch {
	case slices.Contains(f.broken, key):
		return errors.New("the API server did not answer")
	case slices.Contains(f.may, key), name != "" && slices.Contains(f.may, namespace):
		return nil
	}
	return fmt.Errorf("%w: may not get pod %s", apiclient.ErrForbidden, key)
}

func (f *fakeReader) MayExec(namespace, name string) error {
	if slices.Contains(f.exec, namespace+"/"+name) || slices.Contains(f.exec, namespace) {
		return nil
	}
	return fmt.Errorf("%w: may not exec into pod %s/%s", apiclient.ErrForbidden, namespace, name)
}

// startOf is a start of pod namespace/name.
func startOf(namespace, name string) *correlator.Timeline {
	tl := lifecycleDemo()
	tl.Pod.Namespace, tl.Pod.Name, tl.Pod.UID = namespace, name, "uid-"+namespace+"-"+name
	return tl
}

// accessStore keeps starts in team (web, db), other (secret) and
// shared (a, b).
func accessStore() *Store {
	s := NewStore(StoreLimits{})
	for _, p := range [][2]string{{"team", "web"}, {"other", "secret"}, {"shared", "a"}, {"team", "db"}, {"shared", "b"}} {
		s.Add(startOf(p[0], p[1]))
	}
	return s
}

// withReader serves h with r as every request's PodReader (nil: none).
func withReader(h http.Handler, r PodReader) http.Handler {
	if r == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req.WithContext(WithPodReader(req.Context(), r)))
	})
}

func serve(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Body)
	return rec.Code, string(body)
}

// TestAPIAnswersWhatTheReaderMayRead: the list has the starts of the pods
// the reader may read only, asked once a namespace and then pod by pod
// where the namespace is refused; a pod it may not read is 403 whether or
// not a start of it is kept; when the API server cannot tell, 503, never
// a list that silently misses starts; without a reader, nothing.
func TestAPIAnswersWhatTheReaderMayRead(t *testing.T) {
	s := accessStore()
	client := func(r PodReader) *apiclient.Client {
		srv := httptest.NewServer(withReader(s.Handler(nil), r))
		t.Cleanup(srv.Close)
		return &apiclient.Client{BaseURL: srv.URL}
	}
	ctx := context.Background()
	names := func(l []apiclient.TimelineSummary) []string {
		var out []string
		for _, s := range l {
			out = append(out, s.Namespace+"/"+s.Name)
		}
		return out
	}

	r := &fakeReader{may: []string{"team", "shared/b"}}
	list, err := client(r).Timelines(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(list), []string{"shared/b", "team/db", "team/web"}; !slices.Equal(got, want) {
		t.Errorf("list %v, want %v", got, want)
	}
	if want := []string{"", "shared", "shared/b", "team", "shared/a", "other", "other/secret"}; !slices.Equal(r.asked, want) {
		t.Errorf("asked %q, want %q: every namespace once, then its pods", r.asked, want)
	}

	r.asked = nil
	list, err = client(r).Timelines(ctx, "team")
	if got, want := names(list), []string{"team/db", "team/web"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("list of team %v (%v), want %v", got, err, want)
	}
	if slices.Contains(r.asked, "other") {
		t.Errorf("the list of team asked about other: %q", r.asked)
	}

	if _, err := client(r).Timeline(ctx, "team", "web", ""); err != nil {
		t.Errorf("team/web: %v", err)
	}
	for _, pod := range [][2]string{{"other", "secret"}, {"other", "never-kept"}} {
		_, err := client(r).Timeline(ctx, pod[0], pod[1], "")
		if !errors.Is(err, apiclient.ErrForbidden) || !strings.Contains(err.Error(), "may not get pod "+pod[0]+"/"+pod[1]) {
			t.Errorf("%s/%s: %v, want 403 saying why", pod[0], pod[1], err)
		}
	}

	broken := &fakeReader{may: []string{"team"}, broken: []string{"shared", "shared/a"}}
	var apiErr *apiclient.Error
	if _, err := client(broken).Timelines(ctx, ""); !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
		t.Errorf("list when a review fails: %v, want 503", err)
	}
	if _, err := client(broken).Timeline(ctx, "shared", "a", ""); !errors.As(err, &apiErr) || apiErr.Status != http.StatusServiceUnavailable {
		t.Errorf("a pod whose review fails: %v, want 503", err)
	}

	for _, path := range []string{"/api/v1/timelines", "/api/v1/timelines/team/web"} {
		if code, body := serve(t, s.Handler(nil), path); code != http.StatusForbidden || strings.Contains(body, "team") {
			t.Errorf("%s without a reader: %d %q, want 403 and nothing of the store", path, code, body)
		}
	}
	if list, err := client(EveryPod).Timelines(ctx, ""); err != nil || len(list) != 5 {
		t.Errorf("EveryPod's list: %d starts (%v), want all 5", len(list), err)
	}
}

// TestPagesShowWhatTheReaderMayRead: the list page links the starts the
// reader may read only; a pod's page it may not read says why (403) and
// shows nothing of the start; a UID's page of such a pod is as not found.
func TestPagesShowWhatTheReaderMayRead(t *testing.T) {
	s := accessStore()
	h := withReader(s.UIHandler(nil), &fakeReader{may: []string{"team"}})

	code, body := serve(t, h, "/ui/")
	if code != http.StatusOK || !strings.Contains(body, "pods/team/web") || strings.Contains(body, "secret") || strings.Contains(body, "shared") {
		t.Errorf("list page %d: want team's starts only:\n%s", code, body)
	}
	code, body = serve(t, h, "/ui/pods/other/secret")
	if code != http.StatusForbidden || !strings.Contains(body, "You may not read it") || strings.Contains(body, "uid-other-secret") {
		t.Errorf("page of other/secret %d, want 403 saying why:\n%s", code, body)
	}
	if code, body = serve(t, h, "/ui/uid/uid-other-secret"); code != http.StatusNotFound || strings.Contains(body, "other/secret") {
		t.Errorf("uid page of other/secret %d, want 404 naming nothing:\n%s", code, body)
	}
	if code, _ = serve(t, h, "/ui/uid/uid-team-web"); code != http.StatusOK {
		t.Errorf("uid page of team/web %d, want 200", code)
	}
	if code, body = serve(t, s.UIHandler(nil), "/ui/"); code != http.StatusForbidden || strings.Contains(body, "team") {
		t.Errorf("list page without a reader %d, want 403:\n%s", code, body)
	}
	broken := withReader(s.UIHandler(nil), &fakeReader{broken: []string{"", "team", "team/web"}})
	if code, _ = serve(t, broken, "/ui/"); code != http.StatusServiceUnavailable {
		t.Errorf("list page when a review fails %d, want 503", code)
	}
}

// fakeLive has starts in progress and counts the snapshots it is asked for.
type fakeLive struct {
	starting  []*correlator.Timeline
	snapshots int
}

func (f *fakeLive) Snapshot(_ context.Context, q correlator.Query) (*correlator.Timeline, error) {
	f.snapshots++
	for _, tl := range f.starting {
		if tl.Pod.Namespace == q.Namespace && tl.Pod.Name == q.Name {
			return tl, nil
		}
	}
	return nil, apiclient.ErrNotFound
}

func (f *fakeLive) After(context.Context, string) (*correlator.After, error) {
	return nil, apiclient.ErrNotFound
}

func (f *fakeLive) InProgress(context.Context) ([]correlator.StartSummary, error) {
	var out []correlator.StartSummary
	for _, tl := range f.starting {
		out = append(out, correlator.StartSummary{Pod: tl.Pod, Start: tl.Start, AsOf: tl.End, Outcome: correlator.OutcomeStarting})
	}
	return out, nil
}

// TestStartsInProgressAreReadAsKept: a start in progress is listed, drawn
// and served to whom may read its pod only, and a refused request costs
// the daemon's loop no snapshot.
func TestStartsInProgressAreReadAsKept(t *testing.T) {
	s := accessStore()
	live := &fakeLive{starting: []*correlator.Timeline{startOf("team", "new"), startOf("other", "new-secret")}}
	for _, tl := range live.starting {
		tl.Outcome = correlator.OutcomeStarting
	}
	s.SetLive(live)
	reader := &fakeReader{may: []string{"team"}}
	api, ui := withReader(s.Handler(nil), reader), withReader(s.UIHandler(nil), reader)

	code, body := serve(t, api, "/api/v1/timelines")
	if code != http.StatusOK || !strings.Contains(body, `"name":"new"`) || strings.Contains(body, "new-secret") {
		t.Errorf("the list: %d, want team's start in progress and not other's:\n%s", code, body)
	}
	if code, body = serve(t, ui, "/ui/"); code != http.StatusOK || !strings.Contains(body, "pods/team/new") || strings.Contains(body, "new-secret") {
		t.Errorf("the list page: %d, want team's start in progress and not other's:\n%s", code, body)
	}
	if code, _ = serve(t, api, "/api/v1/timelines/team/new"); code != http.StatusOK {
		t.Errorf("team/new in progress: %d, want 200", code)
	}
	before := live.snapshots
	for _, path := range []string{"/api/v1/timelines/other/new-secret", "/ui/pods/other/new-secret"} {
		h := api
		if strings.HasPrefix(path, "/ui/") {
			h = ui
		}
		if code, body := serve(t, h, path); code != http.StatusForbidden || strings.Contains(body, "uid-other-new-secret") {
			t.Errorf("%s: %d, want 403\n%s", path, code, body)
		}
	}
	if live.snapshots != before {
		t.Errorf("refused requests asked the loop for %d snapshots, want none", live.snapshots-before)
	}
}

// busyLive is a daemon's loop that never takes a question: each waits for
// its context, and is answered busy.
type busyLive struct{ *fakeLive }

func (busyLive) Snapshot(ctx context.Context, _ correlator.Query) (*correlator.Timeline, error) {
	<-ctx.Done()
	return nil, ErrBusy
}

// TestBusyLoopAnswers503: the README's "a question it does not take within
// 1.5 s is answered 503". A pod's start asked of a loop that never takes
// the question is answered 503 after 1.5 s, not sooner, not much later,
// and the answer's Server-Timing says so; a kept start asked of a daemon
// with no loop to ask says it took no time at all.
func TestBusyLoopAnswers503(t *testing.T) {
	ask := func(s *Store, path string) (*httptest.ResponseRecorder, time.Duration) {
		rec := httptest.NewRecorder()
		begin := time.Now()
		withReader(s.Handler(nil), &fakeReader{may: []string{"team"}}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec, time.Since(begin)
	}
	s := accessStore()
	s.SetLive(busyLive{&fakeLive{}})
	rec, took := ask(s, "/api/v1/timelines/team/stuck")
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a question the loop did not take: %d, want 503\n%s", rec.Code, rec.Body)
	}
	if took < 1500*time.Millisecond || took > 3*time.Second {
		t.Errorf("answered after %v, want 1.5 s", took)
	}
	if found, ok := apiclient.FindTook(rec.Header()); !ok || found < 1500*time.Millisecond || found > took {
		t.Errorf("Server-Timing %q (%v) of an answer after %v: want the 1.5 s waited for the loop", rec.Header().Get(apiclient.ServerTimingHeader), found, took)
	}
	rec, took = ask(accessStore(), "/api/v1/timelines/team/web")
	if found, ok := apiclient.FindTook(rec.Header()); rec.Code != http.StatusOK || !ok || found > took {
		t.Errorf("a kept start: %d, Server-Timing %q after %v; want 200 and what the lookup took", rec.Code, rec.Header().Get(apiclient.ServerTimingHeader), took)
	}
}

// TestListNotModified: the list carries an ETag; asked again with it, an
// unchanged list is 304 with no body; a new start changes it.
func TestListNotModified(t *testing.T) {
	s := accessStore()
	api := withReader(s.Handler(nil), EveryPod)
	get := func(tag string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "/api/v1/timelines?waiting=1", nil)
		if tag != "" {
			req.Header.Set("If-None-Match", tag)
		}
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		return rec
	}
	first := get("")
	tag := first.Header().Get("ETag")
	if first.Code != http.StatusOK || tag == "" || !strings.Contains(first.Body.String(), `"name":"web"`) {
		t.Fatalf("the list: %d, ETag %q:\n%s", first.Code, tag, first.Body)
	}
	if again := get(tag); again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Errorf("the list asked again with its ETag: %d, %d bytes; want 304 and none", again.Code, again.Body.Len())
	}
	s.Add(startOf("team", "new"))
	if changed := get(tag); changed.Code != http.StatusOK || changed.Header().Get("ETag") == tag || !strings.Contains(changed.Body.String(), `"name":"new"`) {
		t.Errorf("the list after a new start, asked with the old ETag: %d, ETag %q", changed.Code, changed.Header().Get("ETag"))
	}
}
