package correlator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestSignalledProcessIsNoExitZero: a SIGKILLed entrypoint has no exit code
// (the kernel reports 0, which means nothing then); the attempt's status is
// 128+9 like a shell's.
func TestSignalledProcessIsNoExitZero(t *testing.T) {
	sc := newScenario(t, "killed", corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}})
	sc.cond(corev1.PodScheduled, 0)
	sc.update(0.05)
	sc.sandboxUp(0.3)
	sc.runtime(1, idMain, "app", 0, 0.9, 1, 0, 0)
	sc.exec(1.01, idMain, 1100, shimPID, "sleep", "3600")
	sc.kill(2, idMain, 1100, 9)
	sc.delete(2.5)
	tl := sc.run(Config{})
	a := findContainer(t, tl, "app").Attempts[0]
	if a.Process == nil || a.Process.Signal != 9 || a.Process.ExitCode != nil {
		t.Fatalf("process %+v, want signal 9 and no exit code", a.Process)
	}
	if a.ExitCode == nil || *a.ExitCode != 137 {
		t.Errorf("attempt exit code %v, want 137", a.ExitCode)
	}
}
