//go:build sim

// Package sim simulates a large cluster for readyline.dev against a real
// etcd and kube-apiserver: thousands of nodes' daemons (their pods in the
// API server, their node API answering as a daemon does), readyline-api
// as a process of its own behind the API server's aggregation layer, a
// user listing through the API server, and the daemons' Events reads of
// a mass incident. BenchmarkClusterSim measures what the README quotes and
// fails when a goal is missed. Run by make bench-cluster.
package sim

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/readyline/readyline/collector/podevents"
	"github.com/readyline/readyline/exporter/apiauth"
	"github.com/readyline/readyline/exporter/apiauth/pkitest"
	"github.com/readyline/readyline/exporter/podstartapi"
)

// The goals the README quotes, on this 2-core machine, at 5000 nodes x
// 110 pods (550 000 starts); each is checked at every size.
const (
	goalFirstPage     = 500 * time.Millisecond // kubectl get podstarts -A: its first page of 500, through the API server
	goalNamespaceList = 2 * time.Second        // one namespace's starts, whole (11 000 at 5000 nodes)
	goalRSS           = deploymentMemoryLimit  // readyline-api's resident memory
	goalCPU           = 1.0                    // readyline-api's CPU, in cores, polling every node each 5 s
	goalAPIRate       = 1.0                    // API-server requests a second readyline-api adds, nobody asking
	// The Events reads of every daemon together keep to the budget
	// readyline-api shares out (--events-reads-per-second, 10), within
	// goalEventsSlack of it.
	eventsBudget    = 10.0
	goalEventsSlack = 1.5
)

// deploymentMemoryLimit is readyline-api's memory limit in
// deploy/aggregated and the chart.
const deploymentMemoryLimit = 2 << 30

func BenchmarkClusterSim(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Log("not root: the simulation runs as any user (it changes nothing on the host)")
	}
	apiBinary := binary(b, "READYLINE_SIM_API")
	dir := b.TempDir()
	host := hostIP(b)
	s := startAPIServer(b, dir, host)
	admin := kubernetes.NewForConfigOrDie(s.admin)
	nodeCA := pkitest.NewCA(b, dir, "node")
	nodes := startFakeNodes(b, nodeCA, dir)
	c := &cluster{b: b, dir: dir, host: host, s: s, admin: admin, nodes: nodes, apiBinary: apiBinary, t0: time.Now().UTC()}
	c.setUp(nodeCA)

	var report []string
	made := 0
	for _, size := range sizes(b) {
		b.Run(fmt.Sprintf("nodes=%d", size), func(b *testing.B) {
			c.b = b
			begin := time.Now()
			nodes.addNodes(b, admin, made, size, c.t0)
			made = size
			b.Logf("%d daemon pods in the API server (%v)", size, time.Since(begin).Round(time.Second))
			r := c.measure(size)
			report = append(report, r.String())
			for b.Loop() { // the figures are the set-up's; one iteration
			}
			r.report(b)
		})
		if size == 1000 {
			b.Run("events-incident", func(b *testing.B) {
				c.b = b
				e := c.eventsIncident(1000)
				report = append(report, e.String())
				for b.Loop() {
				}
				e.report(b)
			})
		}
	}
	b.Logf("readyline.dev at scale, against a real kube-apiserver (this machine: 2 cores):\n%s", strings.Join(report, "\n"))
}

