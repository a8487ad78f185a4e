package correlator

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// A probe attempt's result comes from the best source that says it: the
// kernel (an exec probe's exit code, a refused connection), the runtime
// (an ExecSync that ran past the probe's timeoutSeconds: the runtime
// killed its command), and the kubelet itself, whose prober writes an
// Unhealthy Event for every failure (pkg/kubelet/prober/prober.go
// runProbeWithRetries, recordContainerEvent):
//
//	Readiness probe failed: HTTP probe failed with statuscode: 404
//	Liveness probe failed: <an exec probe's output>
//	Readiness probe errored and resulted in unknown state: command timed out: "sleep 5" timed out after 1s
//
// The API server folds the same message into one Event with a count and
// its first and last time (1 s precision). An attempt of that kind within
// those times that no other source called a success takes the Event's
// words: a failure, or a timeout when the words say it timed out.

// unhealthyMessage parses an Unhealthy Event's message: the probe's kind,
// and what the kubelet said of it.
var unhealthyMessage = regexp.MustCompile(`^(Startup|Readiness|Liveness) probe (?:failed: |errored and resulted in \w+ state: )(.*)$`)

// probeWords is one Unhealthy Event of a container's probe.
type probeWords struct {
	kind        ProbeKind
	words       string // after "probe failed: "
	timedOut    bool
	count       int
	first, last time.Time
}

// timedOutWords: the kubelet's words for a probe that ran past its timeout
// (exec: cri-client's ErrCommandTimedOut; httpGet: the HTTP client's
// Timeout; tcpSocket and grpc: the dialer's).
var timedOutWords = regexp.MustCompile(`timed out|Client\.Timeout exceeded|i/o timeout|context deadline exceeded|DeadlineExceeded`)

// unhealthy returns the Unhealthy Events of container name, oldest first.
func (k *kubeletEvents) unhealthy(name string) []probeWords {
	var out []probeWords
	for _, e := range k.list {
		if e.Reason != reasonUnhealthy || e.Container() != name {
			continue
		}
		m := unhealthyMessage.FindStringSubmatch(e.Message)
		if m == nil {
			continue
		}
		words := strings.TrimSpace(m[2])
		out = append(out, probeWords{kind: ProbeKind(strings.ToLower(m[1])), words: words,
			timedOut: timedOutWords.MatchString(words), count: max(1, int(e.Count)),
			first: earliest(e.First, e.Last), last: latest(e.First, e.Last)})
	}
	return out
}

// probeTimeout is a probe's timeoutSeconds (1 s by default).
func probeTimeout(ps probeSpec) time.Duration {
	if ps.probe == nil || ps.probe.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(ps.probe.TimeoutSeconds) * time.Second
}

// tellProbes gives a container attempt's probe attempts the results and
// words the runtime and the kubelet say: an exec probe whose ExecSync ran
// its timeout out is a timeout (not the failure its killed command's exit
// 137 says), and an attempt within an Unhealthy Event's times takes its
// words (see the top of this file).
func (d *derivation) tellProbes(e specEntry, a *ContainerAttempt) {
	specs := probesOf(e.spec)
	spec := func(kind ProbeKind) (probeSpec, bool) {
		for _, ps := range specs {
			if ps.kind == kind {
				return ps, true
			}
		}
		return probeSpec{}, false
	}
	for i := range a.Probes {
		pa := &a.Probes[i]
		ps, ok := spec(pa.Kind)
		if !ok || pa.Handler != "exec" || pa.Call == nil || pa.Call.End.IsZero() || pa.Call.Start.IsZero() {
			continue
		}
		// The runtime kills the command at the timeout and ExecSync
		// returns then; a command that exited non-zero by itself ends
		// sooner. The kernel's clock and the uprobes' agree to clockSlack.
		if pa.Result != ProbeSuccess && pa.Call.End.Sub(pa.Call.Start)+clockSlack >= probeTimeout(ps) {
			pa.Result = ProbeTimeout
		}
	}
	events := d.p.events.unhealthy(e.name)
	if len(events) == 0 {
		return
	}
	for i := range a.Probes {
		pa := &a.Probes[i]
		if pa.Result == ProbeSuccess || pa.Inferred {
			continue
		}
		for _, w := range events {
			if w.kind != pa.Kind || pa.Start.Before(w.first.Add(-time.Second-probeTimeoutOf(specs, w.kind))) || pa.Start.After(w.last.Add(time.Second)) {
				continue
			}
			pa.Message = w.words
			switch {
			case w.timedOut:
				pa.Result = ProbeTimeout
			case pa.Result == ProbeUnknown:
				pa.Result = ProbeFailure
			}
		}
	}
}

func probeTimeoutOf(specs []probeSpec, kind ProbeKind) time.Duration {
	for _, ps := range specs {
		if ps.kind == kind {
			return probeTimeout(ps)
		}
	}
	return time.Second
}

// probeFailing says, in the kubelet's words, how the probe of kind holds
// container c back (its latest attempt failed): "readinessProbe failing
// ×104: HTTP probe failed with statuscode: 404". The count is the
// kubelet's (its Unhealthy Event's, which counts the failures readyline
// did not see too) or else the failures in a row seen; the words the
// kubelet's, or else the kernel's and the runtime's ("exit code 1",
// "timed out after 1s", "connection refused"). "" when its latest
// attempt did not fail.
func (p *podState) probeFailing(e specEntry, c *Container, kind ProbeKind) string {
	if c == nil || len(c.Attempts) == 0 {
		return ""
	}
	a := &c.Attempts[len(c.Attempts)-1]
	var last *ProbeAttempt
	inRow := 0
	for i := len(a.Probes) - 1; i >= 0; i-- {
		pa := &a.Probes[i]
		if pa.Kind != kind || pa.Result == ProbeUnknown && pa.Message == "" {
			continue
		}
		if !pa.Result.Failed() {
			break
		}
		if last == nil {
			last = pa
		}
		inRow++
	}
	var event *probeWords
	for _, w := range p.events.unhealthy(e.name) {
		if w.kind == kind && (a.Started.IsZero() || !w.last.Add(time.Second).Before(firstCreated([]ContainerAttempt{*a}))) {
			event = &w
		}
	}
	if last == nil && event == nil {
		return ""
	}
	count, words := inRow, ""
	if last != nil {
		words = last.Message
		if words == "" {
			words = attemptWords(last, e)
		}
	}
	if event != nil {
		if event.words != "" && (words == "" || last == nil || last.Message == event.words) {
			words = event.words
		}
		count = max(count, event.count)
	}
	s := fmt.Sprintf("%sProbe failing", kind)
	if count > 0 {
		s += fmt.Sprintf(" ×%d", count)
	}
	if words != "" {
		s += ": " + words
	}
	return s
}

// attemptWords says what the kernel and the runtime saw of a failed
// attempt, when the kubelet said nothing of it.
func attemptWords(pa *ProbeAttempt, e specEntry) string {
	switch {
	case pa.Result == ProbeTimeout:
		for _, ps := range probesOf(e.spec) {
			if ps.kind == pa.Kind {
				return "timed out after " + probeTimeout(ps).String() // as the kubelet writes it
			}
		}
		return "timed out"
	case pa.ExitCode != nil:
		return fmt.Sprintf("exit code %d", *pa.ExitCode)
	case pa.Conn != nil && pa.Conn.Result != "":
		switch event.TCPResult(pa.Conn.Result) {
		case event.TCPRefused:
			return "connection refused"
		case event.TCPTimedOut:
			return "connect timed out"
		}
		return "connection " + pa.Conn.Result
	}
	return ""
}
