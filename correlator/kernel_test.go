package correlator

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/readyline/readyline/collector/event"
)

const (
	rt      = "runtime.v1.RuntimeService/"
	podIP   = "10.244.0.9"
	otherIP = "10.244.0.10"
)

// kernelDemo is lifecycle-demo as the uprobes and the TCP tracer add to
// it: the CRI calls, the CNI plugins, the probes' connections.
func kernelDemo(t testing.TB) *scenario {
	sc := newScenario(t, "kernel-demo", corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init-sidecar", Image: "busybox", RestartPolicy: always(),
			Command:      []string{"sh", "-c", "touch /tmp/ready; sleep 3600"},
			StartupProbe: execProbe(0, 1, "sh", "-c", "test -f /tmp/ready")}},
		Containers: []corev1.Container{{Name: "nginx", Image: "nginx",
			Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 80}},
			StartupProbe:   &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http")}}},
			ReadinessProbe: &corev1.Probe{PeriodSeconds: 1, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}}}},
	})
	uid := sc.uid
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	// RunPodSandbox: CNI (bridge, then host-local as its IPAM), then pause.
	sc.cniExec(0.30, 0.38, 3001, "bridge")
	sc.cniExec(0.31, 0.33, 3002, "host-local")
	sc.cniExec(0.36, 0.37, 3003, "loopback")
	sc.exec(0.45, sandboxID, 100, shimPID, "pause")
	sc.call(0.25, 0.50, rt+"RunPodSandbox", func(c *event.CRICall) { c.PodUID, c.PodSandboxID = uid, sandboxID })
	// Another pod's sandbox overlapping the end of this one: its plugin at 0.47 is ambiguous.
	sc.cniExec(0.47, 0.49, 3004, "bridge")
	sc.call(0.46, 0.90, rt+"RunPodSandbox", func(c *event.CRICall) { c.PodUID = "someone-else" })
	sc.runtime(0.55, sandboxID, "", 0, 0.44, 0, 0, 0)
	sc.events[len(sc.events)-1].(*event.ContainerInfo).PodIP = podIP
	sc.cond(corev1.PodReadyToStartContainers, 0.6)
	sc.update(0.6)

	// The sidecar: created and started over the CRI; its startupProbe is an
	// ExecSync whose process the kernel sees inside the call. The
	// StartContainer call names only the container id.
	sc.call(0.62, 0.70, rt+"CreateContainer", func(c *event.CRICall) {
		c.PodUID, c.PodSandboxID, c.ContainerName, c.ContainerID = uid, sandboxID, "init-sidecar", idSidecar
	})
	sc.call(0.71, 0.80, rt+"StartContainer", func(c *event.CRICall) { c.ContainerID = idSidecar })
	sc.exec(0.78, idSidecar, 300, shimPID, "sh", "-c", "touch /tmp/ready; sleep 3600")
	sc.exec(1.80, idSidecar, 310, shimPID, "sh", "-c", "test -f /tmp/ready")
	sc.exit(1.81, idSidecar, 310, 0)
	sc.call(1.75, 1.85, rt+"ExecSync", func(c *event.CRICall) { c.ContainerID, c.Cmd = idSidecar, []string{"sh", "-c", "test -f /tmp/ready"} })
	// An ExecSync whose process was lost: the call alone stands for it.
	sc.call(2.75, 2.85, rt+"ExecSync", func(c *event.CRICall) { c.ContainerID, c.Cmd = idSidecar, []string{"sh", "-c", "test -f /tmp/ready"} })
	sc.runtime(0.9, idSidecar, "init-sidecar", 0, 0.68, 0.79, 0, 0)
	sc.status(true, running("init-sidecar", idSidecar, 0.79, true, true))
	sc.cond(corev1.PodInitialized, 2.0)
	sc.update(2.0)

	// nginx: PullImage, then its httpGet startupProbe (refused twice, then
	// an answer) and tcpSocket readiness probe, as connections to the pod IP.
	sc.call(2.0, 4.0, "runtime.v1.ImageService/PullImage", func(c *event.CRICall) {
		c.PodUID, c.Image, c.ImageRef = uid, "nginx", "sha256:abc"
	})
	sc.call(4.05, 4.10, rt+"CreateContainer", func(c *event.CRICall) {
		c.PodUID, c.PodSandboxID, c.ContainerName, c.ContainerID = uid, sandboxID, "nginx", idMain
	})
	sc.call(4.11, 4.20, rt+"StartContainer", func(c *event.CRICall) { c.ContainerID = idMain })
	sc.exec(4.15, idMain, 400, shimPID, "httpd", "-f")
	sc.conn(5.2, 5.2005, podIP, 80, event.TCPRefused)
	sc.conn(6.2, 6.2005, podIP, 80, event.TCPRefused)
	sc.conn(7.2, 7.21, podIP, 80, event.TCPEstablished)
	sc.conn(7.3, 7.31, otherIP, 80, event.TCPEstablished) // another pod's probe
	sc.status(false, running("nginx", idMain, 4.2, true, false))
	sc.update(7.5)
	sc.conn(8.2, 8.201, podIP, 80, event.TCPEstablished)
	sc.status(false, running("nginx", idMain, 4.2, true, true))
	sc.cond(corev1.ContainersReady, 8.4)
	sc.cond(corev1.PodReady, 8.4)
	sc.update(8.4)
	return sc
}