// sizes are the cluster sizes simulated: READYLINE_SIM_NODES (a
// comma-separated list, for a quicker look), or 100, 1000 and 5000.
func sizes(b *testing.B) []int {
	v := os.Getenv("READYLINE_SIM_NODES")
	if v == "" {
		return []int{100, 1000, 5000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || (len(out) > 0 && n <= out[len(out)-1]) {
			b.Fatalf("READYLINE_SIM_NODES=%q: want growing node counts, comma-separated", v)
		}
		out = append(out, n)
	}
	return out
}

// cluster is the simulation's state.
type cluster struct {
	b         testing.TB
	dir       string
	host      net.IP
	s         *apiServer
	admin     kubernetes.Interface
	nodes     *fakeNodes
	apiBinary string
	t0        time.Time

	apiPort   int
	apiArgs   []string
	viewer    *rest.Config
	daemonCfg *rest.Config
}

// setUp makes what does not change with the cluster's size: the
// namespaces, the APIService and its endpoints, the users, and
// readyline-api's certificates and flags.
func (c *cluster) setUp(nodeCA *pkitest.CA) {
	b := c.b
	ctx := context.Background()
	for _, ns := range append([]string{daemonNamespace}, teamNamespaces()...) {
		if _, err := c.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	apiCA := pkitest.NewCA(b, c.dir, "readyline-api")
	serving := apiCA.Issue(b, c.dir, "readyline-api-serving", pkitest.Spec{CommonName: "readyline-api",
		DNSNames: []string{"readyline-api.readyline.svc"}, Usage: x509.ExtKeyUsageServerAuth})
	client := nodeCA.Issue(b, c.dir, "readyline-api-client", pkitest.Spec{CommonName: apiauth.AggregatorName, Usage: x509.ExtKeyUsageClientAuth})
	c.apiPort = freePort(b)
	c.apiArgs = []string{
		"--secure-port=" + strconv.Itoa(c.apiPort), "--bind-address=0.0.0.0",
		"--tls-cert-file=" + serving.CertFile, "--tls-private-key-file=" + serving.KeyFile,
		"--kubeconfig=" + c.s.adminFile, "--authentication-kubeconfig=" + c.s.adminFile, "--authorization-kubeconfig=" + c.s.adminFile,
		"--node-ca-file=" + nodeCA.File, "--node-client-cert-file=" + client.CertFile, "--node-client-key-file=" + client.KeyFile,
		"--node-port=" + strconv.Itoa(c.nodes.port), "--daemon-namespace=" + daemonNamespace,
		"--events-reads-per-second=" + strconv.FormatFloat(eventsBudget, 'g', -1, 64),
	}

	// The Service the APIService names, its endpoint this machine's
	// address (the aggregator routes to endpoints).
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "readyline-api", Namespace: daemonNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(c.apiPort))}}}}
	if _, err := c.admin.CoreV1().Services(daemonNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	port := int32(c.apiPort)
	//nolint:staticcheck // the aggregator reads Endpoints or EndpointSlices by version: both are made
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "readyline-api", Namespace: daemonNamespace},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: c.host.String()}}, Ports: []corev1.EndpointPort{{Name: "https", Port: port}}}}}
	if _, err := c.admin.CoreV1().Endpoints(daemonNamespace).Create(ctx, ep, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	name, ready := "https", true
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "readyline-api-sim", Namespace: daemonNamespace,
		Labels: map[string]string{discoveryv1.LabelServiceName: "readyline-api"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.host.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}}}
	if _, err := c.admin.DiscoveryV1().EndpointSlices(daemonNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	apiCABytes, err := os.ReadFile(apiCA.File)
	if err != nil {
		b.Fatal(err)
	}
	// The APIService as deploy/aggregated's (apiregistration.k8s.io is
	// not in client-go's clientset: written as JSON).
	apisvc, _ := json.Marshal(map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": podstartapi.Version + "." + podstartapi.GroupName},
		"spec": map[string]any{"group": podstartapi.GroupName, "version": podstartapi.Version,
			"service":  map[string]any{"namespace": daemonNamespace, "name": "readyline-api", "port": 443},
			"caBundle": apiCABytes, "groupPriorityMinimum": 1000, "versionPriority": 15},
	})
	if err := c.admin.Discovery().RESTClient().Post().AbsPath("/apis/apiregistration.k8s.io/v1/apiservices").
		SetHeader("Content-Type", "application/json").Body(apisvc).Do(ctx).Error(); err != nil {
		b.Fatalf("the APIService: %v", err)
	}

	// The user who lists: podstarts' reader in every namespace, nothing
	// more. The daemons: who reads Events (as the DaemonSet's
	// ServiceAccount does), not system:masters, whose requests the API
	// server's priority and fairness exempts.
	c.viewer = c.user("viewer", "", rbacv1.PolicyRule{APIGroups: []string{podstartapi.GroupName}, Resources: []string{podstartapi.Resource}, Verbs: []string{"get", "list", "watch"}})
	c.daemonCfg = c.user("readyline-daemons", "sim:daemons", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}})
}

func ptr[T any](v T) *T { return &v }

func teamNamespaces() []string {
	out := make([]string, namespaces)
	for i := range out {
		out[i] = fmt.Sprintf("team-%02d", i)
	}
	return out
}

// user makes a user of a certificate, bound cluster-wide to rule alone.
func (c *cluster) user(name, group string, rule rbacv1.PolicyRule) *rest.Config {
	b := c.b
	ctx := context.Background()
	spec := pkitest.Spec{CommonName: name, Usage: x509.ExtKeyUsageClientAuth}
	if group != "" {
		spec.Groups = []string{group}
	}
	leaf := c.s.clusterCA.Issue(b, c.dir, name, spec)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "sim-" + name}, Rules: []rbacv1.PolicyRule{rule}}
	if _, err := c.admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sim-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}}}
	if _, err := c.admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return c.s.configFor(leaf)
}

