package kubeapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/collector/kubeapi"
	"github.com/readyline/readyline/collector/kubeapi/kubeapitest"
)

const agent = "readyline"

func pod(name, rv string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns1", UID: types.UID("uid-" + name), ResourceVersion: rv},
		Spec:       corev1.PodSpec{NodeName: "node1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// checkQuery fails t unless the request's query has want's values.
func checkQuery(t *testing.T, r *http.Request, want url.Values) {
	t.Helper()
	got := r.URL.Query()
	for k, v := range want {
		if got.Get(k) != v[0] {
			t.Errorf("%s %s: %s=%q, want %q", r.Method, r.URL.Path, k, got.Get(k), v[0])
		}
	}
}

// checkHeaders fails t unless r prefers protobuf and carries the user
// agent of the config.
func checkHeaders(t *testing.T, r *http.Request) {
	t.Helper()
	if a := r.Header.Get("Accept"); a != kubeapitest.Accept {
		t.Errorf("%s %s: Accept %q, want %q", r.Method, r.URL.Path, a, kubeapitest.Accept)
	}
	if ua := r.Header.Get("User-Agent"); ua != agent {
		t.Errorf("%s %s: User-Agent %q, want %q", r.Method, r.URL.Path, ua, agent)
	}
}

func newClient(t *testing.T, h http.HandlerFunc) *kubeapi.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := kubeapi.New(&rest.Config{Host: srv.URL, UserAgent: agent})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPodsListWatch lists and watches pods in protobuf with the node's field
// selector: the list, the watch's events (an API error among them, as the
// reflector must see it) and a JSON Status error decode.
func TestPodsListWatch(t *testing.T) {
	sel := fields.OneTermEqualSelector("spec.nodeName", "node1").String()
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/pods" {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		checkHeaders(t, r)
		q := r.URL.Query()
		switch {
		case q.Get("resourceVersion") == "1":
			kubeapitest.WriteStatus(t, w, http.StatusGone, metav1.StatusReasonExpired, "too old resource version: 1")
		case q.Get("watch") == "true":
			checkQuery(t, r, url.Values{"fieldSelector": {sel}, "resourceVersion": {"7"},
				"allowWatchBookmarks": {"true"}, "timeoutSeconds": {"300"}, "timeout": {"5m0s"}})
			s := kubeapitest.StartWatch(t, w)
			s.Send(watch.Added, pod("b", "8"))
			s.Send(watch.Modified, pod("b", "9"))
			s.Send(watch.Error, kubeapitest.Expired())
		default:
			checkQuery(t, r, url.Values{"fieldSelector": {sel}, "limit": {"500"}})
			kubeapitest.WriteObject(t, w, http.StatusOK, &corev1.PodList{
				ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Pod{*pod("a", "5")}})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods := c.Pods(metav1.NamespaceAll)

	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel, Limit: 500})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if list.ResourceVersion != "7" || len(list.Items) != 1 || list.Items[0].Name != "a" ||
		list.Items[0].Spec.NodeName != "node1" || list.Items[0].Spec.Containers[0].Image != "busybox" {
		t.Errorf("List: %+v", list)
	}

	timeout := int64(300)
	wi, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: "7",
		AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer wi.Stop()
	for _, want := range []struct {
		typ watch.EventType
		rv  string
	}{{watch.Added, "8"}, {watch.Modified, "9"}} {
		ev := <-wi.ResultChan()
		p, ok := ev.Object.(*corev1.Pod)
		if ev.Type != want.typ || !ok || p.Name != "b" || p.ResourceVersion != want.rv {
			t.Fatalf("watch event %s %T %+v, want %s of b at %s", ev.Type, ev.Object, ev.Object, want.typ, want.rv)
		}
	}
	ev := <-wi.ResultChan()
	st, ok := ev.Object.(*metav1.Status)
	if ev.Type != watch.Error || !ok || !apierrors.IsResourceExpired(apierrors.FromObject(st)) {
		t.Errorf("watch event %s %+v, want an Error with 410 Expired", ev.Type, ev.Object)
	}
	if ev, open := <-wi.ResultChan(); open {
		t.Errorf("watch still open after the stream ended: %s %+v", ev.Type, ev.Object)
	}

	// An API error is an APIStatus: the pod watch relies on it to tell a
	// server that answers from one that does not.
	_, err = pods.List(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: "1"})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsResourceExpired(err) {
		t.Errorf("List from an expired version: %v, want a 410 Expired status", err)
	}
}

