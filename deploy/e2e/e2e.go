//go:build e2e

// Package e2e runs readyline's end-to-end tests against the real single-node
// Kubernetes and the real Jaeger of deploy/node, and holds the helpers those
// tests share: bringing the node up, applying manifests, waiting for and
// recording pods, querying Jaeger and checking that the host was left clean.
//
// The tests need root (they start a kubelet). Run them with
//
//	go test -tags e2e -v ./deploy/e2e/...
//
// TestMain brings the node and Jaeger up once, reusing them when they already
// run. With READYLINE_E2E_TEARDOWN=1 it stops both afterwards and fails the run
// if anything is left on the host.
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/readyline/readyline/deploy/e2e/jaeger"
)

// Module is the main module's path; RepoRoot looks for its go.mod.
const Module = "github.com/readyline/readyline"

// Defaults of deploy/node/node.sh; NODE_DIR overrides the work directory there
// and here.
const (
	DefaultNodeDir   = "/var/lib/readyline-node"
	JaegerQueryURL   = "http://127.0.0.1:16686"
	OTLPHTTPEndpoint = "http://127.0.0.1:4318"
	OTLPGRPCEndpoint = "127.0.0.1:4317"
	// Bridge is the CNI bridge of the node.
	Bridge = "readyline0"
	// KubernetesVersion is the version deploy/node/tools/kubernetes builds.
	KubernetesVersion = "v1.37.2"
)

// CacheDir returns node.sh's binary cache: $READYLINE_CACHE or its default.
func CacheDir() string {
	if d := os.Getenv("READYLINE_CACHE"); d != "" {
		return d
	}
	return "/var/cache/readyline"
}

// Tool returns the path of a binary deploy/node builds and caches (kubectl,
// jaeger, crictl, ...) as `node.sh tool --built NAME` reports it: node.sh is
// the one place that knows where its cache keeps what, so no test holds a
// path computed before the build that makes it. It fails when the binary is
// not built yet, and under make when no earlier step of the run built or asked
// for it (the build ledger, deploy/node/lib/build.sh): a test never builds
// what it reads. Tool is safe for concurrent use.
func Tool(name string) (string, error) {
	if p, ok := tools.Load(name); ok {
		return p.(string), nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	var stderr bytes.Buffer
	cmd := exec.Command(filepath.Join(root, "deploy", "node", "node.sh"), "tool", "--built", name)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("node.sh tool %s: %w: %s", name, err, strings.TrimSpace(stderr.String()))
	}
	p := strings.TrimSpace(string(out))
	tools.Store(name, p)
	return p, nil
}

// tools caches Tool's answers by name.
var tools sync.Map

// Env is a running local node and Jaeger with clients for them. It is safe
// for concurrent use by parallel tests.
type Env struct {
	RepoRoot   string
	NodeDir    string
	Kubeconfig string
	// NodeName is the node's name (the host name).
	NodeName string

	Config  *rest.Config
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
	Mapper  *restmapper.DeferredDiscoveryRESTMapper
	// Jaeger reads the node's Jaeger (JaegerQueryURL).
	Jaeger *jaeger.Client

	// Log receives the output of node.sh; tests usually pass os.Stderr.
	Log io.Writer
}

// RepoRoot returns the directory of readyline's go.mod, searching upwards from
// the working directory (go test runs in the package directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module "+Module+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", Module)
		}
		dir = parent
	}
}

// NodeDir returns the node's work directory: $NODE_DIR or the default.
func NodeDir() string {
	if d := os.Getenv("NODE_DIR"); d != "" {
		return d
	}
	return DefaultNodeDir
}

// ErrNotRoot is returned by Setup when the tests do not run as root.
var ErrNotRoot = errors.New("the end-to-end tests start a Kubernetes node and must run as root")

// Setup brings the node and Jaeger up (node.sh up, node.sh jaeger-up; both
// reuse what already runs) and connects to the API server.
func Setup(ctx context.Context, log io.Writer) (*Env, error) {
	if os.Geteuid() != 0 {
		return nil, ErrNotRoot
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	e := &Env{RepoRoot: root, NodeDir: NodeDir(), Log: log, Jaeger: jaeger.NewClient(JaegerQueryURL)}
	e.Kubeconfig = filepath.Join(e.NodeDir, "admin.kubeconfig")
	if err := e.NodeScript(ctx, "up"); err != nil {
		return nil, err
	}
	if err := e.NodeScript(ctx, "jaeger-up"); err != nil {
		return nil, err
	}
	if err := e.connect(); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Env) connect() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", e.Kubeconfig)
	if err != nil {
		return fmt.Errorf("loading %s: %w", e.Kubeconfig, err)
	}
	cfg.UserAgent = "readyline-e2e"
	cfg.QPS, cfg.Burst = 50, 100
	if e.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	if e.Dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return fmt.Errorf("creating dynamic client: %w", err)
	}
	e.Mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(e.Client.Discovery()))
	e.Config = cfg
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	e.NodeName = strings.ToLower(host)
	return nil
}

// NodeScript runs deploy/node/node.sh with args, its output going to e.Log.
func (e *Env) NodeScript(ctx context.Context, args ...string) error {
	return e.NodeScriptEnv(ctx, nil, args...)
}

// NodeScriptEnv is NodeScript with extra environment variables for node.sh
// ("NAME=value", e.g. NODE_PIDNS=1), which win over the test's own.
func (e *Env) NodeScriptEnv(ctx context.Context, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(e.RepoRoot, "deploy", "node", "node.sh"), args...)
	cmd.Stdout, cmd.Stderr = e.Log, e.Log
	if cmd.Stdout == nil {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	}
	// The kubelet's own tracing is on: the kernel-level tests compare
	// readyline's CRI calls with the kubelet's CRI spans.
	cmd.Env = append(append(os.Environ(), "NODE_DIR="+e.NodeDir, "KUBELET_TRACING=1"), env...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("node.sh %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// Teardown stops the node and Jaeger (node.sh down, node.sh jaeger-down).
func (e *Env) Teardown(ctx context.Context) error {
	return errors.Join(e.NodeScript(ctx, "down"), e.NodeScript(ctx, "jaeger-down"))
}

// ExamplePath returns the path of a manifest in deploy/examples.
func (e *Env) ExamplePath(name string) string {
	return filepath.Join(e.RepoRoot, "deploy", "examples", name)
}

// ArtifactsDir returns deploy/e2e/artifacts (git-ignored), creating it. Tests
// write their recordings there for post-mortems.
func (e *Env) ArtifactsDir() (string, error) {
	dir := filepath.Join(e.RepoRoot, "deploy", "e2e", "artifacts")
	return dir, os.MkdirAll(dir, 0o755)
}
