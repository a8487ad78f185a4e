package correlator

import (
	"path"
	"time"

	"github.com/readyline/readyline/collector/event"
)

func (d *derivation) sandbox() *Sandbox {
	p := d.p
	var sb *Sandbox
	for id, rt := range p.runtime {
		if !rt.Sandbox {
			continue
		}
		if sb == nil || rt.CreatedAt.Before(sb.Created) || (rt.CreatedAt.Equal(sb.Created) && id < sb.ID) {
			sb = &Sandbox{ID: id, Created: rt.CreatedAt, PodIP: rt.PodIP}
		}
	}
	call := d.sandboxCall(sb)
	if sb == nil && call != nil && call.PodSandboxID != "" {
		sb = &Sandbox{ID: call.PodSandboxID}
	}
	if sb == nil {
		// No word from the runtime: the pause process alone names it.
		for _, id := range sortedKeys(p.procs) {
			if _, isContainer := p.names[id]; isContainer || id == "" {
				continue
			}
			if e, _ := analyze(p.procs[id]); e != nil && path.Base(e.filename) == "pause" {
				sb = &Sandbox{ID: id}
				break
			}
		}
	}
	failed := d.failedSandboxCalls()
	if sb == nil {
		if len(failed) > 0 {
			return &Sandbox{FailedCalls: failed} // no call succeeded
		}
		return nil
	}
	sb.FailedCalls = failed
	if cp := p.procs[sb.ID]; cp != nil {
		if e, _ := analyze(cp); e != nil {
			sb.PauseStart = e.exec
		}
	}
	sb.Ready = sb.PauseStart
	if sb.Ready.IsZero() {
		sb.Ready = sb.Created
	}
	if sb.Created.IsZero() || (!sb.PauseStart.IsZero() && sb.PauseStart.Before(sb.Created)) {
		sb.Created = earliest(sb.Created, sb.PauseStart)
	}
	if call != nil {
		sb.Call = criCall(call)
		sb.Ready = call.End // RunPodSandbox returned: network and pause are up
	}
	sb.CNI = d.cni(sb, call)
	return sb
}

// cni finds the CNI plugins that set up the sandbox's network: those whose
// CNI_CONTAINERID names it, or, when the kernel could not read that, those
// that ran inside its RunPodSandbox call and inside no other pod's.
func (d *derivation) cni(sb *Sandbox, call *event.CRICall) []Process {
	var procs []*procRecord
	if procs = d.ctx.cni.forSandbox(sb.ID); len(procs) == 0 && call != nil && !call.Time.IsZero() {
		procs = d.cniWithin(call.Time, call.End)
	}
	out := make([]Process, 0, len(procs))
	for _, r := range procs {
		out = append(out, Process{PID: r.pid, Filename: r.filename, Argv: r.argv,
			Exec: r.exec, Exit: r.exit, ExitCode: r.exitCode, Signal: r.signal})
	}
	return out
}

// sandboxCall finds the pod's RunPodSandbox call: the one that returned its
// sandbox, else the last successful one that named its UID.
func (d *derivation) sandboxCall(sb *Sandbox) *event.CRICall {
	var found *event.CRICall
	for _, c := range d.p.calls {
		if c.Method != event.CRIRunPodSandbox || c.Err {
			continue
		}
		if sb != nil && c.PodSandboxID == sb.ID {
			return c
		}
		if c.PodUID == d.p.nodeUID {
			found = c
		}
	}
	return found
}

// failedSandboxCalls are the pod's RunPodSandbox calls that returned an
// error, in time order. They reach the pod by its UID, read from the
// request: a failed call returns no sandbox id. The kubelet retries them
// on its pod worker's back-off (kuberuntime_manager.go SyncPod:
// createPodSandbox fails the sync with CreatePodSandboxError).
func (d *derivation) failedSandboxCalls() []CRICall {
	var out []CRICall
	for _, c := range d.p.calls {
		if c.Method == event.CRIRunPodSandbox && c.Err && c.PodUID == d.p.uid {
			out = append(out, *criCall(c))
		}
	}
	sortCalls(out)
	return out
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
