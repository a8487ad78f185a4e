package redact

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestPod(t *testing.T) {
	hook := &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "curl -u admin:hunter2 http://x/"}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{
			lastAppliedAnnotation: `{"spec":{"containers":[{"env":[{"name":"PW","value":"hunter2"}]}]}}`, "team": "db"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "db",
				Env:     []corev1.EnvVar{{Name: "PW", Value: "hunter2"}, {Name: "EMPTY"}},
				Command: []string{"mysql"}, Args: []string{"-phunter2", "db"},
				Lifecycle: &corev1.Lifecycle{PostStart: hook, PreStop: hook},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Env: []corev1.EnvVar{{Name: "X", Value: "hunter2"}}}}},
		}}
	before, _ := json.Marshal(pod)
	got := Pod(pod)
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("redacted pod holds the secret:\n%s", b)
	}
	if after, _ := json.Marshal(pod); string(after) != string(before) {
		t.Error("Pod modified its argument")
	}
	c := got.Spec.Containers[0]
	if !slices.Equal(c.Command, []string{"mysql"}) || !slices.Equal(c.Args, []string{"-p" + Marker, "db"}) {
		t.Errorf("command %q args %q: the program in command decides what its args hold", c.Command, c.Args)
	}
	if c.Env[1].Value != "" || got.Annotations["team"] != "db" {
		t.Errorf("env %+v annotations %v", c.Env, got.Annotations)
	}
	if Pod(nil) != nil {
		t.Error("Pod(nil) != nil")
	}
}

// specPod is a pod with a command line of every kind Pod redacts.
func specPod(uid, secret string) *corev1.Pod {
	probe := func(cmd ...string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}}
	}
	long := benchScript(2 * memoMinBytes)[2] // remembered by the argv memo too
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: types.UID(uid), Labels: map[string]string{"v": "1"}},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Command: []string{"sh", "-c"}, Args: []string{"htpasswd -nb admin " + secret}}},
			Containers: []corev1.Container{{Name: "db", Command: []string{"mysqld"},
				ReadinessProbe: probe("sh", "-c", "mysqladmin ping -p"+secret),
				LivenessProbe:  probe("sh", "-c", long+" --token="+secret),
				Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"curl", "-u", "a:" + secret}}}},
			}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Command: []string{"redis-cli", "-a", secret}}}},
		}}
}

// TestPodCache: PodCache.Pod gives what Pod does; a pod's updates that
// leave its commands as they were (a label, a status) are not redacted
// again, one that changes them is, and the cache stays within its bytes.
func TestPodCache(t *testing.T) {
	c := NewPodCache(1 << 20)
	pod := specPod("u1", "hunter2")
	want, _ := json.Marshal(Pod(pod))
	first := c.Pod(pod)
	if got, _ := json.Marshal(first); string(got) != string(want) {
		t.Fatalf("PodCache.Pod:\n%s\nPod:\n%s", got, want)
	}
	if strings.Contains(string(want), "hunter2") {
		t.Fatalf("the secret is left: %s", want)
	}
	first.Spec.Containers[0].ReadinessProbe.Exec.Command[0] = "changed by the caller"
	update := pod.DeepCopy()
	update.Labels["v"] = "2"
	update.Status.Phase = corev1.PodRunning
	got, _ := json.Marshal(c.Pod(update))
	if c.redactions != 1 {
		t.Errorf("%d redactions for an update that changed no command, want 1", c.redactions)
	}
	if !strings.Contains(string(got), `"v":"2"`) || strings.Contains(string(got), "changed by the caller") {
		t.Errorf("the update's pod: %s", got)
	}
	changed := specPod("u1", "s3cr3t")
	changed.Spec.Containers[0].Command = []string{"mysqld", "--skip-grant-tables"}
	got, _ = json.Marshal(c.Pod(changed))
	if c.redactions != 2 || !strings.Contains(string(got), "--skip-grant-tables") || strings.Contains(string(got), "s3cr3t") {
		t.Errorf("%d redactions, pod %s: a changed command must be redacted anew", c.redactions, got)
	}
	for i := range 200 {
		c.Pod(specPod(fmt.Sprint("pod-", i), "x"))
	}
	if c.bytes > c.maxBytes || c.order.Len() != len(c.entries) {
		t.Errorf("%d bytes in %d entries (%d in order), at most %d", c.bytes, len(c.entries), c.order.Len(), c.maxBytes)
	}
	if c.Pod(nil) != nil {
		t.Error("PodCache.Pod(nil) != nil")
	}
}
