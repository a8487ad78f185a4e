package correlator

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

// nodeIP is the node's address: the pod IP of every hostNetwork pod.
const nodeIP = "192.168.122.10"

// hostNetPod is a hostNetwork pod with one container "agent" whose
// readinessProbe the kubelet makes at 2 s and 3 s; the pod is Ready at 3.3 s.
// Its ids are its own (several run at once).
func hostNetPod(t *testing.T, name, sandbox, id string, c corev1.Container, port uint16) *scenario {
	c.Name, c.Command = "agent", []string{"agent"}
	sc := newScenario(t, name, corev1.PodSpec{HostNetwork: true, Containers: []corev1.Container{c}})
	sc.pod.Status.HostIP, sc.pod.Status.HostIPs = nodeIP, []corev1.HostIP{{IP: nodeIP}}
	sc.pod.Status.PodIP, sc.pod.Status.PodIPs = nodeIP, []corev1.PodIP{{IP: nodeIP}}
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.exec(0.45, sandbox, 100, shimPID, "pause")
	// The runtime reports the node's IP for a hostNetwork sandbox too.
	sc.runtime(0.5, sandbox, "", 0, 0.4, 0, 0, 0)
	sc.events[len(sc.events)-1].(*event.ContainerInfo).PodIP = nodeIP
	sc.runtime(1.05, id, "agent", 0, 1.0, 1.1, 0, 0)
	sc.exec(1.12, id, 500, shimPID, "agent")
	sc.status(false, running("agent", id, 1.1, true, false))
	sc.update(1.3)
	sc.conn(2.0, 2.01, nodeIP, port, event.TCPEstablished)
	sc.conn(3.0, 3.01, nodeIP, port, event.TCPEstablished)
	sc.status(false, running("agent", id, 1.1, true, true))
	sc.cond(corev1.ContainersReady, 3.3)
	sc.cond(corev1.PodReady, 3.3)
	sc.update(3.3)
	return sc
}

// TestHostNetworkPodsShareTheNodeIP: two hostNetwork pods have the node's
// IP; each gets the kubelet's connections to its own probe port (one named),
// neither the other's, nor the kubelet's to the API server on the node.
func TestHostNetworkPodsShareTheNodeIP(t *testing.T) {
	a := hostNetPod(t, "agent-a", "5a"+sandboxID[2:], "3a"+idMain[2:],
		corev1.Container{ReadinessProbe: tcpProbe(0, 1, intstr.FromInt32(8081))}, 8081)
	b := hostNetPod(t, "agent-b", "5b"+sandboxID[2:], "3b"+idMain[2:],
		corev1.Container{Ports: []corev1.ContainerPort{namedPort("metrics", 9100)},
			ReadinessProbe: httpProbeOn(0, 1, intstr.FromString("metrics"))}, 9100)
	b.conn(2.5, 2.51, nodeIP, 6443, event.TCPEstablished) // the kubelet and the API server
	got := runPods(t, Config{}, a, b)
	for name, port := range map[string]uint16{"agent-a": 8081, "agent-b": 9100} {
		att := findContainer(t, got[name], "agent").Attempts[0]
		if fmt.Sprint(probeKinds(att)) != "[readiness@2.00/unknown readiness@3.00/success]" {
			t.Errorf("%s probes %v, want its two readiness attempts", name, probeKinds(att))
		}
		for _, p := range att.Probes {
			if p.Conn == nil || p.Conn.Dport != port || p.Conn.Daddr != nodeIP {
				t.Errorf("%s probe %+v: not a connection to %s:%d", name, p, nodeIP, port)
			}
		}
	}
}

// startApp starts the pod's one container "app" (idMain), the runtime
// saying it started at started s; the API shows it running (and started,
// unless it has a startupProbe) at shown s.
func startApp(sc *scenario, started, shown float64) {
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.update(0.6)
	sc.runtime(started+0.05, idMain, "app", 0, started-0.1, started, 0, 0)
	sc.exec(started+0.02, idMain, 500, shimPID, "app")
	sc.status(false, running("app", idMain, started, sc.pod.Spec.Containers[0].StartupProbe == nil, false))
	sc.update(shown)
}

// readyAt: the API shows app started and ready, and the pod Ready, at s.
func readyAt(sc *scenario, s float64) {
	sc.status(false, running("app", idMain, sc.pod.Status.ContainerStatuses[0].State.Running.StartedAt.Sub(t0).Seconds(), true, true))
	sc.cond(corev1.ContainersReady, s)
	sc.cond(corev1.PodReady, s)
	sc.update(s)
}