// startAPI starts readyline-api and waits until it has asked every
// daemon once and the API server serves readyline.dev through it.
func (c *cluster) startAPI(size int) *process {
	b := c.b
	// The Go heap's limit the Deployment gives readyline-api: its memory
	// limit (GOMEMLIMIT from limits.memory).
	env := []string{fmt.Sprintf("GOMEMLIMIT=%d", deploymentMemoryLimit)}
	p := startEnv(b, c.dir, fmt.Sprintf("readyline-api-%d", size), env, c.apiBinary, c.apiArgs...)
	viewer := c.httpClient(c.viewer)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		resp, err := viewer.Get(c.s.url + "/apis/" + podstartapi.GroupName + "/" + podstartapi.Version + "/podstarts?limit=1")
		if err == nil {
			drain(resp)
			if resp.StatusCode == http.StatusOK && c.nodes.lists.Load() >= int64(size) {
				return p
			}
		}
		if p.exited() || time.Now().After(deadline) {
			b.Fatalf("readyline.dev not served through the API server for %d nodes: %v", size, err)
		}
		time.Sleep(time.Second)
	}
}

func (c *cluster) httpClient(cfg *rest.Config) *http.Client {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		c.b.Fatal(err)
	}
	hc.Timeout = 2 * time.Minute
	return hc
}

// scale is what the simulation measured at one size.
type scale struct {
	nodes                    int
	firstPage, nsList, allLs time.Duration
	pages, nsItems, allItems int
	rss, cpu                 float64 // bytes; cores
	apiRate, idleRate        float64 // the API server's requests a second with readyline-api, and before it
	polls, fullPolls         float64 // the nodes' lists a second, and those answered in full (not 304)
}

func (r scale) String() string {
	return fmt.Sprintf("  %5d nodes (%d starts): first page of -A %v, namespace team-07 (%d) %v, -A whole (%d pages) %v; "+
		"readyline-api RSS %.0f MiB, CPU %.2f cores (%.0f node lists/s, %.0f/s in full); API-server requests %.2f/s with it, %.2f/s before it",
		r.nodes, r.nodes*podsPerNode, r.firstPage.Round(time.Millisecond), r.nsItems, r.nsList.Round(time.Millisecond),
		r.pages, r.allLs.Round(time.Millisecond), r.rss/(1<<20), r.cpu, r.polls, r.fullPolls, r.apiRate, r.idleRate)
}

func (r scale) report(b *testing.B) {
	b.ReportMetric(float64(r.firstPage.Microseconds())/1000, "ms/first-page")
	b.ReportMetric(float64(r.nsList.Microseconds())/1000, "ms/list-ns")
	b.ReportMetric(r.allLs.Seconds(), "s/list-A")
	b.ReportMetric(r.rss/(1<<20), "MiB-RSS")
	b.ReportMetric(r.cpu, "cores")
	b.ReportMetric(r.apiRate-r.idleRate, "apiserver-req/s")
	if r.allItems != r.nodes*podsPerNode {
		b.Errorf("kubectl's pages of -A held %d starts, want %d", r.allItems, r.nodes*podsPerNode)
	}
	if r.firstPage > goalFirstPage {
		b.Errorf("the first page of -A took %v, over the %v goal", r.firstPage, goalFirstPage)
	}
	if r.nsList > goalNamespaceList {
		b.Errorf("a namespace's list took %v, over the %v goal", r.nsList, goalNamespaceList)
	}
	if r.rss > goalRSS {
		b.Errorf("readyline-api's RSS is %.0f MiB, over the %d MiB goal", r.rss/(1<<20), goalRSS>>20)
	}
	if r.cpu > goalCPU {
		b.Errorf("readyline-api used %.2f cores, over the %.1f goal", r.cpu, goalCPU)
	}
	if r.apiRate-r.idleRate > goalAPIRate {
		b.Errorf("readyline-api adds %.2f API-server requests a second, over the %.0f goal", r.apiRate-r.idleRate, goalAPIRate)
	}
}

