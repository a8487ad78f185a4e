package apiauth

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/exporter/apiclient"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// grants are who may get which pods, as RBAC would answer a review: by
// user or group, "namespace" (every pod of it), "namespace/name" (one
// pod) or "" (every namespace).
type grants map[string][]string

func (g grants) allow(spec authorizationv1.SubjectAccessReviewSpec) bool {
	attr := spec.ResourceAttributes
	if attr == nil || attr.Verb != "get" || attr.Resource != "pods" || attr.Group != "" || attr.Subresource != "" {
		return false
	}
	for _, who := range append([]string{spec.User}, spec.Groups...) {
		for _, what := range g[who] {
			switch {
			case what == "", what == attr.Namespace && attr.Namespace != "",
				attr.Name != "" && what == attr.Namespace+"/"+attr.Name:
				return true
			}
		}
	}
	return false
}

// reviews makes f answer SubjectAccessReviews with g, keeping the specs
// asked.
func (f *fakeCluster) reviews(g grants) *[]authorizationv1.SubjectAccessReviewSpec {
	var asked []authorizationv1.SubjectAccessReviewSpec
	f.client.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.down {
			return true, nil, apierrors.NewServiceUnavailable("the API server is down")
		}
		asked = append(asked, review.Spec)
		review.Status.Allowed = g.allow(review.Spec)
		return true, review, nil
	})
	return &asked
}

func (f *fakeCluster) authorizer(c *clock, podReviews int) *Authorizer {
	return NewAuthorizer(AuthorizerConfig{Access: f.client.AuthorizationV1().SubjectAccessReviews(), Now: c.Now, PodReviews: podReviews})
}

// TestMayGetPod: a review asks get pods as the whole user (name, UID,
// groups, extra) in the namespace (with the pod's name, or none); the
// answer is kept for TTL, per user and pod; a review that fails is no
// refusal and is not kept.
func TestMayGetPod(t *testing.T) {
	f := newFakeCluster(t)
	asked := f.reviews(grants{"team": {"team"}, "bob": {"shared/b"}})
	c := &clock{now: t0}
	authz := f.authorizer(c, 0)
	ctx := context.Background()
	alice := &User{Name: "alice", UID: "uid-alice", Groups: []string{"team", "system:authenticated"}, Extra: map[string][]string{"k": {"v"}}}
	bob := &User{Name: "bob", Groups: []string{"system:authenticated"}}

	for _, tc := range []struct {
		u         *User
		ns, name  string
		forbidden string // "" allowed
	}{
		{alice, "team", "web", ""},
		{alice, "team", "", ""},
		{alice, "other", "db", `User "alice" may not get pod other/db`},
		{alice, "", "", `User "alice" may not get pods in all namespaces`},
		{bob, "shared", "b", ""},
		{bob, "shared", "", `User "bob" may not get pods in namespace shared`},
		{bob, "team", "web", `User "bob" may not get pod team/web`},
	} {
		for range 2 { // the second from what is kept
			err := authz.MayGetPod(ctx, tc.u, tc.ns, tc.name)
			switch {
			case tc.forbidden == "" && err != nil:
				t.Errorf("%s on %s/%s: %v, want allowed", tc.u.Name, tc.ns, tc.name, err)
			case tc.forbidden != "" && (!errors.Is(err, apiclient.ErrForbidden) || !strings.Contains(err.Error(), tc.forbidden)):
				t.Errorf("%s on %s/%s: %v, want forbidden: %s", tc.u.Name, tc.ns, tc.name, err, tc.forbidden)
			}
		}
	}
	if len(*asked) != 7 {
		t.Errorf("%d reviews for 7 questions asked twice, want 7", len(*asked))
	}
	first := (*asked)[0]
	if first.User != "alice" || first.UID != "uid-alice" || !slices.Equal(first.Groups, alice.Groups) || !slices.Equal(first.Extra["k"], []string{"v"}) ||
		*first.ResourceAttributes != (authorizationv1.ResourceAttributes{Namespace: "team", Verb: "get", Resource: "pods", Name: "web"}) {
		t.Errorf("review %+v %+v", first, first.ResourceAttributes)
	}

	// Another user of the same name, in other groups, is asked apart.
	impostor := &User{Name: "alice", Groups: []string{"system:authenticated"}}
	if err := authz.MayGetPod(ctx, impostor, "team", "web"); !errors.Is(err, apiclient.ErrForbidden) {
		t.Errorf("alice without her groups: %v, want forbidden", err)
	}

	c.Add(DefaultTTL)
	n := len(*asked)
	authz.MayGetPod(ctx, alice, "team", "web")
	if len(*asked) != n+1 {
		t.Error("an answer was kept past TTL")
	}

	f.setDown(true)
	err := authz.MayGetPod(ctx, alice, "team", "db")
	if err == nil || errors.Is(err, apiclient.ErrForbidden) {
		t.Errorf("a review that fails: %v, want an error that is no refusal", err)
	}
	f.setDown(false)
	if err := authz.MayGetPod(ctx, alice, "team", "db"); err != nil {
		t.Errorf("once the API server answers: %v", err)
	}
}