func app(c corev1.Container) corev1.PodSpec {
	c.Name, c.Command = "app", []string{"app"}
	return corev1.PodSpec{Containers: []corev1.Container{c}}
}

func wantProbes(t *testing.T, a ContainerAttempt, want string) {
	t.Helper()
	if got := fmt.Sprint(probeKinds(a)); got != want {
		t.Errorf("probes %s, want %s", got, want)
	}
}

// TestStartupGatesReadinessOnOnePort: httpGet startup and readiness
// probes on one port. Readiness does not run until the container is
// started: not while every startup attempt so far was refused, even for a
// connection the startup probe's period does not explain; the kubelet runs
// readiness right after the startup success, before the API shows it.
func TestStartupGatesReadinessOnOnePort(t *testing.T) {
	sc := newScenario(t, "startup-gate", app(corev1.Container{
		StartupProbe:   httpProbeOn(0, 1, intstr.FromInt32(8080)),
		ReadinessProbe: httpProbeOn(0, 5, intstr.FromInt32(8080))}))
	startApp(sc, 1.0, 1.3)
	sc.conn(2.0, 2.001, podIP, 8080, event.TCPRefused)
	sc.conn(2.3, 2.301, podIP, 8080, event.TCPRefused)
	sc.conn(3.0, 3.001, podIP, 8080, event.TCPRefused)
	sc.conn(4.0, 4.01, podIP, 8080, event.TCPEstablished)
	sc.conn(4.15, 4.16, podIP, 8080, event.TCPEstablished)
	sc.status(false, running("app", idMain, 1.0, true, false))
	sc.update(4.3)
	readyAt(sc, 4.4)
	withPodIP(sc)
	tl := sc.run(Config{})
	wantProbes(t, findContainer(t, tl, "app").Attempts[0],
		"[startup@2.00/failure startup@2.30/failure startup@3.00/failure startup@4.00/success readiness@4.15/success]")
}

// withPodIP gives the pod its IP, as the runtime reports it for the sandbox.
func withPodIP(sc *scenario) {
	sc.pod.Status.PodIP, sc.pod.Status.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	for _, ev := range sc.events {
		if ci, ok := ev.(*event.ContainerInfo); ok && ci.Sandbox {
			ci.PodIP = podIP
		}
	}
}

// TestInitialDelayFromTruncatedStartedAt: the kubelet measures
// initialDelaySeconds from the status' StartedAt, truncated to the second:
// a container started at 1.9 s with a 5 s delay is probed from 6.0 s, and
// a connection before that is not a readiness attempt (here it is the
// liveness probe, which has no delay).
func TestInitialDelayFromTruncatedStartedAt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		liveness *corev1.Probe
		want     string
	}{
		{"readiness only", nil, "[readiness@6.05/success]"},
		{"with liveness", tcpProbe(0, 10, intstr.FromInt32(8080)), "[liveness@3.00/unknown readiness@6.05/success]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := newScenario(t, "delay", app(corev1.Container{
				ReadinessProbe: tcpProbe(5, 10, intstr.FromInt32(8080)), LivenessProbe: tc.liveness}))
			startApp(sc, 1.9, 2.1)
			withPodIP(sc)
			sc.conn(3.0, 3.001, podIP, 8080, event.TCPEstablished)
			sc.conn(6.05, 6.051, podIP, 8080, event.TCPEstablished)
			readyAt(sc, 6.3)
			tl := sc.run(Config{})
			wantProbes(t, findContainer(t, tl, "app").Attempts[0], tc.want)
			if c := findCondition(t, tl, CondContainersReady); !c.Cause.Equal(at(6.051)) {
				t.Errorf("ContainersReady cause %v (%s), want the readiness attempt at 6.05 s", c.Cause, c.CauseEvent)
			}
		})
	}
}