// measure starts readyline-api for size nodes and measures it: the API
// server's requests before it and with it (nobody asking), its CPU
// polling the nodes, then a user's lists through the API server.
func (c *cluster) measure(size int) scale {
	b := c.b
	r := scale{nodes: size}
	const window = 30 * time.Second
	before := c.requests()
	time.Sleep(window)
	r.idleRate = (c.requests() - before) / window.Seconds()

	p := c.startAPI(size)
	defer p.stop()
	time.Sleep(10 * time.Second) // its first polls' garbage collected
	pid := p.cmd.Process.Pid
	cpu0, lists0, full0, req0, t0 := cpuSeconds(b, pid), c.nodes.lists.Load(), c.nodes.full.Load(), c.requests(), time.Now()
	time.Sleep(window)
	took := time.Since(t0).Seconds()
	r.cpu = (cpuSeconds(b, pid) - cpu0) / took
	r.polls = float64(c.nodes.lists.Load()-lists0) / took
	r.fullPolls = float64(c.nodes.full.Load()-full0) / took
	r.apiRate = (c.requests() - req0) / took

	viewer := c.httpClient(c.viewer)
	base := c.s.url + "/apis/" + podstartapi.GroupName + "/" + podstartapi.Version
	// kubectl get podstarts -A: pages of 500 as a table.
	var firsts []time.Duration
	for range 5 {
		t := time.Now()
		_, _, n := c.page(viewer, base+"/podstarts?limit=500")
		firsts = append(firsts, time.Since(t))
		if n != 500 {
			b.Fatalf("the first page of -A had %d rows, want 500", n)
		}
	}
	r.firstPage = median(firsts)
	t := time.Now()
	_, _, r.nsItems = c.page(viewer, base+"/namespaces/team-07/podstarts")
	r.nsList = time.Since(t)
	t = time.Now()
	for token := ""; ; {
		u := base + "/podstarts?limit=500"
		if token != "" {
			u += "&continue=" + token
		}
		next, _, n := c.page(viewer, u)
		r.pages++
		r.allItems += n
		if token = next; token == "" {
			break
		}
	}
	r.allLs = time.Since(t)
	r.rss = rss(b, pid)
	return r
}

// page gets a list as kubectl get does (a Table), and returns its
// continue token and row count.
func (c *cluster) page(client *http.Client, u string) (string, int, int) {
	b := c.b
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("GET %s: %s", u, resp.Status)
	}
	if err := jsonDecode(resp, &table); err != nil {
		b.Fatalf("GET %s: %v", u, err)
	}
	return table.Continue, resp.StatusCode, len(table.Rows)
}

func median(d []time.Duration) time.Duration {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// requests is the count of every request the API server has served.
func (c *cluster) requests() float64 {
	return c.counter("apiserver_request_total", nil)
}

// counter sums the series of a counter of the API server whose labels
// have the values of want.
func (c *cluster) counter(name string, want map[string]string) float64 {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(c.s.metrics(c.b)))
	if err != nil {
		c.b.Fatalf("the API server's metrics: %v", err)
	}
	var sum float64
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			match = match && labels[k] == v
		}
		if match {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// incident is what the simulation measured of the daemons' Events reads.
type incident struct {
	nodes                  int
	lists, objects         float64 // a second, with the shares
	baseLists, baseObjects float64 // a second, each node on its own limit
	share                  float64
	events                 int
}

func (e incident) String() string {
	return fmt.Sprintf("  Events, %d nodes x %d pods stuck (%d Events): %.1f LISTs/s, %.0f Events read from etcd/s with readyline-api's shares (%.4f/s a node; budget %.0f/s); "+
		"%.1f LISTs/s, %.0f Events/s with each node's own limit",
		e.nodes, stuckPerNode, e.events, e.lists, e.objects, e.share, eventsBudget, e.baseLists, e.baseObjects)
}

func (e incident) report(b *testing.B) {
	b.ReportMetric(e.lists, "events-LIST/s")
	b.ReportMetric(e.objects, "events-read/s")
	b.ReportMetric(e.baseLists, "unshared-LIST/s")
	if e.lists > eventsBudget*goalEventsSlack {
		b.Errorf("the daemons' Events LISTs: %.1f a second, over the budget of %.0f (x%.1f)", e.lists, eventsBudget, goalEventsSlack)
	}
	if e.lists < eventsBudget/4 {
		b.Errorf("the daemons' Events LISTs: %.1f a second: the stuck pods' Events are hardly read (budget %.0f)", e.lists, eventsBudget)
	}
}

// eventsIncident stages a registry outage on nodes [0, size): each
// stuck pod has the kubelet's Events of it, and each node's daemon reads
// them as readyline's does (podevents.Reader: a pod in progress
// every minute, within the node's limits). It measures the LISTs and the
// Events they read from etcd with the shares readyline-api sends, then
// with each node's own limit alone.
func (c *cluster) eventsIncident(size int) incident {
	b := c.b
	e := incident{nodes: size}
	e.events = c.makeEvents(size)
	p := c.startAPI(size)
	defer p.stop()
	// The shares came with the polls: once readyline-api has seen every
	// node busy, each gets the budget's 1/size.
	want := eventsBudget / float64(size)
	converged := time.Now().Add(time.Minute)
	for c.nodes.share(size-1) > want*1.01 && time.Now().Before(converged) {
		time.Sleep(time.Second)
	}
	if e.share = c.nodes.share(size - 1); e.share > want*1.01 {
		b.Fatalf("readyline-api's Events share for a node of %d, all busy: %v, want %v", size, e.share, want)
	}
	// A share of 0.01 a second is a read every 100 s: two minutes see
	// about every node read once more after its first.
	e.lists, e.objects = c.readEvents(size, true, 10*time.Second, 120*time.Second)
	e.baseLists, e.baseObjects = c.readEvents(size, false, 10*time.Second, 30*time.Second)
	return e
}

// makeEvents writes the kubelet's Events of the stuck pods of nodes
// [0, size): a failed pull and the back-off, as a registry outage leaves.
func (c *cluster) makeEvents(size int) int {
	b := c.b
	ctx := context.Background()
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(32)
	begin := time.Now()
	now := metav1.NewTime(time.Now())
	for n := range size {
		for i := range stuckPerNode {
			pd := podOf(n, i)
			for j, ev := range []struct{ typ, reason, msg string }{
				{corev1.EventTypeWarning, "Failed", `Failed to pull image "registry.example/app:1.2": failed to pull and unpack image: dial tcp 10.0.0.9:443: i/o timeout`},
				{corev1.EventTypeNormal, "BackOff", `Back-off pulling image "registry.example/app:1.2"`},
			} {
				g.Go(func() error {
					_, err := c.admin.CoreV1().Events(pd.namespace).Create(ctx, &corev1.Event{
						ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%d", pd.name, j), Namespace: pd.namespace},
						InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: pd.namespace, Name: pd.name, UID: types.UID(pd.uid), FieldPath: "spec.containers{app}"},
						Type:           ev.typ, Reason: ev.reason, Message: ev.msg, Count: 4,
						Source:         corev1.EventSource{Component: "kubelet", Host: nodeName(n)},
						FirstTimestamp: now, LastTimestamp: now,
					}, metav1.CreateOptions{})
					if apierrors.IsAlreadyExists(err) {
						return nil
					}
					return err
				})
			}
		}
	}
	if err := g.Wait(); err != nil {
		b.Fatalf("writing the stuck pods' Events: %v", err)
	}
	n := size * stuckPerNode * 2
	b.Logf("%d Events in the API server (%v)", n, time.Since(begin).Round(time.Second))
	return n
}

