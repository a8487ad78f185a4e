package correlator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/readyline/readyline/collector/event"
)

// TestScheduledOnASlowNodeClock: a pod created with its nodeName is marked
// PodScheduled by the kubelet on the node's clock; a node 1.5 s behind the
// API server's puts that before the pod's creation. The start still has
// its scheduling phase, zero long at the start, not none (the cgroup
// v2-only VM node of deploy/cgroup2, whose clock drifts under emulation,
// showed the phase missing where the local node's trace had it).
func TestScheduledOnASlowNodeClock(t *testing.T) {
	sc := newScenario(t, "slowclock", corev1.PodSpec{Containers: []corev1.Container{ctr("web", "nginx")}})
	sc.cond(corev1.PodScheduled, -1.5)
	sc.cond(corev1.PodInitialized, 0.05)
	sc.update(0.05)
	uid, sb := sc.uid, sc.sandboxOf()
	sc.call(0.3, 0.8, event.CRIRunPodSandbox, func(c *event.CRICall) { c.PodUID, c.PodSandboxID = uid, sb })
	sc.runtime(0.81, sb, "", 0, 0.7, 0, 0, 0)
	sc.cond(corev1.PodReadyToStartContainers, 0.85)
	sc.update(0.85)
	sc.startContainer(1.1, "web")
	sc.ready(1.5)
	tl := sc.run(Config{})
	var phases []string
	for _, p := range tl.Phases {
		phases = append(phases, p.Name)
		if p.Name == PhaseSchedule {
			if !p.Start.Equal(tl.Start) || !p.End.Equal(tl.Start) || p.Source != "api-coarse" {
				t.Errorf("scheduling %v..%v (%s), want zero long at the start %v, api-coarse", p.Start, p.End, p.Source, tl.Start)
			}
			return
		}
	}
	t.Errorf("phases %v: no %s", phases, PhaseSchedule)
}