// TestSuccessThreshold: with successThreshold 3 the attempt that flips
// ready is the third success in a row.
func TestSuccessThreshold(t *testing.T) {
	t.Run("httpGet", func(t *testing.T) {
		sc := newScenario(t, "threshold-http", app(corev1.Container{
			ReadinessProbe: threshold(httpProbeOn(0, 1, intstr.FromInt32(8080)), 3)}))
		startApp(sc, 1.0, 1.3)
		withPodIP(sc)
		sc.conn(2.0, 2.001, podIP, 8080, event.TCPRefused)
		for _, s := range []float64{3, 4, 5} {
			sc.conn(s, s+0.01, podIP, 8080, event.TCPEstablished)
		}
		readyAt(sc, 5.2)
		tl := sc.run(Config{})
		wantProbes(t, findContainer(t, tl, "app").Attempts[0],
			"[readiness@2.00/failure readiness@3.00/success readiness@4.00/success readiness@5.00/success]")
		if c := findCondition(t, tl, CondContainersReady); !c.Cause.Equal(at(5.01)) {
			t.Errorf("ContainersReady cause %v (%s), want the third success at 5.01 s", c.Cause, c.CauseEvent)
		}
	})
	t.Run("exec", func(t *testing.T) {
		sc := newScenario(t, "threshold-exec", app(corev1.Container{
			ReadinessProbe: threshold(execProbe(0, 1, "check"), 3)}))
		startApp(sc, 1.0, 1.3)
		for i, code := range []int{0, 0, 1, 0, 0, 0} {
			s := float64(2 + i)
			sc.exec(s, idMain, uint32(600+i), shimPID, "check")
			sc.exit(s+0.01, idMain, uint32(600+i), code)
		}
		readyAt(sc, 7.3)
		tl := sc.run(Config{})
		if c := findCondition(t, tl, CondContainersReady); !c.Cause.Equal(at(7.01)) {
			t.Errorf("ContainersReady cause %v (%s), want the third success in a row at 7.01 s", c.Cause, c.CauseEvent)
		}
	})
}

// TestHTTPPostStartHookAndReadinessOnOnePort: an httpGet postStart hook
// (on a named port) and an httpGet readiness probe on the same port. The
// hook's request is the first connection once the container runs; the
// probe waits for it to return.
func TestHTTPPostStartHookAndReadinessOnOnePort(t *testing.T) {
	sc := newScenario(t, "http-hook", app(corev1.Container{
		Ports: []corev1.ContainerPort{namedPort("http", 8080)},
		Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{
			HTTPGet: &corev1.HTTPGetAction{Path: "/warmup", Port: intstr.FromString("http")}}},
		ReadinessProbe: httpProbeOn(0, 1, intstr.FromInt32(8080))}))
	sc.cond(corev1.PodScheduled, 0)
	sc.cond(corev1.PodInitialized, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	withPodIP(sc)
	sc.update(0.6)
	sc.runtime(1.05, idMain, "app", 0, 0.9, 1.0, 0, 0)
	sc.exec(1.02, idMain, 500, shimPID, "app")
	sc.conn(1.05, 3.0, podIP, 8080, event.TCPEstablished) // GET /warmup
	sc.conn(3.1, 3.11, podIP, 8080, event.TCPEstablished)
	sc.status(false, running("app", idMain, 1.0, true, false))
	sc.update(3.3)
	sc.conn(4.1, 4.11, podIP, 8080, event.TCPEstablished)
	readyAt(sc, 4.3)
	tl := sc.run(Config{})
	a := findContainer(t, tl, "app").Attempts[0]
	if h := a.PostStart; h == nil || h.Inferred || h.Handler != "httpGet" || h.Conn == nil || h.Conn.Dport != 8080 ||
		!h.Start.Equal(at(1.05)) || !h.End.Equal(at(3.0)) {
		t.Fatalf("postStart %+v, want the connection 1.05 s .. 3.0 s", a.PostStart)
	}
	wantProbes(t, a, "[readiness@3.10/unknown readiness@4.10/success]")
	if !hasInsight(tl, InsightPostStartWait, "app's postStart hook ran 1.9") {
		t.Errorf("no hook insight: %+v", tl.Insights)
	}
}

