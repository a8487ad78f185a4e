// Package apiauth lets the daemon's API answer the API server's users, as
// the kubelet, metrics-server and kube-rbac-proxy do: it authenticates a
// request's client certificate against the cluster's client CA (the
// extension-apiserver-authentication ConfigMap of kube-system, which
// aggregated API servers read) or its bearer token with a TokenReview, and
// asks a SubjectAccessReview whether that user may get a pod before the
// API shows its start (exporter.PodReader). Answers are kept a few seconds
// so that a burst of requests costs few reviews.
//
// The requests it serves come through a port-forward to readyline's pod,
// over TLS (Serving): the daemon holds root on every node, so nothing it
// serves may widen anyone's access (DESIGN.md, "Who may read what").
package apiauth

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cluster's client CA, as kube-apiserver publishes it for aggregated
// API servers.
const (
	ClientCANamespace = "kube-system"
	ClientCAConfigMap = "extension-apiserver-authentication"
	clientCAKey       = "client-ca-file"
)

// groupAuthenticated is the group of every authenticated user, which the
// API server adds to whoever it authenticates (a client certificate says
// only its O= groups).
const groupAuthenticated = "system:authenticated"

// ErrUnauthenticated is wrapped by Authenticate's error when the request
// has no credential the API server's users have, or one it did not accept.
var ErrUnauthenticated = errors.New("unauthenticated")

// User is an API server's user as a request's credential says.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// TokenReviews asks the API server who a bearer token is (a
// kubeapi.TokenReviews, or a fake clientset's).
type TokenReviews interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// ConfigMaps gets ConfigMaps of kube-system (a kubeapi.ConfigMaps, or a
// fake clientset's).
type ConfigMaps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
}

// AuthenticatorConfig is what an Authenticator asks and how long it keeps
// the answers.
type AuthenticatorConfig struct {
	Tokens TokenReviews
	// ClientCA gets the client CA ConfigMap from kube-system; nil: client
	// certificates are not accepted.
	ClientCA ConfigMaps
	// TTL is how long a TokenReview's answer is kept (DefaultTTL when 0),
	// MaxTokens how many tokens' answers (DefaultMaxAnswers when 0).
	TTL       time.Duration
	MaxTokens int
	// ClientCAInterval is how often the client CA is read again
	// (DefaultClientCAInterval when 0): a CA removed from the ConfigMap is
	// accepted at most that long. After a failure it is not read again
	// before TTL, and no CA is accepted until it is.
	ClientCAInterval time.Duration
	// Timeout bounds one call to the API server (DefaultTimeout when 0).
	Timeout time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Defaults of AuthenticatorConfig and AuthorizerConfig.
const (
	DefaultTTL              = 10 * time.Second
	DefaultMaxAnswers       = 1024
	DefaultClientCAInterval = time.Minute
	DefaultTimeout          = 5 * time.Second
)

func (c AuthenticatorConfig) withDefaults() AuthenticatorConfig {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxAnswers
	}
	if c.ClientCAInterval == 0 {
		c.ClientCAInterval = DefaultClientCAInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Authenticator tells who sent a request, as the API server would: its
// client certificate when the cluster's client CA signed it (CN is the
// user, each O a group), else its bearer token by a TokenReview. It is
// safe for concurrent use.
type Authenticator struct {
	cfg    AuthenticatorConfig
	logger *slog.Logger
	tokens *answers[[sha256.Size]byte, tokenAnswer]

	caMu     sync.Mutex
	ca       *x509.CertPool // nil until read
	caRead   time.Time      // when it was last asked for
	caFailed bool           // the last read failed (warned)
}

// tokenAnswer is a TokenReview's answer: the user, or why not.
type tokenAnswer struct {
	user *User
	err  error
}

// NewAuthenticator returns an Authenticator that asks what cfg says.
// logger (may be nil) gets a Warn when the client CA cannot be read, and
// an Info when it can again.
func NewAuthenticator(cfg AuthenticatorConfig, logger *slog.Logger) *Authenticator {
	cfg = cfg.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Authenticator{cfg: cfg, logger: logger, tokens: newAnswers[[sha256.Size]byte, tokenAnswer](cfg.TTL, cfg.MaxTokens, cfg.Now)}
}

// Authenticate returns the user of r. An error wrapping
// ErrUnauthenticated says why r's credential is no user's (or that it has
// none); another error, that the API server could not be asked.
//
// As the API server, it tries the client certificate first and the
// bearer token when there is no certificate or it does not verify.
func (a *Authenticator) Authenticate(r *http.Request) (*User, error) {
	var certErr error
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		u, err := a.certificateUser(r.Context(), r.TLS.PeerCertificates)
		if err == nil {
			return u, nil
		}
		certErr = err
	}
	token, ok := bearerToken(r)
	switch {
	case ok:
		u, err := a.tokenUser(r.Context(), token)
		if err != nil && certErr != nil {
			return nil, fmt.Errorf("%w; %w", certErr, err)
		}
		return u, err
	case certErr != nil:
		return nil, certErr
	}
	return nil, fmt.Errorf("%w: no client certificate and no bearer token: ask with the credentials of your kubeconfig (kubectl readyline does)", ErrUnauthenticated)
}

// bearerToken is the token of r's "Authorization: Bearer" header.
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	return token, ok && strings.EqualFold(scheme, "bearer") && token != ""
}

