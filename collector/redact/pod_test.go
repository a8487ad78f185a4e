package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
