//go:build sim

package sim

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/exporter/apiauth/pkitest"
)

// binary is the path an environment variable gives (the Makefile's
// bench-cluster sets them): the simulation cannot run without it, and
// says so.
func binary(tb testing.TB, env string) string {
	tb.Helper()
	p := os.Getenv(env)
	if p == "" {
		tb.Fatalf("%s is not set: run the simulation with make bench-cluster, which builds etcd, kube-apiserver and readyline-api", env)
	}
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("%s: %v", env, err)
	}
	return p
}

// freePort is a loopback port nobody listens on now.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// hostIP is this machine's first IPv4 address off loopback: the address
// the API server's aggregator reaches readyline-api at (an Endpoints'
// address may not be a loopback one).
func hostIP(tb testing.TB) net.IP {
	tb.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		tb.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.To4()
		}
	}
	tb.Fatal("no IPv4 address off loopback: the aggregator needs one to reach readyline-api")
	return nil
}

// process is a child process of the simulation, its output in a file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// start starts name and stops it (by its PID, SIGTERM then SIGKILL) when
// the benchmark ends; a failed benchmark prints the end of its log.
func start(tb testing.TB, dir, name, path string, args ...string) *process {
	tb.Helper()
	return startEnv(tb, dir, name, nil, path, args...)
}

// startEnv is start with env added to the simulation's environment.
func startEnv(tb testing.TB, dir, name string, env []string, path string, args ...string) *process {
	tb.Helper()
	p := &process{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		tb.Fatal(err)
	}
	p.cmd = exec.Command(path, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); out.Close(); close(p.done) }()
	tb.Cleanup(func() {
		p.stop()
		if tb.Failed() {
			tb.Logf("the end of %s's log:\n%s", name, tail(p.log, 30))
		}
	})
	return p
}

func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail is the last n lines of file.
func tail(file string, n int) string {
	f, err := os.Open(file)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if lines = append(lines, sc.Text()); len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}

// rss is a process's resident memory now (VmRSS), in bytes.
func rss(tb testing.TB, pid int) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb * 1024
		}
	}
	tb.Fatalf("no VmRSS for pid %d", pid)
	return 0
}

// cpuSeconds is the CPU time a process used so far (user + system).
func cpuSeconds(tb testing.TB, pid int) float64 {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command's closing parenthesis: utime and
	// stime are the 12th and 13th of them.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// apiServer is a real etcd and kube-apiserver, configured as kubeadm
// configures the aggregation layer: the front proxy's CA and client
// certificate, routing to an APIService's endpoints.
type apiServer struct {
	dir       string
	url       string
	clusterCA *pkitest.CA
	admin     *rest.Config
	adminFile string // a kubeconfig of admin
	apiserver *process
}

func startAPIServer(tb testing.TB, dir string, host net.IP) *apiServer {
	tb.Helper()
	etcd, kubeAPIServer := binary(tb, "READYLINE_SIM_ETCD"), binary(tb, "READYLINE_SIM_KUBE_APISERVER")
	s := &apiServer{dir: dir}
	s.clusterCA = pkitest.NewCA(tb, dir, "cluster")
	frontCA := pkitest.NewCA(tb, dir, "front-proxy")
	serving := s.clusterCA.Issue(tb, dir, "apiserver", pkitest.Spec{CommonName: "kube-apiserver",
		DNSNames: []string{"localhost", "kubernetes.default.svc"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, Usage: x509.ExtKeyUsageServerAuth})
	proxy := frontCA.Issue(tb, dir, "front-proxy-client", pkitest.Spec{CommonName: "front-proxy-client", Usage: x509.ExtKeyUsageClientAuth})
	admin := s.clusterCA.Issue(tb, dir, "admin", pkitest.Spec{CommonName: "admin", Groups: []string{"system:masters"}, Usage: x509.ExtKeyUsageClientAuth})
	saKey, saPub := serviceAccountKeys(tb, dir)

	etcdPort, peerPort, port := freePort(tb), freePort(tb), freePort(tb)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	// Without fsync: the simulation's writes are its set-up; what it
	// measures are reads.
	start(tb, dir, "etcd", etcd, "--name=sim", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=sim="+peerURL, "--unsafe-no-fsync", "--quota-backend-bytes=8589934592")
	s.apiserver = start(tb, dir, "kube-apiserver", kubeAPIServer,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), "--advertise-address="+host.String(),
		// No controller-manager, no node: nobody keeps the kubernetes
		// Service's endpoints, nor should.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--client-ca-file="+s.clusterCA.File,
		"--tls-cert-file="+serving.CertFile, "--tls-private-key-file="+serving.KeyFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--requestheader-client-ca-file="+frontCA.File,
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file="+proxy.CertFile, "--proxy-client-key-file="+proxy.KeyFile,
		"--enable-aggregator-routing=true",
		"--authorization-mode=RBAC",
		// No controller-manager makes the default ServiceAccounts.
		"--disable-admission-plugins=ServiceAccount",
		"--v=1")
	s.url = fmt.Sprintf("https://127.0.0.1:%d", port)
	s.admin = s.configFor(admin)
	s.adminFile = s.kubeconfig(tb, "admin", admin)
	s.waitReady(tb)
	return s
}

// serviceAccountKeys writes the key pair the API server signs and checks
// ServiceAccount tokens with.
func serviceAccountKeys(tb testing.TB, dir string) (keyFile, pubFile string) {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		tb.Fatal(err)
	}
	keyFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		tb.Fatal(err)
	}
	return keyFile, pubFile
}

// configFor is a client configuration of the user whose certificate is
// leaf, without client-side rate limits: the simulation's clients
// measure the server.
func (s *apiServer) configFor(leaf pkitest.Leaf) *rest.Config {
	return &rest.Config{Host: s.url, QPS: -1, WarningHandler: rest.NoWarnings{},
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.clusterCA.File, CertFile: leaf.CertFile, KeyFile: leaf.KeyFile}}
}

// kubeconfig writes a kubeconfig of the user whose certificate is leaf.
func (s *apiServer) kubeconfig(tb testing.TB, name string, leaf pkitest.Leaf) string {
	tb.Helper()
	f := filepath.Join(s.dir, name+".kubeconfig")
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: sim, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: %s, user: {client-certificate: %q, client-key: %q}}]
contexts: [{name: sim, context: {cluster: sim, user: %s}}]
current-context: sim
`, s.url, s.clusterCA.File, name, leaf.CertFile, leaf.KeyFile, name)
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return f
}

func (s *apiServer) waitReady(tb testing.TB) {
	tb.Helper()
	client := kubernetes.NewForConfigOrDie(s.admin)
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		body, err := client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if err == nil {
			return
		}
		if s.apiserver.exited() || time.Now().After(deadline) {
			tb.Fatalf("kube-apiserver not ready: %v %s", err, body)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// metrics is the API server's /metrics, as text.
func (s *apiServer) metrics(tb testing.TB) string {
	tb.Helper()
	client := kubernetes.NewForConfigOrDie(s.admin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := client.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		tb.Fatalf("the API server's metrics: %v", err)
	}
	return string(body)
}

// drain reads and closes a response body.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