// TestEventsCreate posts an Event in protobuf to its namespace and returns
// the server's copy; a refusal is the API's error.
func TestEventsCreate(t *testing.T) {
	c := newClient(t, func(w http.ResponseWriter, r *http.Request) {
		checkHeaders(t, r)
		if r.Method != http.MethodPost {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
		}
		if r.URL.Path == "/api/v1/namespaces/locked/events" {
			kubeapitest.WriteStatus(t, w, http.StatusForbidden, metav1.StatusReasonForbidden, "events is forbidden")
			return
		}
		if r.URL.Path != "/api/v1/namespaces/ns1/events" {
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			http.NotFound(w, r)
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != kubeapitest.Protobuf {
			t.Errorf("Content-Type %q, want %q", ct, kubeapitest.Protobuf)
		}
		checkQuery(t, r, url.Values{"fieldManager": {"readyline"}})
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		var ev corev1.Event
		kubeapitest.Decode(t, body, &ev)
		if ev.Name != "p.1" || ev.InvolvedObject.Name != "p" || ev.Reason != "SlowReady" || ev.Count != 1 {
			t.Errorf("posted Event %+v", ev)
		}
		ev.ResourceVersion, ev.UID = "42", "event-uid"
		kubeapitest.WriteObject(t, w, http.StatusCreated, &ev)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "p.1", Namespace: "ns1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns1", Name: "p"},
		Reason:         "SlowReady", Type: corev1.EventTypeWarning, Count: 1,
	}
	got, err := c.Events("ns1").Create(ctx, ev, metav1.CreateOptions{FieldManager: "readyline"})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got.ResourceVersion != "42" || got.UID != "event-uid" || got.Reason != "SlowReady" {
		t.Errorf("created %+v", got)
	}
	if ev.ResourceVersion != "" {
		t.Error("Create changed its argument")
	}

	_, err = c.Events("locked").Create(ctx, ev, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("Create refused: %v, want a 403 Forbidden status", err)
	}
}

// TestNewKeepsConfig: New does not change the caller's config, whose user
// agent and rate limits the daemon sets.
func TestNewKeepsConfig(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", UserAgent: agent}
	if _, err := kubeapi.New(cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.GroupVersion != nil || cfg.APIPath != "" || cfg.NegotiatedSerializer != nil || cfg.ContentType != "" {
		t.Errorf("New changed the config: %+v", cfg)
	}
	if _, err := kubeapi.New(&rest.Config{Host: "http://[::1"}); err == nil {
		t.Error("New accepted a malformed host")
	}
}

// request is what a client sent, as the API server sees it.
type request struct {
	Method, URL, Accept, ContentType, UserAgent, Body string
}

// record returns what the client sent in r, and r's body.
func record(t *testing.T, r *http.Request) (request, []byte) {
	t.Helper()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Error(err)
	}
	return request{r.Method, r.URL.String(), r.Header.Get("Accept"), r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), string(body)}, body
}

// TestSameRequestsAsClientset makes the daemon's calls with kubeapi and with
// client-go's clientset: the API server must see the same requests.
func TestSameRequestsAsClientset(t *testing.T) {
	var got []request
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "ns1"}, Reason: "SlowReady", Count: 1}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, body := record(t, r)
		got = append(got, req)
		switch {
		case r.Method == http.MethodPost:
			var ev corev1.Event
			kubeapitest.Decode(t, body, &ev)
			kubeapitest.WriteObject(t, w, http.StatusCreated, &ev)
		case r.URL.Query().Get("watch") == "true":
			kubeapitest.StartWatch(t, w).Send(watch.Added, pod("a", "8"))
		case strings.Contains(r.URL.Path, "/events"):
			kubeapitest.WriteObject(t, w, http.StatusOK, &corev1.EventList{Items: []corev1.Event{*ev}})
		default:
			kubeapitest.WriteObject(t, w, http.StatusOK, &corev1.PodList{Items: []corev1.Pod{*pod("a", "5")}})
		}
	}))
	defer srv.Close()
	// The user agent as collector.RESTConfig sets it; the rest as a
	// kubeconfig leaves it: no QPS, content type or timeout.
	cfg := &rest.Config{Host: srv.URL, UserAgent: agent}
	sel := fields.OneTermEqualSelector("spec.nodeName", "node1").String()
	type calls interface {
		List(context.Context, metav1.ListOptions) (*corev1.PodList, error)
		Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
	}
	type creator interface {
		Create(context.Context, *corev1.Event, metav1.CreateOptions) (*corev1.Event, error)
		List(context.Context, metav1.ListOptions) (*corev1.EventList, error)
	}
	run := func(pods calls, events creator) []request {
		t.Helper()
		got = nil
		ctx := context.Background()
		if _, err := pods.List(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: "0", Limit: 500}); err != nil {
			t.Fatal(err)
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: "7", AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		<-w.ResultChan()
		w.Stop()
		if _, err := events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if l, err := events.List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=u1", Limit: 100}); err != nil || len(l.Items) != 1 {
			t.Fatalf("listing events: %v, %v", l, err)
		}
		return got
	}
	ours, cs := clients(t, cfg)
	want := run(cs.CoreV1().Pods(""), cs.CoreV1().Events("ns1"))
	have := run(ours.Pods(""), ours.Events("ns1"))
	if len(want) != 4 || !slices.Equal(have, want) {
		t.Errorf("kubeapi sent\n%+v\nthe clientset sent\n%+v", have, want)
	}
}

