package correlator

import (
	"testing"
	"time"
)

// TestBoundProbes: a never-Ready pod's 600 failed readiness attempts are
// cut to the first and the last 32 and counted; a kind under the bound,
// and the order of what is kept, are untouched.
func TestBoundProbes(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var probes []ProbeAttempt
	for i := range 600 {
		at := t0.Add(time.Duration(i) * time.Second)
		if i < 10 {
			probes = append(probes, ProbeAttempt{Kind: ProbeStartup, Start: at, Result: ProbeFailure})
		}
		r := ProbeFailure
		if i%100 == 50 {
			r = ProbeUnknown
		}
		probes = append(probes, ProbeAttempt{Kind: ProbeReadiness, Start: at.Add(time.Millisecond), Result: r})
	}
	amb := make([]AmbiguousProbe, 100)
	for i := range amb {
		amb[i].Start = t0.Add(time.Duration(i) * time.Second)
	}
	tl := &Timeline{
		Containers:      []Container{{Name: "app", Attempts: []ContainerAttempt{{Probes: probes}, {Probes: probes[:20]}}}},
		AmbiguousProbes: amb,
	}
	boundProbes(tl)

	a := tl.Containers[0].Attempts[0]
	count := map[ProbeKind]int{}
	for i, p := range a.Probes {
		count[p.Kind]++
		if i > 0 && p.Start.Before(a.Probes[i-1].Start) {
			t.Fatalf("probe %d at %v before the one before it", i, p.Start)
		}
	}
	if count[ProbeStartup] != 10 || count[ProbeReadiness] != maxProbeAttempts {
		t.Errorf("kept %v, want 10 startup and %d readiness", count, maxProbeAttempts)
	}
	var firstReadiness, lastReadiness time.Time
	for _, p := range a.Probes {
		if p.Kind == ProbeReadiness {
			if firstReadiness.IsZero() {
				firstReadiness = p.Start
			}
			lastReadiness = p.Start
		}
	}
	if want := t0.Add(time.Millisecond); !firstReadiness.Equal(want) {
		t.Errorf("first readiness kept at %v, want the first attempt %v", firstReadiness, want)
	}
	if want := t0.Add(599*time.Second + time.Millisecond); !lastReadiness.Equal(want) {
		t.Errorf("last readiness kept at %v, want the last attempt %v", lastReadiness, want)
	}
	// Omitted: attempts 32..567; the unknown results among them are 50,
	// 150, ..., 550 (6), the rest failed.
	want := map[ProbeKind]OmittedProbes{ProbeReadiness: {Attempts: 600 - maxProbeAttempts, Failed: 600 - maxProbeAttempts - 6}}
	if got := a.ProbesOmitted; len(got) != 1 || got[ProbeReadiness] != want[ProbeReadiness] {
		t.Errorf("omitted %v, want %v", got, want)
	}
	if b := tl.Containers[0].Attempts[1]; len(b.Probes) != 20 || b.ProbesOmitted != nil {
		t.Errorf("an attempt under the bound: %d probes, omitted %v; want all 20 and none", len(b.Probes), b.ProbesOmitted)
	}
	if len(tl.AmbiguousProbes) != maxProbeAttempts || tl.AmbiguousOmitted != 100-maxProbeAttempts ||
		!tl.AmbiguousProbes[maxProbeAttempts-1].Start.Equal(amb[99].Start) {
		t.Errorf("ambiguous: kept %d (omitted %d), want %d and the last one", len(tl.AmbiguousProbes), tl.AmbiguousOmitted, maxProbeAttempts)
	}
}
