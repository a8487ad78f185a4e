package correlator

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTenantPodUpdatesStayCheap: issue 25's tenant, a pod whose exec
// probes hold a 256 KiB script and which patches its own labels again and
// again. Each update must cost the correlator work that does not grow
// with the script: it reads no command then (connPorts takes the probes'
// ports only); the spec's commands are redacted when a timeline is built,
// at most MaxBytes of each (collector/redact). The measure is the bytes
// allocated per update (the redactor of the issue allocated gigabytes for
// such a script), which a busy machine does not change.
func TestTenantPodUpdatesStayCheap(t *testing.T) {
	script := strings.Repeat(`curl -fsS -H "Authorization: Bearer t0k" "http://127.0.0.1/?token=a&x=1" || exit 1; `, (256<<10)/80)
	sc := newScenario(t, "tenant", app(corev1.Container{
		ReadinessProbe: execProbe(0, 1, "sh", "-c", script),
		LivenessProbe:  execProbe(0, 1, "sh", "-c", script+" # liveness"),
	}))
	sc.update(0)
	const updates = 200
	for i := range updates {
		sc.pod.Labels = map[string]string{"patch": fmt.Sprint(i)}
		sc.update(0.001 * float64(i+1))
	}
	c := New(Config{})
	c.Handle(sc.events[0])
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, ev := range sc.events[1:] {
		c.Handle(ev)
	}
	runtime.ReadMemStats(&after)
	if perUpdate := (after.TotalAlloc - before.TotalAlloc) / updates; perUpdate > 16<<10 {
		t.Errorf("%d bytes allocated per update of a pod with a %d-byte probe script: the update reads its commands", perUpdate, len(script))
	}

	startApp(sc, 1.0, 1.3)
	readyAt(sc, 2)
	tl := sc.run(Config{})
	if a := findContainer(t, tl, "app").Attempts[0]; a.Process == nil {
		t.Errorf("the tenant's start: %+v", a)
	}
}