// readEvents runs the daemons' Events reads of nodes [0, size) for
// warm+window, shared (each keeps to the share readyline-api sent it) or
// not, and returns the LISTs a second and the Events they read from etcd
// a second during window.
func (c *cluster) readEvents(size int, shared bool, warm, window time.Duration) (lists, objects float64) {
	b := c.b
	client := kubernetes.NewForConfigOrDie(c.daemonCfg)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for n := range size {
		reader, err := podevents.NewReader(podevents.Config{
			Events: func(ns string) podevents.EventLister { return client.CoreV1().Events(ns) }}, nil)
		if err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			due := make([]time.Time, stuckPerNode)
			for i := 0; ctx.Err() == nil; i = (i + 1) % stuckPerNode {
				if shared {
					reader.SetShare(c.nodes.share(n))
				}
				if wait := time.Until(due[i]); wait > 0 {
					select {
					case <-ctx.Done():
						return
					case <-time.After(wait):
					}
				}
				pd := podOf(n, i)
				_, _ = reader.Read(ctx, pd.namespace, pd.name, pd.uid, podevents.Background)
				due[i] = time.Now().Add(time.Minute) // a start in progress: a read a minute
			}
		}()
	}
	time.Sleep(warm)
	lists0, objs0, t0 := c.eventLists(), c.eventsFetched(), time.Now()
	time.Sleep(window)
	took := time.Since(t0).Seconds()
	lists, objects = (c.eventLists()-lists0)/took, (c.eventsFetched()-objs0)/took
	cancel()
	wg.Wait()
	return lists, objects
}

func (c *cluster) eventLists() float64 {
	return c.counter("apiserver_request_total", map[string]string{"verb": "LIST", "resource": "events"})
}

// eventsFetched is the count of Events the API server read from etcd for
// lists.
func (c *cluster) eventsFetched() float64 {
	return c.counter("apiserver_storage_list_fetched_objects_total", map[string]string{"resource": "events"})
}

func jsonDecode(resp *http.Response, into any) error {
	return json.NewDecoder(resp.Body).Decode(into)
}
