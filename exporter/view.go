package exporter

import (
	"path"

	"github.com/readyline/readyline/collector/redact"
	"github.com/readyline/readyline/correlator"
)

// ReaderView returns what of tl the user of pr may read, as Kubernetes
// would show it to them (DESIGN.md, "Who may read what"):
//
//   - the command lines the kernel saw of the pod's containers go to
//     readers who may exec into the pod (create pods/exec), who could read
//     them there; a reader who may only get it reads the spec's view
//     (Process.SpecArgv: the spec's command and args, a $(VAR) as the spec
//     writes it), or the program's name alone;
//   - the pods and images of the other pods' pulls a pull waited behind go
//     to readers who may get those pods; the others read only that it was
//     another pod's pull, when and how long.
//
// The caller has checked that the user may read tl's start at all. When
// the API server cannot tell, the reader reads less (as refused). tl is
// not modified: the view is a copy where it differs.
func ReaderView(pr PodReader, tl *correlator.Timeline) *correlator.Timeline {
	if tl == nil || pr == EveryPod {
		return tl
	}
	v := *tl
	if pr.MayExec(tl.Pod.Namespace, tl.Pod.Name) != nil {
		v.Containers = specViews(tl.Containers)
	}
	v.ImagePulls = pullViews(pr, tl.ImagePulls)
	return &v
}

// specViews returns containers with each attempt's process's argv
// replaced by its spec view (a copy of what changes).
func specViews(containers []correlator.Container) []correlator.Container {
	out := make([]correlator.Container, len(containers))
	for i, c := range containers {
		out[i] = c
		if len(c.Attempts) == 0 {
			continue
		}
		out[i].Attempts = make([]correlator.ContainerAttempt, len(c.Attempts))
		for j, a := range c.Attempts {
			out[i].Attempts[j] = a
			if a.Process != nil {
				p := *a.Process
				p.Argv, p.SpecArgv = SpecView(a.Process), nil
				out[i].Attempts[j].Process = &p
			}
		}
	}
	return out
}

// SpecView is the command line of p that a reader who may not exec into
// its pod reads: its spec view when it has one, else its program's name
// (and redact.Marker for the arguments left out).
func SpecView(p *correlator.Process) []string {
	if len(p.SpecArgv) > 0 {
		return p.SpecArgv
	}
	if len(p.Argv) == 0 {
		return nil
	}
	view := []string{path.Base(p.Argv[0])}
	if len(p.Argv) > 1 {
		view = append(view, redact.Marker)
	}
	return view
}

// pullViews returns pulls with the pulls they waited behind hidden where
// pr may not get the pod (a copy of what changes).
func pullViews(pr PodReader, pulls []correlator.ImagePull) []correlator.ImagePull {
	var out []correlator.ImagePull
	for i, ip := range pulls {
		if ip.Wait == nil || len(ip.Wait.Behind) == 0 {
			continue
		}
		var behind []correlator.PullBehind
		for j, b := range ip.Wait.Behind {
			if b.Hidden || (b.Namespace != "" && pr.MayRead(b.Namespace, b.Name) == nil) {
				continue
			}
			if behind == nil {
				behind = append([]correlator.PullBehind(nil), ip.Wait.Behind...)
			}
			behind[j] = correlator.PullBehind{Start: b.Start, End: b.End, Err: b.Err, Hidden: true}
		}
		if behind == nil {
			continue
		}
		if out == nil {
			out = append([]correlator.ImagePull(nil), pulls...)
		}
		w := *ip.Wait
		w.Behind = behind
		out[i].Wait = &w
	}
	if out == nil {
		return pulls
	}
	return out
}