func TestKernelCRICallsAndConnections(t *testing.T) {
	tl := kernelDemo(t).run(Config{})
	sb := tl.Sandbox
	if sb == nil || sb.Call == nil || !sb.Call.Start.Equal(at(0.25)) || !sb.Call.End.Equal(at(0.50)) {
		t.Fatalf("sandbox %+v", sb)
	}
	var plugins []string
	for _, p := range sb.CNI {
		plugins = append(plugins, p.Filename)
	}
	if len(plugins) != 3 || plugins[0] != "/usr/lib/cni/bridge" || plugins[2] != "/usr/lib/cni/loopback" {
		t.Errorf("CNI plugins %v: want bridge, host-local, loopback and not the other pod's", plugins)
	}
	phases := map[string]Phase{}
	for _, p := range tl.Phases {
		phases[p.Name] = p
	}
	if ph := phases[PhaseSandbox]; !ph.Start.Equal(at(0.25)) || !ph.End.Equal(at(0.50)) || ph.Source != "kernel" {
		t.Errorf("sandbox phase %+v, want the RunPodSandbox call", ph)
	}
	if c := findCondition(t, tl, CondPodReadyToStartContainers); !c.Cause.Equal(at(0.50)) {
		t.Errorf("PodReadyToStartContainers cause %v (%s)", c.Cause, c.CauseEvent)
	}

	side := findContainer(t, tl, "init-sidecar").Attempts[0]
	if len(side.Calls) != 2 || side.Calls[0].Method != rt+"CreateContainer" || side.Calls[1].Method != rt+"StartContainer" {
		t.Errorf("sidecar calls %+v", side.Calls)
	}
	if len(side.Probes) != 2 {
		t.Fatalf("sidecar probes %+v", side.Probes)
	}
	p0 := side.Probes[0]
	if p0.Call == nil || !p0.Start.Equal(at(1.75)) || !p0.End.Equal(at(1.85)) || p0.Result != ProbeSuccess {
		t.Errorf("probe joined with its ExecSync: %+v", p0)
	}
	if p1 := side.Probes[1]; p1.Call == nil || p1.Result != ProbeSuccess || !p1.Start.Equal(at(2.75)) {
		t.Errorf("probe from the ExecSync call alone: %+v", p1)
	}

	if len(tl.ImagePulls) != 1 || tl.ImagePulls[0].Container != "nginx" || tl.ImagePulls[0].Call.End.Sub(tl.ImagePulls[0].Call.Start) != 2*time.Second {
		t.Errorf("image pulls %+v", tl.ImagePulls)
	}
	nginx := findContainer(t, tl, "nginx").Attempts[0]
	var got []string
	for _, p := range nginx.Probes {
		if p.Conn == nil || p.Inferred {
			t.Errorf("nginx probe without its connection: %+v", p)
			continue
		}
		got = append(got, string(p.Kind)+"/"+p.Handler+"/"+string(p.Result))
	}
	want := []string{"startup/httpGet/failure", "startup/httpGet/failure", "startup/httpGet/success", "readiness/tcpSocket/success"}
	if len(got) != len(want) {
		t.Fatalf("nginx probes %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("nginx probes %v, want %v", got, want)
		}
	}
}

// TestCallsBeforeTheirContainerIsKnown: a StartContainer naming only an id
// waits until something says whose it is.
func TestCallsBeforeTheirContainerIsKnown(t *testing.T) {
	sc := kernelDemo(t)
	// Move the nginx StartContainer first among the pod's node events.
	var start event.Event
	var rest []event.Event
	for _, ev := range sc.events {
		if c, ok := ev.(*event.CRICall); ok && c.Method == rt+"StartContainer" && c.ContainerID == idMain {
			start = ev
			continue
		}
		rest = append(rest, ev)
	}
	sc.events = append([]event.Event{rest[0], start}, rest[1:]...)
	tl := sc.run(Config{})
	calls := findContainer(t, tl, "nginx").Attempts[0].Calls
	if len(calls) != 2 || calls[1].Method != rt+"StartContainer" {
		t.Errorf("nginx calls %+v", calls)
	}
}