// TestTwoContainersProbeOnePort: a sidecar and the app both probe port
// 15021 (as with a service mesh). The gating tells them apart while only
// one can run (the app is not running, then in its initialDelaySeconds);
// once both can, the connections are ambiguous and on neither container.
func TestTwoContainersProbeOnePort(t *testing.T) {
	sc := newScenario(t, "mesh", corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: always(), Command: []string{"proxy"},
			ReadinessProbe: httpProbeOn(0, 1, intstr.FromInt32(15021))}},
		Containers: []corev1.Container{{Name: "app", Command: []string{"app"},
			ReadinessProbe: httpProbeOn(3, 1, intstr.FromInt32(15021))}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	withPodIP(sc)
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.update(0.6)
	sc.runtime(0.85, idSidecar, "proxy", 0, 0.7, 0.8, 0, 0)
	sc.exec(0.82, idSidecar, 300, shimPID, "proxy")
	sc.status(true, running("proxy", idSidecar, 0.8, true, false))
	sc.update(0.95)
	sc.conn(1.0, 1.01, podIP, 15021, event.TCPEstablished)
	sc.status(true, running("proxy", idSidecar, 0.8, true, true))
	sc.cond(corev1.PodInitialized, 1.3)
	sc.update(1.3)
	sc.runtime(1.95, idMain, "app", 0, 1.8, 1.9, 0, 0)
	sc.exec(1.92, idMain, 500, shimPID, "app")
	sc.conn(2.0, 2.01, podIP, 15021, event.TCPEstablished)
	sc.status(false, running("app", idMain, 1.9, true, false))
	sc.update(2.1)
	sc.conn(3.0, 3.01, podIP, 15021, event.TCPEstablished)
	sc.conn(4.05, 4.06, podIP, 15021, event.TCPEstablished)
	sc.conn(4.06, 4.07, podIP, 15021, event.TCPEstablished)
	sc.status(false, running("app", idMain, 1.9, true, true))
	sc.cond(corev1.ContainersReady, 4.3)
	sc.cond(corev1.PodReady, 4.3)
	sc.update(4.3)
	tl := sc.run(Config{})
	wantProbes(t, findContainer(t, tl, "proxy").Attempts[0],
		"[readiness@1.00/success readiness@2.00/unknown readiness@3.00/unknown]")
	wantProbes(t, findContainer(t, tl, "app").Attempts[0], "[~readiness@4.30/success]")
	var amb []string
	for _, a := range tl.AmbiguousProbes {
		var cands []string
		for _, c := range a.Candidates {
			cands = append(cands, c.Container+"/"+c.Kind)
		}
		amb = append(amb, fmt.Sprintf("%.2f:%s", a.Start.Sub(t0).Seconds(), strings.Join(cands, ",")))
	}
	if fmt.Sprint(amb) != "[4.05:proxy/readiness,app/readiness 4.06:proxy/readiness,app/readiness]" {
		t.Errorf("ambiguous %v, want the two connections at 4.05 and 4.06 s, each proxy's or app's", amb)
	}
}

// TestNamedProbePort: a probe that names its port connects to the
// container port of that name; the kubelet's other connections to the
// pod are no probe.
func TestNamedProbePort(t *testing.T) {
	sc := newScenario(t, "named", app(corev1.Container{
		Ports:        []corev1.ContainerPort{namedPort("web", 8080), namedPort("admin", 9901)},
		StartupProbe: tcpProbe(0, 1, intstr.FromString("admin"))}))
	startApp(sc, 1.0, 1.3)
	withPodIP(sc)
	sc.conn(2.0, 2.001, podIP, 8080, event.TCPEstablished)
	sc.conn(2.1, 2.101, podIP, 9901, event.TCPEstablished)
	readyAt(sc, 2.4)
	tl := sc.run(Config{})
	wantProbes(t, findContainer(t, tl, "app").Attempts[0], "[startup@2.10/success]")
}

// TestLoopbackProbesOfHostNetworkPods: kubeadm's static pods probe
// 127.0.0.1 (httpGet host), which is the node's network namespace: the
// connection is the hostNetwork pod's whose probe port it is, and one to a
// loopback port no pod probes is nobody's, not an event waiting for a pod.
func TestLoopbackProbesOfHostNetworkPods(t *testing.T) {
	// kubeadm's etcd: httpGet on host 127.0.0.1, port 2381 by number.
	probe := httpProbeOn(0, 1, intstr.FromInt32(2381))
	probe.HTTPGet.Host = "127.0.0.1"
	sc := hostNetPod(t, "etcd-like", "5c"+sandboxID[2:], "3c"+idMain[2:], corev1.Container{ReadinessProbe: probe}, 2381)
	for _, ev := range sc.events {
		if c, ok := ev.(*event.TCPConnection); ok {
			c.Daddr = "127.0.0.1"
		}
	}
	sc.conn(2.5, 2.51, "127.0.0.1", 10248, event.TCPEstablished) // the kubelet's own healthz
	c := New(Config{})
	var got []*Timeline
	for _, ev := range sc.events {
		got = append(got, c.Handle(ev)...)
	}
	got = append(got, c.Handle(&event.Tick{Time: at(60)})...)
	if len(got) != 1 {
		t.Fatalf("%d timelines", len(got))
	}
	att := findContainer(t, got[0], "agent").Attempts[0]
	if fmt.Sprint(probeKinds(att)) != "[readiness@2.00/unknown readiness@3.00/success]" {
		t.Errorf("probes %v, want its two readiness attempts", probeKinds(att))
	}
	if st := c.Stats(); st.Orphaned != 0 || st.Held != 0 {
		t.Errorf("stats %+v: a loopback connection waited for a pod", st)
	}
}

