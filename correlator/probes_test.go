package correlator

import (
	"fmt"
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