// TestReaderBoundsPodReviews: one request's reader reviews at most
// PodReviews single pods (what is kept costs nothing), then refuses the
// others; the namespaces are always asked.
func TestReaderBoundsPodReviews(t *testing.T) {
	f := newFakeCluster(t)
	var pods []string
	for i := range 10 {
		pods = append(pods, fmt.Sprintf("ns/p%d", i))
	}
	asked := f.reviews(grants{"carol": pods})
	c := &clock{now: t0}
	authz := f.authorizer(c, 4)
	carol := &User{Name: "carol", Groups: []string{"system:authenticated"}}

	r := authz.Reader(context.Background(), carol)
	if err := r.MayRead("ns", ""); !errors.Is(err, apiclient.ErrForbidden) {
		t.Errorf("namespace ns: %v, want forbidden", err)
	}
	for i := range 10 {
		err := r.MayRead("ns", fmt.Sprintf("p%d", i))
		if i < 4 && err != nil || i >= 4 && (!errors.Is(err, apiclient.ErrForbidden) || !errors.Is(err, errTooManyPods)) {
			t.Errorf("pod %d: %v", i, err)
		}
	}
	if len(*asked) != 5 {
		t.Errorf("%d reviews, want 5 (the namespace and 4 pods)", len(*asked))
	}
	// The next request has its own budget, and the answers kept.
	r = authz.Reader(context.Background(), carol)
	for i := range 8 {
		if err := r.MayRead("ns", fmt.Sprintf("p%d", i)); err != nil {
			t.Errorf("second request, pod %d: %v", i, err)
		}
	}
	if len(*asked) != 9 {
		t.Errorf("%d reviews, want 9", len(*asked))
	}
	if err := r.MayRead("ns", "p9"); !errors.Is(err, errTooManyPods) {
		t.Errorf("past the second budget: %v", err)
	}
}

// TestConfigDefaults: the zero fields of AuthorizerConfig and
// AuthenticatorConfig take the Default* their doc comments name, and set
// ones (a negative PodReviews too: no single pod reviewed) are kept.
func TestConfigDefaults(t *testing.T) {
	a := NewAuthorizer(AuthorizerConfig{})
	if a.cfg.TTL != DefaultTTL || a.cfg.MaxAnswers != DefaultMaxAnswers || a.cfg.PodReviews != DefaultPodReviews ||
		a.cfg.Timeout != DefaultTimeout || a.cfg.Now == nil {
		t.Errorf("Authorizer %+v, want the defaults", a.cfg)
	}
	if c := (AuthorizerConfig{TTL: time.Second, MaxAnswers: 1, PodReviews: -1, Timeout: time.Second}).withDefaults(); c.TTL != time.Second ||
		c.MaxAnswers != 1 || c.PodReviews != -1 || c.Timeout != time.Second {
		t.Errorf("Authorizer %+v, want what was set", c)
	}
	n := NewAuthenticator(AuthenticatorConfig{}, nil)
	if n.cfg.TTL != DefaultTTL || n.cfg.MaxTokens != DefaultMaxAnswers || n.cfg.ClientCAInterval != DefaultClientCAInterval ||
		n.cfg.Timeout != DefaultTimeout || n.cfg.Now == nil {
		t.Errorf("Authenticator %+v, want the defaults", n.cfg)
	}
	if c := (AuthenticatorConfig{TTL: time.Second, MaxTokens: 1, ClientCAInterval: time.Second, Timeout: time.Second}).withDefaults(); c.TTL != time.Second ||
		c.MaxTokens != 1 || c.ClientCAInterval != time.Second || c.Timeout != time.Second {
		t.Errorf("Authenticator %+v, want what was set", c)
	}
}