// TestLoopbackProbesOfTwoHostNetworkPods: two hostNetwork pods probed on
// 127.0.0.1 at their own ports each get their own connections.
func TestLoopbackProbesOfTwoHostNetworkPods(t *testing.T) {
	// One with no host (its IP, the node's), one on host "localhost".
	a := hostNetPod(t, "cm-like", "5d"+sandboxID[2:], "3d"+idMain[2:],
		corev1.Container{ReadinessProbe: httpProbeOn(0, 1, intstr.FromInt32(10257))}, 10257)
	tcp := tcpProbe(0, 1, intstr.FromInt32(10259))
	tcp.TCPSocket.Host = "localhost"
	b := hostNetPod(t, "sched-like", "5e"+sandboxID[2:], "3e"+idMain[2:], corev1.Container{ReadinessProbe: tcp}, 10259)
	for _, sc := range []*scenario{a, b} {
		for _, ev := range sc.events {
			if c, ok := ev.(*event.TCPConnection); ok {
				c.Daddr = "127.0.0.1"
			}
		}
	}
	got := runPods(t, Config{}, a, b)
	for name, port := range map[string]uint16{"cm-like": 10257, "sched-like": 10259} {
		att := findContainer(t, got[name], "agent").Attempts[0]
		if fmt.Sprint(probeKinds(att)) != "[readiness@2.00/unknown readiness@3.00/success]" {
			t.Errorf("%s probes %v, want its two readiness attempts", name, probeKinds(att))
		}
		for _, p := range att.Probes {
			if p.Conn == nil || p.Conn.Dport != port {
				t.Errorf("%s probe %+v: not its connection to port %d", name, p, port)
			}
		}
	}
}

// TestKubeadmStaticPodProbes: the probes of kubeadm's static pods, as the
// kind control plane (v1.37) has them: httpGet with host 127.0.0.1 on a
// named port (probe-port), HTTPS. The server resets the connection after
// the answer (the kubelet's TLS close_notify arrives after it closed): an
// answered probe whose result the kernel cannot tell, not a failure.
func TestKubeadmStaticPodProbes(t *testing.T) {
	probe := httpProbeOn(0, 1, intstr.FromString("probe-port"))
	probe.HTTPGet.Host, probe.HTTPGet.Scheme = "127.0.0.1", corev1.URISchemeHTTPS
	sc := hostNetPod(t, "kube-scheduler-cp", "5f"+sandboxID[2:], "3f"+idMain[2:], corev1.Container{
		Ports:          []corev1.ContainerPort{namedPort("probe-port", 10259)},
		ReadinessProbe: probe,
	}, 10259)
	for i, ev := range sc.events {
		if c, ok := ev.(*event.TCPConnection); ok {
			c.Daddr = "127.0.0.1"
			if i%2 == 0 {
				c.Result, c.Error = event.TCPReset, "ECONNRESET"
			}
		}
	}
	att := findContainer(t, sc.run(Config{}), "agent").Attempts[0]
	if fmt.Sprint(probeKinds(att)) != "[readiness@2.00/unknown readiness@3.00/success]" {
		t.Errorf("probes %v, want its two readiness attempts, neither failed", probeKinds(att))
	}
}

// TestLoopbackProbeHostOfPodNetwork: a pod with its own network namespace
// whose probe names host 127.0.0.1 is probed on the kubelet's loopback,
// not in the pod: no connection is its probe.
func TestLoopbackProbeHostOfPodNetwork(t *testing.T) {
	probe := httpProbeOn(0, 1, intstr.FromInt32(8080))
	probe.HTTPGet.Host = "127.0.0.1"
	sc := newScenario(t, "loopback-host", app(corev1.Container{ReadinessProbe: probe}))
	startApp(sc, 1.0, 1.3)
	withPodIP(sc)
	sc.conn(2.0, 2.001, podIP, 8080, event.TCPEstablished)
	sc.conn(2.1, 2.101, "127.0.0.1", 8080, event.TCPEstablished)
	readyAt(sc, 2.4)
	tl := sc.run(Config{})
	if p := findContainer(t, tl, "app").Attempts[0].Probes; len(p) != 0 && p[0].Conn != nil {
		t.Errorf("probes %+v: a connection was taken for a probe of the kubelet's own loopback", p)
	}
}
