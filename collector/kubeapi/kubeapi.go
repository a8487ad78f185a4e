// Package kubeapi is the readyline daemon's Kubernetes API client: it lists
// and watches pods, lists one pod's Events and creates Events, gets the
// cluster's client CA ConfigMap and creates TokenReviews and
// SubjectAccessReviews, the only calls the daemon makes, on
// k8s.io/client-go/rest with a scheme that knows core/v1 (and the metav1
// types it registers), authentication/v1 and authorization/v1, and nothing
// else.
//
// client-go's generated clientset would do the same calls, but its scheme
// registers every built-in API group, which links all of k8s.io/api and a
// typed client and apply configurations for each group: about 12 MB of
// machine code that a node daemon keeps resident for three calls. The
// methods here have the signatures of client-go's typed clients, so the
// consumers' narrow interfaces also take a fake clientset's in tests.
package kubeapi

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

var (
	scheme = newScheme()
	codecs = serializer.NewCodecFactory(scheme)
	// parameterCodec turns ListOptions and CreateOptions into query
	// parameters, as the clientset's scheme.ParameterCodec does.
	parameterCodec = runtime.NewParameterCodec(scheme)
)

// newScheme registers core/v1, authentication/v1 and authorization/v1.
// corev1.AddToScheme also registers, under v1, what the API machinery
// needs around it: metav1.Status (API errors), WatchEvent and the list,
// create and delete options (the same as metav1.AddToGroupVersion for v1,
// which the clientset's scheme calls too).
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(authenticationv1.AddToScheme(s))
	utilruntime.Must(authorizationv1.AddToScheme(s))
	return s
}

// Client makes readyline's calls to the core/v1 API. It is safe for
// concurrent use; its requests share one rate limiter.
type Client struct {
	rest rest.Interface
}

// New returns a Client for the API server of cfg, configured as
// client-go's clientset configures its core/v1 client: cfg's TLS,
// credentials, timeout and user agent (client-go's default when empty),
// and a rate limit of cfg.QPS and cfg.Burst (5 and 10 when zero). Requests
// prefer protobuf and accept JSON, as the typed clients of built-in
// resources do, unless cfg.ContentType says otherwise. cfg is not changed,
// and New does not contact the API server.
func New(cfg *rest.Config) (*Client, error) {
	c := *cfg
	gv := corev1.SchemeGroupVersion // a copy: the config holds a pointer
	c.GroupVersion = &gv
	c.APIPath = "/api"
	// CodecFactoryForGeneratedClient adds CBOR when client-go's
	// ClientsAllowCBOR feature gate is on, as the clientset does.
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(scheme, codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	return &Client{rest: rc}, nil
}

// request starts a request on a resource of namespace ("" = all
// namespaces).
func (c *Client) request(verb, namespace, resource string) *rest.Request {
	// UseProtobufAsDefault only applies when the config set no content type:
	// it is what the typed clients of built-in resources do.
	return c.rest.Verb(verb).UseProtobufAsDefault().
		NamespaceIfScoped(namespace, namespace != "").Resource(resource)
}

// timeout is the request timeout a list or watch asks for.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// Pods lists and watches the pods of one namespace, or of all.
type Pods struct {
	client    *Client
	namespace string
}

// Pods returns the pods of namespace; metav1.NamespaceAll ("") is all
// namespaces.
func (c *Client) Pods(namespace string) *Pods {
	return &Pods{client: c, namespace: namespace}
}

// List lists the pods opts select. Like client-go's, it returns a non-nil
// list also with an error.
func (p *Pods) List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	list := &corev1.PodList{}
	err := p.client.request("GET", p.namespace, "pods").
		VersionedParams(&opts, parameterCodec).
		Timeout(timeout(opts)).
		Do(ctx).
		Into(list)
	return list, err
}

// Watch watches the pods opts select.
func (p *Pods) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return p.client.request("GET", p.namespace, "pods").
		VersionedParams(&opts, parameterCodec).
		Timeout(timeout(opts)).
		Watch(ctx)
}

// Events lists and creates the Events of one namespace.
type Events struct {
	client    *Client
	namespace string
}

// Events returns the Events of namespace.
func (c *Client) Events(namespace string) *Events {
	return &Events{client: c, namespace: namespace}
}

// List lists the Events opts select (a field selector on
// involvedObject.uid, for one pod's). Like client-go's, it returns a
// non-nil list also with an error.
func (e *Events) List(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	list := &corev1.EventList{}
	err := e.client.request("GET", e.namespace, "events").
		VersionedParams(&opts, parameterCodec).
		Timeout(timeout(opts)).
		Do(ctx).
		Into(list)
	return list, err
}

// Create creates ev and returns the API server's copy of it.
func (e *Events) Create(ctx context.Context, ev *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error) {
	created := &corev1.Event{}
	err := e.client.request("POST", e.namespace, "events").
		VersionedParams(&opts, parameterCodec).
		Body(ev).
		Do(ctx).
		Into(created)
	return created, err
}

// ConfigMaps gets the ConfigMaps of one namespace.
type ConfigMaps struct {
	client    *Client
	namespace string
}

// ConfigMaps returns the ConfigMaps of namespace.
func (c *Client) ConfigMaps(namespace string) *ConfigMaps {
	return &ConfigMaps{client: c, namespace: namespace}
}

// Get returns the ConfigMap name.
func (m *ConfigMaps) Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error) {
	cm := &corev1.ConfigMap{}
	err := m.client.request("GET", m.namespace, "configmaps").
		Name(name).
		VersionedParams(&opts, parameterCodec).
		Do(ctx).
		Into(cm)
	return cm, err
}

// create posts obj to the cluster-scoped resource of an API group
// (/apis/GROUP/VERSION/RESOURCE) and decodes the answer into into.
func (c *Client) create(ctx context.Context, path string, obj, into runtime.Object, opts metav1.CreateOptions) error {
	return c.rest.Post().UseProtobufAsDefault().AbsPath(path).
		VersionedParams(&opts, parameterCodec).
		Body(obj).
		Do(ctx).
		Into(into)
}

// TokenReviews asks the API server who a bearer token is.
type TokenReviews struct{ client *Client }

// TokenReviews returns the TokenReviews of authentication.k8s.io/v1.
func (c *Client) TokenReviews() *TokenReviews { return &TokenReviews{client: c} }

// Create creates review and returns the API server's answer in its status.
func (r *TokenReviews) Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	out := &authenticationv1.TokenReview{}
	err := r.client.create(ctx, "/apis/authentication.k8s.io/v1/tokenreviews", review, out, opts)
	return out, err
}

// SubjectAccessReviews asks the API server what a user may do.
type SubjectAccessReviews struct{ client *Client }

// SubjectAccessReviews returns the SubjectAccessReviews of
// authorization.k8s.io/v1.
func (c *Client) SubjectAccessReviews() *SubjectAccessReviews {
	return &SubjectAccessReviews{client: c}
}

// Create creates review and returns the API server's answer in its status.
func (r *SubjectAccessReviews) Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	out := &authorizationv1.SubjectAccessReview{}
	err := r.client.create(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", review, out, opts)
	return out, err
}
