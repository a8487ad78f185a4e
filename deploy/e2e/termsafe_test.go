//go:build e2e

package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestTerminalEscapesPrintedEscaped: a pod runs a program whose file name
// holds terminal escape sequences (a title change, a screen clear, a
// carriage return); readyline explain prints them escaped, never raw.
func TestTerminalEscapesPrintedEscaped(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 3*time.Minute)
	// The pod is sent as an object, not as YAML: the API server's YAML
	// decoder refuses control characters even where they are escaped.
	const evil = "/work/\x1b]0;pwned\x07\x1b[2J\rfake\u009bline"
	ns := newNamespace(t)
	rec := recordPod(t, ns, "escapes")
	work := []corev1.VolumeMount{{Name: "work", MountPath: "/work"}}
	grace := int64(1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "escapes"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Volumes:                       []corev1.Volume{{Name: "work", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			InitContainers: []corev1.Container{{
				Name: "plant", Image: "localhost/busybox:local", ImagePullPolicy: corev1.PullNever,
				Command:      []string{"sh", "-c", `printf '#!/bin/sh\nexec sleep "$@"\n' >"$0" && chmod +x "$0"`, evil},
				VolumeMounts: work,
			}},
			Containers: []corev1.Container{{
				Name: "app", Image: "localhost/busybox:local", ImagePullPolicy: corev1.PullNever,
				Command:      []string{evil, "3600"},
				VolumeMounts: work,
			}},
		},
	}
	if _, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Timeline(ctx, ns, "escapes", time.Minute); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, d.Bin, "explain", "--api-addr", strings.TrimPrefix(d.APIURL, "http://"), ns+"/escapes").CombinedOutput()
	if err != nil {
		t.Fatalf("readyline explain: %v\n%s", err, out)
	}
	text := string(out)
	for _, raw := range []string{"\x1b", "\x07", "\r", "\u009b"} {
		if strings.Contains(text, raw) {
			t.Errorf("readyline explain printed a raw %q:\n%q", raw, text)
		}
	}
	if !strings.Contains(text, `process \x1b]0;pwned\a`) {
		t.Errorf("the program's name is not shown escaped:\n%s", text)
	}
}
