// Command readyline-api is readyline's aggregated API server: the API
// server routes the readyline.dev group to it (an APIService), after
// authenticating the user, whom it names in the request's headers over
// its front-proxy client certificate. It serves podstarts to each user by
// RBAC (SubjectAccessReview), listing and watching the summaries it keeps
// of every node's starts, and reading a start's timeline from the node
// that has the pod, over mutual TLS, naming the user, never sending their
// credential: users' credentials stay with the API server, as with
// metrics-server (DESIGN.md, "Who may read what").
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/compatibility"

	"github.com/readyline/readyline/exporter/podstartapi"
	"github.com/readyline/readyline/exporter/podstartapi/openapi"
)

type options struct {
	serving        *genericoptions.SecureServingOptionsWithLoopback
	authentication *genericoptions.DelegatingAuthenticationOptions
	authorization  *genericoptions.DelegatingAuthorizationOptions

	kubeconfig      string
	daemonNamespace string
	daemonSelector  string
	nodePort        int
	nodeCA          string
	clientCert      string
	clientKey       string
	pollInterval    time.Duration
	nodeGrace       time.Duration
	history         int
	eventsBudget    float64
}

func newOptions() *options {
	o := &options{
		serving:        genericoptions.NewSecureServingOptions().WithLoopback(),
		authentication: genericoptions.NewDelegatingAuthenticationOptions(),
		authorization:  genericoptions.NewDelegatingAuthorizationOptions(),
	}
	o.serving.BindPort = 8443
	o.serving.ServerCert.CertDirectory = ""
	o.serving.ServerCert.PairName = "readyline-api"
	return o
}

func (o *options) flags(fs *pflag.FlagSet) {
	o.serving.AddFlags(fs)
	o.authentication.AddFlags(fs)
	o.authorization.AddFlags(fs)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the API server to follow the daemon pods on (default: in-cluster)")
	fs.StringVar(&o.daemonNamespace, "daemon-namespace", "readyline", "the namespace of readyline's DaemonSet")
	fs.StringVar(&o.daemonSelector, "daemon-selector", "app.kubernetes.io/name=readyline,app.kubernetes.io/component=node", "the label selector of the DaemonSet's pods")
	fs.IntVar(&o.nodePort, "node-port", 9467, "the port of the daemons' node API (their --secure-api-addr)")
	fs.StringVar(&o.nodeCA, "node-ca-file", "", "the CA of the daemons' serving certificate (for the name readyline-node), PEM")
	fs.StringVar(&o.clientCert, "node-client-cert-file", "", "this server's client certificate to the daemons (CN readyline-api), PEM")
	fs.StringVar(&o.clientKey, "node-client-key-file", "", "the key of --node-client-cert-file, PEM")
	fs.DurationVar(&o.pollInterval, "poll-interval", 5*time.Second, "how often each node's daemon is asked for its starts")
	fs.DurationVar(&o.nodeGrace, "node-grace", 2*time.Minute, "how long a node's starts stay after its daemon is gone")
	fs.IntVar(&o.history, "watch-history", 10000, "how many changes a watch may resume from")
	fs.Float64Var(&o.eventsBudget, "events-reads-per-second", 10,
		"the Events reads a second of every node's daemon together, shared among the nodes with starts in progress (0: each node's own limit alone)")
}

func main() {
	o := newOptions()
	fs := pflag.NewFlagSet("readyline-api", pflag.ContinueOnError)
	o.flags(fs)
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, logger); err != nil {
		logger.Error("readyline-api stopped", "error", err)
		os.Exit(1)
	}
}

// newScheme is the scheme of the readyline.dev group.
func newScheme() (*runtime.Scheme, serializer.CodecFactory, error) {
	scheme := runtime.NewScheme()
	if err := podstartapi.AddToScheme(scheme); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	if err := scheme.AddFieldLabelConversionFunc(podstartapi.SchemeGroupVersion.WithKind("PodStart"), fieldLabel); err != nil {
		return nil, serializer.CodecFactory{}, err
	}
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Group: "", Version: "v1"},
		&metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	return scheme, serializer.NewCodecFactory(scheme), nil
}

func run(ctx context.Context, o *options, logger *slog.Logger) error {
	scheme, codecs, err := newScheme()
	if err != nil {
		return err
	}
	if err := o.serving.MaybeDefaultWithSelfSignedCerts("localhost", nil, nil); err != nil {
		return fmt.Errorf("a self-signed serving certificate: %w", err)
	}
	cfg := genericapiserver.NewConfig(codecs)
	if err := o.serving.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return err
	}
	if err := o.authentication.ApplyTo(&cfg.Authentication, cfg.SecureServing, nil); err != nil {
		return err
	}
	if err := o.authorization.ApplyTo(&cfg.Authorization); err != nil {
		return err
	}
	cfg.EffectiveVersion = compatibility.NewEffectiveVersionFromString("1.37", "", "")
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title = "readyline"
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title = "readyline"

	rc, err := clientConfig(o.kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	nodes, err := newNodeClient(o.nodeCA, o.clientCert, o.clientKey, o.nodePort, 30*time.Second)
	if err != nil {
		return err
	}
	store := newSummaries(o.history, nil)
	// The other replica may have learned a change up to a poll (and a
	// node's answer) later or earlier than this one.
	store.resumeSkew = 2 * o.pollInterval
	poll := &poller{client: nodes, store: store, interval: o.pollInterval, spread: o.pollInterval, grace: o.nodeGrace,
		eventsBudget: o.eventsBudget, logger: logger}

	factory := informers.NewSharedInformerFactoryWithOptions(client, 10*time.Minute, informers.WithNamespace(o.daemonNamespace),
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = o.daemonSelector }))
	daemons := factory.Core().V1().Pods()
	ips := func(node string) (string, bool) {
		poll.mu.Lock()
		defer poll.mu.Unlock()
		np, ok := poll.running[node]
		if !ok {
			return "", false
		}
		return np.pod.ip, true
	}

	server, err := cfg.Complete(nil).New("readyline-api", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	// The group's own parameter codec: it reads the web subresource's
	// options (podstartapi registers how).
	group := genericapiserver.NewDefaultAPIGroupInfo(podstartapi.GroupName, scheme, runtime.NewParameterCodec(scheme), codecs)
	starts := &podStarts{store: store, nodes: nodes, ips: ips, logger: logger}
	group.VersionedResourcesStorageMap[podstartapi.Version] = map[string]rest.Storage{
		podstartapi.Resource:                         starts,
		podstartapi.Resource + "/" + podstartapi.Web: &podStartWeb{starts: starts},
	}
	if err := server.InstallAPIGroup(&group); err != nil {
		return err
	}
	if err := server.AddReadyzChecks(healthz.NamedCheck("daemons-asked", func(*http.Request) error { return poll.Ready() })); err != nil {
		return err
	}
	go func() {
		if err := poll.Run(ctx, daemons.Informer()); err != nil {
			logger.Error("following the daemon pods", "error", err)
		}
	}()
	return server.PrepareRun().RunWithContext(ctx)
}

// clientConfig is kubeconfig's, or the pod's in-cluster one.
func clientConfig(kubeconfig string) (*restclient.Config, error) {
	if kubeconfig != "" {
		return clientcmd.BuildConfigFromFlags("", kubeconfig)
	}
	return restclient.InClusterConfig()
}
