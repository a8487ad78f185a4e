package apiauth

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// AccessReviews asks the API server what a user may do (a
// kubeapi.SubjectAccessReviews, or a fake clientset's).
type AccessReviews interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// AuthorizerConfig is what an Authorizer asks and how long it keeps the
// answers.
type AuthorizerConfig struct {
	Access AccessReviews
	// TTL is how long an answer is kept (DefaultTTL when 0), MaxAnswers
	// how many (DefaultMaxAnswers when 0).
	TTL        time.Duration
	MaxAnswers int
	// PodReviews bounds the reviews of single pods one request may cost
	// (DefaultPodReviews when 0): a list asks once a namespace, and pod by
	// pod only in the namespaces the user may not read whole (RBAC grants
	// by resourceNames); past the bound, the rest of those is refused.
	PodReviews int
	// Timeout bounds one call to the API server (DefaultTimeout when 0).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// DefaultPodReviews is AuthorizerConfig.PodReviews' default.
const DefaultPodReviews = 64

func (c AuthorizerConfig) withDefaults() AuthorizerConfig {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxAnswers == 0 {
		c.MaxAnswers = DefaultMaxAnswers
	}
	if c.PodReviews == 0 {
		c.PodReviews = DefaultPodReviews
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Authorizer asks the API server whether a user may get a pod, the
// permission that reading its start takes. It is safe for concurrent use.
type Authorizer struct {
	cfg     AuthorizerConfig
	answers *answers[[sha256.Size]byte, error]
}

// NewAuthorizer returns an Authorizer that asks what cfg says.
func NewAuthorizer(cfg AuthorizerConfig) *Authorizer {
	cfg = cfg.withDefaults()
	return &Authorizer{cfg: cfg, answers: newAnswers[[sha256.Size]byte, error](cfg.TTL, cfg.MaxAnswers, cfg.Now)}
}

// MayGetPod returns nil when u may get pod namespace/name, as a
// SubjectAccessReview answers: name "" asks for every pod of namespace,
// and namespace "" for every namespace. A refusal wraps
// apiclient.ErrForbidden; another error says the API server could not be
// asked. Answers are kept for the TTL.
func (a *Authorizer) MayGetPod(ctx context.Context, u *User, namespace, name string) error {
	_, err := a.mayGetPod(ctx, u, namespace, name)
	return err
}

// mayGetPod is MayGetPod, and whether the answer was kept (no review).
func (a *Authorizer) mayGetPod(ctx context.Context, u *User, namespace, name string) (kept bool, err error) {
	return a.may(ctx, u, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "pods", Name: name},
		"get "+podsWhat(namespace, name))
}

// MayExecPod returns nil when u may exec into pod namespace/name (create
// pods/exec), as a SubjectAccessReview answers: who may read the argv the
// kernel saw of the pod's processes, which they could read by exec. A
// refusal wraps apiclient.ErrForbidden. Answers are kept for the TTL.
func (a *Authorizer) MayExecPod(ctx context.Context, u *User, namespace, name string) error {
	_, err := a.may(ctx, u, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "create", Resource: "pods",
		Subresource: "exec", Name: name}, "exec into "+podsWhat(namespace, name))
	return err
}

// may asks whether u may do what attrs say (what, for messages), and says
// whether the answer was kept (no review).
func (a *Authorizer) may(ctx context.Context, u *User, attrs authorizationv1.ResourceAttributes, what string) (kept bool, err error) {
	key := reviewKey(u, attrs)
	if err, ok := a.answers.get(key); ok {
		return true, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	spec := authorizationv1.SubjectAccessReviewSpec{User: u.Name, UID: u.UID, Groups: u.Groups, ResourceAttributes: &attrs}
	if len(u.Extra) > 0 {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			spec.Extra[k] = v
		}
	}
	review, err := a.cfg.Access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking the API server whether %q may %s (SubjectAccessReview): %w", u.Name, what, err)
	}
	var answer error
	if !review.Status.Allowed || review.Status.Denied {
		answer = fmt.Errorf("%w: User %q may not %s", apiclient.ErrForbidden, u.Name, what)
	}
	a.answers.put(key, answer)
	return false, answer
}

// podsWhat names the pods of a review, for messages.
func podsWhat(namespace, name string) string {
	switch {
	case namespace == "":
		return "pods in all namespaces"
	case name == "":
		return "pods in namespace " + namespace
	}
	return "pod " + namespace + "/" + name
}

// reviewKey identifies a review: the user, all of it (two users of one
// name with other groups are asked apart), and what it asks about.
func reviewKey(u *User, attrs authorizationv1.ResourceAttributes) [sha256.Size]byte {
	h := sha256.New()
	field := func(s string) { // length-prefixed: no two lists write the same bytes
		var n [binary.MaxVarintLen64]byte
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	list := func(l []string) {
		field(fmt.Sprint(len(l)))
		for _, s := range l {
			field(s)
		}
	}
	field(u.Name)
	field(u.UID)
	list(slices.Sorted(slices.Values(u.Groups)))
	keys := slices.Sorted(maps.Keys(u.Extra))
	list(keys)
	for _, k := range keys {
		list(u.Extra[k])
	}
	field(attrs.Namespace)
	field(attrs.Name)
	field(attrs.Verb)
	field(attrs.Resource)
	field(attrs.Subresource)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	return key
}

// Reader is the exporter.PodReader of one request of u: it asks a as u,
// within the request's context and with its own budget of reviews of
// single pods.
func (a *Authorizer) Reader(ctx context.Context, u *User) exporter.PodReader {
	return &reader{ctx: ctx, authz: a, user: u, podReviews: a.cfg.PodReviews}
}

// reader is the PodReader of one request. It is used by one goroutine, the
// request's handler.
type reader struct {
	ctx        context.Context
	authz      *Authorizer
	user       *User
	podReviews int // reviews of single pods left
}

// errTooManyPods refuses a pod past a request's budget of reviews.
var errTooManyPods = errors.New("too many pods to ask about one by one in one request; ask for them by namespace")

func (r *reader) MayRead(namespace, name string) error {
	if name != "" && r.podReviews <= 0 {
		// The answer may still be kept.
		if err, ok := r.authz.answers.get(reviewKey(r.user, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "pods", Name: name})); ok {
			return err
		}
		return fmt.Errorf("%w: pod %s/%s: %w", apiclient.ErrForbidden, namespace, name, errTooManyPods)
	}
	kept, err := r.authz.mayGetPod(r.ctx, r.user, namespace, name)
	if name != "" && !kept {
		r.podReviews--
	}
	return err
}

// MayExec returns nil when the user may exec into pod namespace/name.
func (r *reader) MayExec(namespace, name string) error {
	return r.authz.MayExecPod(r.ctx, r.user, namespace, name)
}