// TestCNIByContainerID: plugins that name their sandbox (CNI_CONTAINERID)
// are attributed by it, even while another pod's sandbox is being set up.
func TestCNIByContainerID(t *testing.T) {
	sc := kernelDemo(t)
	// Tag the plugin events: ours ADD for the sandbox, the 0.47 s one for another.
	for _, ev := range sc.events {
		if e, ok := ev.(*event.ProcessExec); ok && e.Scope == event.ScopeCNI {
			e.CNIContainerID, e.CNICommand = sandboxID, "ADD"
			if e.PID == 3004 {
				e.CNIContainerID = "0ther"
			}
		}
	}
	// One more of ours inside the overlap, which the time window must refuse.
	sc.cniExec(0.48, 0.485, 3005, "portmap")
	sc.events[len(sc.events)-2].(*event.ProcessExec).CNIContainerID = sandboxID
	sc.events[len(sc.events)-2].(*event.ProcessExec).CNICommand = "ADD"
	// Move them before the Ready update, where the source would deliver them.
	tl := sc.run(Config{})
	var plugins []string
	for _, p := range tl.Sandbox.CNI {
		plugins = append(plugins, p.Filename[len("/usr/lib/cni/"):])
	}
	if fmt.Sprint(plugins) != "[bridge host-local loopback portmap]" {
		t.Errorf("CNI plugins %v, want bridge host-local loopback portmap", plugins)
	}
}

// A start slower than cniKeep keeps its CNI plugins while other pods'
// sandboxes come and go, and once nothing is in progress the buffer is
// emptied and its memory given back (a quiet node after a burst of starts
// kept the burst's last minute of plugins, 0.5 MiB in bench-node).
func TestCNIKeptWhileTheStartIsInProgress(t *testing.T) {
	sc := sandboxedApp(t, "slow-after-cni")
	// Another pod's sandbox, well past a minute on.
	sc.cniExec(70, 70.1, 4000, "bridge")
	sc.cniExec(80, 80.1, 4001, "bridge")
	sc.runIn(90.05, sandboxID, idMain, "app", 0, 90.0, 90.04, 0, 0, "")
	sc.exec(90.05, idMain, 1100, shimPID, "sleep", "3600")
	sc.status(false, running("app", idMain, 90.04, true, true))
	sc.cond(corev1.ContainersReady, 90.1)
	sc.cond(corev1.PodReady, 90.1)
	sc.update(90.1)

	c := New(Config{Timeout: 10 * time.Minute})
	var got []*Timeline
	for _, ev := range sc.events {
		got = append(got, c.Handle(ev)...)
	}
	for s := 1; s <= 20 && len(got) == 0; s++ {
		got = append(got, c.Handle(&event.Tick{Time: at(90.1 + float64(s))})...)
	}
	if len(got) != 1 {
		t.Fatalf("%d timelines, want 1", len(got))
	}
	var plugins []string
	for _, p := range got[0].Sandbox.CNI {
		plugins = append(plugins, fmt.Sprint(p.Filename, " pid ", p.PID))
	}
	if fmt.Sprint(plugins) != "[/usr/lib/cni/bridge pid 3100]" {
		t.Errorf("CNI plugins of the sandbox %q, want its bridge (pid 3100)", plugins)
	}
	if n := len(c.cni.procs); n != 2 {
		t.Errorf("%d CNI processes kept right after the start, want the 2 of the last minute", n)
	}
	c.Handle(&event.Tick{Time: at(90.1 + 61)})
	if c.cni.procs != nil || c.cni.byPID != nil {
		t.Errorf("CNI buffer a minute after the last start: %d processes, map %v; want both nil", len(c.cni.procs), c.cni.byPID != nil)
	}
}

func TestCNIBufferBounded(t *testing.T) {
	var b cniBuffer
	now := at(0)
	for i := range cniMax + 10 {
		b.record(&event.ProcessExec{Time: now, Process: event.Process{PID: uint32(10000 + i), Scope: event.ScopeCNI}, Filename: "/opt/cni/bin/bridge"}, now)
	}
	if len(b.procs) != cniMax || len(b.byPID) != cniMax {
		t.Errorf("%d processes, %d by pid; want %d", len(b.procs), len(b.byPID), cniMax)
	}
	if b.procs[0].pid != 10010 {
		t.Errorf("oldest kept pid %d, want 10010 (the first 10 forgotten)", b.procs[0].pid)
	}
}
