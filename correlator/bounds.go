package correlator

// maxProbeAttempts bounds the probe attempts of one kind a ContainerAttempt
// lists, and the ambiguous probes of a Timeline. A readiness probe failing
// every second until the 10 minute start timeout is 600 attempts, most of
// a never-Ready pod's timeline (528 KiB); the first attempts show how the
// probe began, the last ones how it ended.
const maxProbeAttempts = 64

// boundProbes cuts, once the timeline is derived, each attempt's probes of
// each kind, and the ambiguous probes, to the first and the last
// maxProbeAttempts/2, and counts what it left out.
func boundProbes(tl *Timeline) {
	for ci := range tl.Containers {
		for ai := range tl.Containers[ci].Attempts {
			a := &tl.Containers[ci].Attempts[ai]
			a.Probes, a.ProbesOmitted = boundProbeAttempts(a.Probes)
		}
	}
	if n := len(tl.AmbiguousProbes); n > maxProbeAttempts {
		half := maxProbeAttempts / 2
		tl.AmbiguousProbes = append(tl.AmbiguousProbes[:half:half], tl.AmbiguousProbes[n-half:]...)
		tl.AmbiguousOmitted = n - maxProbeAttempts
	}
}

// boundProbeAttempts keeps, of each kind, the first and the last
// maxProbeAttempts/2 attempts, in their order, and counts the others.
func boundProbeAttempts(probes []ProbeAttempt) ([]ProbeAttempt, map[ProbeKind]OmittedProbes) {
	total := map[ProbeKind]int{}
	for _, p := range probes {
		total[p.Kind]++
	}
	over := false
	for _, n := range total {
		over = over || n > maxProbeAttempts
	}
	if !over {
		return probes, nil
	}
	half := maxProbeAttempts / 2
	kept := make([]ProbeAttempt, 0, len(probes))
	omitted := map[ProbeKind]OmittedProbes{}
	seen := map[ProbeKind]int{}
	for _, p := range probes {
		n := seen[p.Kind]
		seen[p.Kind]++
		if t := total[p.Kind]; t <= maxProbeAttempts || n < half || n >= t-half {
			kept = append(kept, p)
			continue
		}
		o := omitted[p.Kind]
		o.Attempts++
		if p.Result.Failed() {
			o.Failed++
		}
		omitted[p.Kind] = o
	}
	return kept, omitted
}
