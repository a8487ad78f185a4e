package correlator

import (
	"path"
	"sort"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// sandboxes finds every sandbox of the pod start and returns the final one
// (the latest: the kubelet runs the containers only in the current sandbox,
// and a new sandbox means every container was killed and is started again,
// kuberuntime_manager.go computePodActions / PodSandboxChanged) and the
// earlier ones, oldest first, each with its RunPodSandbox call, CNI and the
// failed calls before it (see Sandbox.FailedCalls).
func (d *derivation) sandboxes() (*Sandbox, []Sandbox) {
	p := d.p
	var all []*Sandbox
	byID := map[string]*Sandbox{}
	add := func(sb *Sandbox) *Sandbox {
		all = append(all, sb)
		if sb.ID != "" {
			byID[sb.ID] = sb
		}
		return sb
	}
	for _, id := range sortedKeys(p.runtime) {
		if rt := p.runtime[id]; rt.Sandbox {
			add(&Sandbox{ID: id, Attempt: int(rt.Attempt), Created: rt.CreatedAt, PodIP: rt.PodIP})
		}
	}
	// Without word from the runtime, a pause process names its sandbox.
	for _, id := range sortedKeys(p.procs) {
		if _, isContainer := p.names[id]; isContainer || id == "" || byID[id] != nil {
			continue
		}
		if e, _ := analyze(p.procs[id]); e != nil && path.Base(e.filename) == "pause" {
			add(&Sandbox{ID: id})
		}
	}
	for _, sb := range all {
		if cp := p.procs[sb.ID]; cp != nil {
			if e, _ := analyze(cp); e != nil {
				sb.PauseStart, sb.Ended = e.exec, e.exit
			}
		}
	}
	// The RunPodSandbox calls: by the sandbox they returned, else by the
	// sandbox that appeared inside them. A failed call that made none is
	// no sandbox: it is kept as a failed call of the sandbox the kubelet
	// was retrying for (below).
	calls := map[*Sandbox]*event.CRICall{}
	var failed []*event.CRICall
	for _, c := range p.calls {
		if c.Method != event.CRIRunPodSandbox || (c.PodUID != p.nodeUID && byID[c.PodSandboxID] == nil) {
			continue
		}
		sb := byID[c.PodSandboxID]
		if sb == nil && c.PodSandboxID == "" {
			for _, cand := range all {
				t := earliest(cand.Created, cand.PauseStart)
				if calls[cand] == nil && !t.IsZero() && !c.Time.IsZero() && !t.Before(c.Time) && !t.After(c.End) {
					sb = cand
					break
				}
			}
		}
		if sb == nil && c.Err {
			failed = append(failed, c)
			continue
		}
		if sb == nil {
			sb = add(&Sandbox{ID: c.PodSandboxID})
		}
		if calls[sb] == nil || c.End.After(calls[sb].End) {
			calls[sb] = c
		}
	}
	for _, sb := range all {
		d.finishSandbox(sb, calls[sb])
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].Attempt != all[j].Attempt {
			return all[i].Attempt < all[j].Attempt
		}
		bi, bj := ownBegin(all[i]), ownBegin(all[j])
		if !bi.Equal(bj) {
			return bi.Before(bj)
		}
		return all[i].ID < all[j].ID
	})
	// A failed call belongs to the first sandbox begun after it; those
	// after every sandbox began are a sandbox not made (yet): the kubelet
	// replacing one that died, or never getting one.
	var pending *Sandbox
	sort.SliceStable(failed, func(i, j int) bool { return failed[i].End.Before(failed[j].End) })
	for _, c := range failed {
		var to *Sandbox
		for _, sb := range all {
			if t := ownBegin(sb); !t.IsZero() && !t.Before(c.Time) {
				to = sb
				break
			}
		}
		if to == nil {
			if pending == nil {
				pending = &Sandbox{}
			}
			to = pending
		}
		to.FailedCalls = append(to.FailedCalls, *criCall(c))
	}
	if pending != nil {
		// What was made before it did not last: the containers the
		// kubelet ran in it were killed with it.
		earlier := make([]Sandbox, len(all))
		for i, sb := range all {
			earlier[i] = *sb
		}
		return pending, earlier
	}
	if len(all) == 0 {
		return nil, nil
	}
	// The final sandbox is the latest that exists (has an id).
	fi := len(all) - 1
	for i := len(all) - 1; i >= 0; i-- {
		if all[i].ID != "" {
			fi = i
			break
		}
	}
	var earlier []Sandbox
	for i, sb := range all {
		if i != fi {
			earlier = append(earlier, *sb)
		}
	}
	final := all[fi]
	final.Ended = time.Time{}
	return final, earlier
}