// TestReviewsAndClientCA makes the calls of the daemon's API
// authentication (the client CA ConfigMap, a TokenReview and a
// SubjectAccessReview) with kubeapi and with client-go's clientset: the
// API server must see the same requests, and kubeapi must read its answers.
func TestReviewsAndClientCA(t *testing.T) {
	var got []request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, body := record(t, r)
		got = append(got, req)
		switch r.URL.Path {
		case "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication":
			kubeapitest.WriteObject(t, w, http.StatusOK, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "extension-apiserver-authentication", Namespace: "kube-system"},
				Data:       map[string]string{"client-ca-file": "PEM"}})
		case "/apis/authentication.k8s.io/v1/tokenreviews":
			var tr authenticationv1.TokenReview
			kubeapitest.Decode(t, body, &tr)
			tr.Status = authenticationv1.TokenReviewStatus{Authenticated: tr.Spec.Token == "good",
				User: authenticationv1.UserInfo{Username: "alice", Groups: []string{"team", "system:authenticated"}}}
			kubeapitest.WriteObject(t, w, http.StatusCreated, &tr)
		case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
			var sar authorizationv1.SubjectAccessReview
			kubeapitest.Decode(t, body, &sar)
			sar.Status.Allowed = sar.Spec.User == "alice" && sar.Spec.ResourceAttributes.Namespace == "team"
			kubeapitest.WriteObject(t, w, http.StatusCreated, &sar)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL)
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, UserAgent: agent}
	type configMaps interface {
		Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
	}
	type tokenReviews interface {
		Create(context.Context, *authenticationv1.TokenReview, metav1.CreateOptions) (*authenticationv1.TokenReview, error)
	}
	type accessReviews interface {
		Create(context.Context, *authorizationv1.SubjectAccessReview, metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
	}
	run := func(cms configMaps, trs tokenReviews, sars accessReviews) []request {
		t.Helper()
		got = nil
		ctx := context.Background()
		cm, err := cms.Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{})
		if err != nil || cm.Data["client-ca-file"] != "PEM" {
			t.Fatalf("ConfigMap %+v, %v", cm, err)
		}
		tr, err := trs.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}}, metav1.CreateOptions{})
		if err != nil || !tr.Status.Authenticated || tr.Status.User.Username != "alice" || !slices.Contains(tr.Status.User.Groups, "team") {
			t.Fatalf("TokenReview %+v, %v", tr, err)
		}
		sar, err := sars.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "alice", Groups: []string{"team"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "team", Verb: "get", Resource: "pods", Name: "web"},
		}}, metav1.CreateOptions{})
		if err != nil || !sar.Status.Allowed {
			t.Fatalf("SubjectAccessReview %+v, %v", sar, err)
		}
		return got
	}
	ours, cs := clients(t, cfg)
	want := run(cs.CoreV1().ConfigMaps("kube-system"), cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews())
	have := run(ours.ConfigMaps("kube-system"), ours.TokenReviews(), ours.SubjectAccessReviews())
	if len(want) != 3 || !slices.Equal(have, want) {
		t.Errorf("kubeapi sent\n%+v\nthe clientset sent\n%+v", have, want)
	}
}

// clients are kubeapi's client and client-go's clientset of cfg.
func clients(t *testing.T, cfg *rest.Config) (*kubeapi.Client, *kubernetes.Clientset) {
	t.Helper()
	ours, err := kubeapi.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return ours, cs
}