// certificateUser verifies the client certificate chain against the
// cluster's client CA, for client authentication, as kube-apiserver's
// x509 authenticator does.
func (a *Authenticator) certificateUser(ctx context.Context, chain []*x509.Certificate) (*User, error) {
	if a.cfg.ClientCA == nil {
		return nil, fmt.Errorf("%w: client certificates are not accepted here (no client CA)", ErrUnauthenticated)
	}
	roots, err := a.clientCA(ctx)
	if err != nil {
		return nil, err
	}
	opts := x509.VerifyOptions{
		Roots:         roots,
		Intermediates: x509.NewCertPool(),
		CurrentTime:   a.cfg.Now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range chain[1:] {
		opts.Intermediates.AddCert(c)
	}
	leaf := chain[0]
	if _, err := leaf.Verify(opts); err != nil {
		return nil, fmt.Errorf("%w: the client certificate of %q is not one of the cluster's client CA (%s/%s): %w",
			ErrUnauthenticated, leaf.Subject.CommonName, ClientCANamespace, ClientCAConfigMap, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, fmt.Errorf("%w: the client certificate names no user (its subject has no CN)", ErrUnauthenticated)
	}
	return withAuthenticated(&User{Name: leaf.Subject.CommonName, Groups: slices.Clone(leaf.Subject.Organization)}), nil
}

// withAuthenticated adds the group every authenticated user is in.
func withAuthenticated(u *User) *User {
	if !slices.Contains(u.Groups, groupAuthenticated) {
		u.Groups = append(u.Groups, groupAuthenticated)
	}
	return u
}

// clientCA returns the cluster's client CA: as last read, when it was
// read within ClientCAInterval; else read again (from the API server's
// cache: resourceVersion 0). When that fails, none: a CA that cannot be
// read again may have been removed (it is tried again after TTL).
func (a *Authenticator) clientCA(ctx context.Context) (*x509.CertPool, error) {
	a.caMu.Lock()
	defer a.caMu.Unlock()
	now := a.cfg.Now()
	wait := a.cfg.ClientCAInterval
	if a.caFailed {
		wait = a.cfg.TTL
	}
	if !a.caRead.IsZero() && now.Sub(a.caRead) < wait {
		if a.ca == nil {
			return nil, fmt.Errorf("client certificates cannot be verified: the cluster's client CA (%s/%s) could not be read", ClientCANamespace, ClientCAConfigMap)
		}
		return a.ca, nil
	}
	a.caRead = now
	pool, err := a.readClientCA(ctx)
	switch {
	case err != nil && !a.caFailed:
		a.logger.Warn("client certificates are not verified until the cluster's client CA can be read: kubectl readyline works with tokens only",
			"configmap", ClientCANamespace+"/"+ClientCAConfigMap, "error", err)
	case err == nil && a.caFailed:
		a.logger.Info("the cluster's client CA is read again: client certificates are verified", "configmap", ClientCANamespace+"/"+ClientCAConfigMap)
	}
	a.caFailed = err != nil
	a.ca = pool // nil after a failure
	if a.ca == nil {
		return nil, fmt.Errorf("client certificates cannot be verified: %w", err)
	}
	return a.ca, nil
}

func (a *Authenticator) readClientCA(ctx context.Context) (*x509.CertPool, error) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	cm, err := a.cfg.ClientCA.Get(ctx, ClientCAConfigMap, metav1.GetOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, fmt.Errorf("reading %s/%s: %w", ClientCANamespace, ClientCAConfigMap, err)
	}
	pem, ok := cm.Data[clientCAKey]
	pool := x509.NewCertPool()
	if !ok || !pool.AppendCertsFromPEM([]byte(pem)) {
		return nil, fmt.Errorf("%s/%s has no certificate in %s: the API server authenticates no client certificate", ClientCANamespace, ClientCAConfigMap, clientCAKey)
	}
	return pool, nil
}

// tokenUser asks a TokenReview who token is, or takes the answer kept.
// Refusals are kept as long as users, so that a client retrying a bad
// token costs the API server one review every TTL.
func (a *Authenticator) tokenUser(ctx context.Context, token string) (*User, error) {
	key := sha256.Sum256([]byte(token))
	if ans, ok := a.tokens.get(key); ok {
		return ans.user, ans.err
	}
	ctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
	defer cancel()
	review, err := a.cfg.Tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("asking the API server who the bearer token is (TokenReview): %w", err)
	}
	var ans tokenAnswer
	switch st := review.Status; {
	case !st.Authenticated:
		why := "the API server does not accept it"
		if st.Error != "" {
			why += ": " + st.Error
		}
		ans.err = fmt.Errorf("%w: the bearer token is no user's (%s)", ErrUnauthenticated, why)
	case st.User.Username == "":
		ans.err = fmt.Errorf("%w: the API server accepted the bearer token but named no user", ErrUnauthenticated)
	default:
		u := &User{Name: st.User.Username, UID: st.User.UID, Groups: slices.Clone(st.User.Groups)}
		if len(st.User.Extra) > 0 {
			u.Extra = make(map[string][]string, len(st.User.Extra))
			for k, v := range st.User.Extra {
				u.Extra[k] = slices.Clone(v)
			}
		}
		ans.user = withAuthenticated(u)
	}
	a.tokens.put(key, ans)
	return ans.user, ans.err
}