// ownBegin is when a sandbox's own making began (Sandbox.Begin without
// the failed calls before it).
func ownBegin(sb *Sandbox) time.Time {
	own := *sb
	own.FailedCalls = nil
	return own.Begin()
}

// finishSandbox fills a sandbox's ready time, call and CNI.
func (d *derivation) finishSandbox(sb *Sandbox, call *event.CRICall) {
	sb.Ready = sb.PauseStart
	if sb.Ready.IsZero() {
		sb.Ready = sb.Created
	}
	if sb.Created.IsZero() || (!sb.PauseStart.IsZero() && sb.PauseStart.Before(sb.Created)) {
		sb.Created = earliest(sb.Created, sb.PauseStart)
	}
	if call != nil {
		sb.Call = criCall(call)
		if !call.Err {
			sb.Ready = call.End // RunPodSandbox returned: network and pause are up
		}
	}
	sb.CNI = d.cni(sb, call)
}

// cni finds the CNI plugins that set up the sandbox's network: those whose
// CNI_CONTAINERID names it, or, when the kernel could not read that, those
// that ran inside its RunPodSandbox call and inside no other pod's.
func (d *derivation) cni(sb *Sandbox, call *event.CRICall) []Process {
	var procs []*procRecord
	if sb.ID != "" {
		procs = d.ctx.cni.forSandbox(sb.ID)
	}
	if len(procs) == 0 && call != nil && !call.Time.IsZero() {
		procs = d.cniWithin(call.Time, call.End)
	}
	key := cniKey(sb, call)
	switch {
	case key == "":
	case len(procs) > 0 && d.ctx.snapshot:
	case len(procs) > 0:
		if d.p.cni == nil {
			d.p.cni = make(map[string][]*procRecord)
		}
		d.p.cni[key] = procs
	default:
		procs = d.p.cni[key]
	}
	out := make([]Process, 0, len(procs))
	for _, r := range procs {
		out = append(out, Process{PID: r.pid, Filename: r.filename, Argv: r.argv,
			Exec: r.exec, Exit: r.exit, ExitCode: r.exitCode, Signal: r.signal})
	}
	return out
}

// cniKey names a sandbox in podState.cni: its id, or, before the runtime
// gave one, the start of its RunPodSandbox call ("" when neither is known).
func cniKey(sb *Sandbox, call *event.CRICall) string {
	switch {
	case sb.ID != "":
		return sb.ID
	case call != nil && !call.Time.IsZero():
		return "call " + call.Time.Format(time.RFC3339Nano)
	}
	return ""
}

// sandboxCall is a RunPodSandbox call, to tell which sandbox a CNI plugin
// process worked for.
type sandboxCall struct {
	uid        string
	start, end time.Time
}

// noteSandboxCall remembers a RunPodSandbox call (the last 10 minutes).
func (c *Correlator) noteSandboxCall(call *event.CRICall) {
	c.sandboxCalls = append(c.sandboxCalls, sandboxCall{uid: call.PodUID, start: call.Time, end: call.End})
	i := 0
	for i < len(c.sandboxCalls) && c.clock.now.Sub(c.sandboxCalls[i].end) > 10*time.Minute {
		i++
	}
	c.sandboxCalls = c.sandboxCalls[i:]
}

// cniWithin returns the CNI plugin processes that ran inside this pod's
// RunPodSandbox call and inside no other pod's: when two sandboxes were
// set up at once, their plugins cannot be told apart by time.
func (d *derivation) cniWithin(start, end time.Time) []*procRecord {
	var out []*procRecord
	for _, r := range d.ctx.cni.within(start, end) {
		if r.cniContainerID != "" {
			continue // it said which sandbox it worked for: not this one
		}
		shared := false
		for _, sc := range d.ctx.sandboxCalls {
			if sc.uid != d.p.nodeUID && !r.exec.Before(sc.start) && !r.exec.After(sc.end) {
				shared = true
				break
			}
		}
		if !shared {
			out = append(out, r)
		}
	}
	return out
}
