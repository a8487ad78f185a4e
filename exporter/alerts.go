package exporter

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// AlertRule is one threshold: the pod starts whose measure Name took longer
// than Threshold get an Alert. The measures are the ones readyline's metrics
// record, so that an Event on a pod and a Prometheus alert on the histograms
// speak of the same time:
//
//   - PodReadyToStartContainers: PodScheduled observed -> PodReadyToStartContainers
//     observed, exactly readyline_pod_ready_to_start_containers_seconds
//     (ReadyToStartContainers);
//   - Initialized, ContainersReady, Ready: the pod's creation -> the condition
//     observed True (Ready is readyline_pod_startup_duration_seconds of a
//     ready pod);
//   - pod.schedule, pod.wait_sandbox, pod.sandbox, pod.init, pod.containers:
//     the phase, as in readyline_pod_phase_duration_seconds.
type AlertRule struct {
	// Name is one of AlertNames (a condition type or a pod phase name).
	Name      string
	Threshold time.Duration
}

// String is the rule as --alert takes it: "PodReadyToStartContainers=5s".
func (r AlertRule) String() string { return r.Name + "=" + r.Threshold.String() }

// ErrUnknownAlert is returned by ParseAlertRule for a name that is not one of
// AlertNames.
var ErrUnknownAlert = errors.New("unknown alert name")

// Alert is a rule a pod start broke.
type Alert struct {
	// Name is the rule's measure; Reason is the Kubernetes Event reason,
	// "Slow" and the measure in CamelCase: SlowPodReadyToStartContainers,
	// SlowPodSandbox.
	Name   string
	Reason string
	// Threshold is the rule's; Took is how long the measure took. When
	// Reached is false the measure never ended (the pod start timed out) and
	// Took runs to the end of the timeline.
	Threshold time.Duration
	Took      time.Duration
	Reached   bool
	// Start and End bound the measure (End is the timeline's end when the
	// measure was not reached).
	Start, End time.Time
	// Span is the name of the span that shows the measure in the trace
	// (the condition's or the phase's), which the trace exporter marks.
	Span string
	// Message tells where the time went, for the Event and the span event.
	Message string
}

// alertMeasure is one thing a rule can measure.
type alertMeasure struct {
	name   string
	reason string
	span   string
	// bounds returns the measure's start and end; a zero end means it was
	// not reached.
	bounds func(tl *correlator.Timeline) (start, end time.Time)
	// breakdown explains the measured interval [start, end] in a few words.
	breakdown func(tl *correlator.Timeline, start, end time.Time) string
}

// alertMeasures lists the measures in the order of a pod start.
var alertMeasures = []alertMeasure{
	{
		name: correlator.CondPodReadyToStartContainers, span: ConditionSpanName(correlator.CondPodReadyToStartContainers),
		bounds: func(tl *correlator.Timeline) (time.Time, time.Time) {
			return conditionObserved(tl, correlator.CondPodScheduled), conditionObserved(tl, correlator.CondPodReadyToStartContainers)
		},
		breakdown: sandboxBreakdown,
	},
	conditionMeasure(correlator.CondInitialized),
	conditionMeasure(correlator.CondContainersReady),
	conditionMeasure(correlator.CondReady),
	phaseMeasure(correlator.PhaseSchedule, phasesBreakdown),
	phaseMeasure(correlator.PhaseWaitSandbox, phasesBreakdown),
	phaseMeasure(correlator.PhaseSandbox, sandboxBreakdown),
	phaseMeasure(correlator.PhaseInit, phasesBreakdown),
	phaseMeasure(correlator.PhaseContainers, phasesBreakdown),
}

func init() {
	for i := range alertMeasures {
		alertMeasures[i].reason = "Slow" + camelCase(alertMeasures[i].name)
	}
}

// conditionMeasure: the pod's creation -> the condition observed True.
func conditionMeasure(cond string) alertMeasure {
	return alertMeasure{
		name: cond, span: ConditionSpanName(cond),
		bounds: func(tl *correlator.Timeline) (time.Time, time.Time) {
			return tl.Start, conditionObserved(tl, cond)
		},
		breakdown: phasesBreakdown,
	}
}

// phaseMeasure: the pod-level phase.
func phaseMeasure(name string, breakdown func(*correlator.Timeline, time.Time, time.Time) string) alertMeasure {
	return alertMeasure{
		name: name, span: name, breakdown: breakdown,
		bounds: func(tl *correlator.Timeline) (time.Time, time.Time) {
			for _, p := range tl.Phases {
				if p.Name == name {
					return p.Start, p.End
				}
			}
			return time.Time{}, time.Time{}
		},
	}
}

// camelCase turns "PodReadyToStartContainers" and "pod.wait_sandbox" into
// "PodReadyToStartContainers" and "PodWaitSandbox".
func camelCase(name string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == '_' }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	return b.String()
}

// AlertNames lists the measures a rule can name, in the order of a pod
// start: the conditions, then the pod phases.
func AlertNames() []string {
	names := make([]string, len(alertMeasures))
	for i, m := range alertMeasures {
		names[i] = m.name
	}
	return names
}

func findMeasure(name string) (*alertMeasure, bool) {
	for i := range alertMeasures {
		if strings.EqualFold(alertMeasures[i].name, name) {
			return &alertMeasures[i], true
		}
	}
	return nil, false
}

// ParseAlertRule parses "Name=duration" (case-insensitive name, Go duration):
// "PodReadyToStartContainers=5s", "pod.sandbox=1.5s". A zero threshold
// ("Ready=0" or "Ready=off") returns a rule with Threshold 0, which callers
// use to switch the name off.
func ParseAlertRule(s string) (AlertRule, error) {
	name, value, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok || name == "" || value == "" {
		return AlertRule{}, fmt.Errorf("alert %q: want NAME=DURATION, e.g. %s=5s", s, correlator.CondPodReadyToStartContainers)
	}
	m, ok := findMeasure(strings.TrimSpace(name))
	if !ok {
		return AlertRule{}, fmt.Errorf("alert %q: %w: want one of %s", s, ErrUnknownAlert, strings.Join(AlertNames(), ", "))
	}
	value = strings.TrimSpace(value)
	if value == "off" || value == "0" {
		return AlertRule{Name: m.name}, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil {
		return AlertRule{}, fmt.Errorf("alert %q: %w", s, err)
	}
	if d < 0 {
		return AlertRule{}, fmt.Errorf("alert %q: negative threshold", s)
	}
	return AlertRule{Name: m.name, Threshold: d}, nil
}

// CheckAlerts returns the rules tl broke, in the order of rules: those whose
// measure took longer than the threshold and, for a pod start that timed
// out, those whose measure began but never ended and had run longer than
// the threshold when it timed out. Rules with a zero threshold or an unknown
// name never fire. CheckAlerts is a pure function of its arguments.
func CheckAlerts(tl *correlator.Timeline, rules []AlertRule) []Alert {
	var alerts []Alert
	for _, r := range rules {
		m, ok := findMeasure(r.Name)
		if !ok || r.Threshold <= 0 {
			continue
		}
		start, end := m.bounds(tl)
		reached := !end.IsZero()
		if !reached && tl.Outcome == correlator.OutcomeTimeout {
			end = tl.End
		}
		took, ok := between(start, end)
		if !ok || took <= r.Threshold {
			continue
		}
		a := Alert{Name: m.name, Reason: m.reason, Threshold: r.Threshold, Took: took, Reached: reached,
			Start: start, End: end, Span: m.span}
		a.Message = alertMessage(tl, m, &a)
		alerts = append(alerts, a)
	}
	return alerts
}

// maxAlertMessage bounds an Event's message (the events.k8s.io API refuses
// notes over 1 kB).
const maxAlertMessage = 1024

// alertMessage is "NAME took 6.2s (threshold 5.0s): <breakdown>", every
// duration in correlator.FormatDuration's words as the insights it quotes.
func alertMessage(tl *correlator.Timeline, m *alertMeasure, a *Alert) string {
	var b strings.Builder
	if a.Reached {
		fmt.Fprintf(&b, "%s took %s (threshold %s)", a.Name, correlator.FormatDuration(a.Took), correlator.FormatDuration(a.Threshold))
	} else {
		fmt.Fprintf(&b, "%s not reached after %s (threshold %s; the pod start timed out)", a.Name, correlator.FormatDuration(a.Took), correlator.FormatDuration(a.Threshold))
	}
	if s := m.breakdown(tl, a.Start, a.End); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	// The start's own account, as the waterfall, the root span and the
	// page give it: what it waits on, where its time went.
	if tl.Waiting != "" && !a.Reached {
		b.WriteString("; waiting: " + tl.Waiting)
	}
	if s := tl.WhereTheTimeWent(); s != "" {
		b.WriteString("; where the time went: " + s)
	}
	return truncateMessage(b.String(), maxAlertMessage)
}

// truncateMessage cuts s to at most n bytes, the last three "...", on a
// rune boundary.
func truncateMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := max(n-len("..."), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// sandboxBreakdown: the wait before the sandbox, the RunPodSandbox call (or
// the runtime's sandbox phase) with its CNI ADD plugins, the pause start,
// the lag of PodReadyToStartContainers, and the image pulls that began in
// the window. Offsets are from start.
func sandboxBreakdown(tl *correlator.Timeline, start, end time.Time) string {
	var parts []string
	if d, ok := phaseDuration(tl, correlator.PhaseWaitSandbox); ok {
		wait := "waiting before the sandbox " + correlator.FormatDuration(d)
		var volumes []string // the volumes' steps that took time or failed, the kubelet's FailedMount
		for _, st := range tl.CriticalPath {
			quick := st.Name != correlator.PhaseWaitSandbox && st.End.Sub(st.Start) < waterfall.QuickVolumeCall && !strings.Contains(st.What, " failed")
			early := st.Start.Before(start) // a claim's provision, before the pod was scheduled: not this wait's
			if st.Kind == correlator.ShareWaitVolumes && st.What != "" && !quick && !early && !slices.Contains(volumes, st.What) {
				volumes = append(volumes, st.What)
			}
		}
		if len(volumes) > 0 {
			wait += " (" + strings.Join(volumes, "; ") + ")"
		}
		parts = append(parts, wait)
	}
	sb := tl.Sandbox
	var call string
	switch {
	case sb != nil && sb.ID == "" && len(sb.FailedCalls) > 0:
		call = fmt.Sprintf("RunPodSandbox failed %d times", len(sb.FailedCalls))
		if sb.Error != "" {
			call += " (" + sb.Error + ")"
		}
	case sb != nil && sb.Call != nil && !sb.Call.Start.IsZero() && !sb.Call.End.IsZero():
		call = "RunPodSandbox " + correlator.FormatDuration(sb.Call.End.Sub(sb.Call.Start))
		if sb.Call.Err {
			call += " (failed)"
		}
	default:
		if d, ok := phaseDuration(tl, correlator.PhaseSandbox); ok {
			call = "sandbox " + correlator.FormatDuration(d)
		}
	}
	if cni := cniBreakdown(sb); cni != "" {
		if call == "" {
			call = cni
		} else {
			call += " of which " + cni
		}
	}
	if call != "" {
		parts = append(parts, call)
	}
	if sb != nil && !sb.PauseStart.IsZero() && !start.IsZero() {
		parts = append(parts, "pause started at "+waterfall.FormatOffset(sb.PauseStart.Sub(start)))
	}
	for _, c := range tl.Conditions {
		if c.Type == correlator.CondPodReadyToStartContainers && !c.Cause.IsZero() && c.Lag() > 0 {
			parts = append(parts, "status reported "+correlator.FormatDuration(c.Lag())+" after "+cause(c.CauseEvent))
		}
	}
	if p := pullsBreakdown(tl, start, end); p != "" {
		// The kubelet sets PodReadyToStartContainers before it pulls
		// (kuberuntime_manager.go SyncPod: "invoke the sandbox ready
		// callback before image pulling"): pulls in the window ran while
		// the status was on its way, they did not hold it.
		parts = append(parts, p+" (after the sandbox was ready: they do not hold PodReadyToStartContainers)")
	}
	if len(parts) == 0 {
		return "no sandbox was made yet"
	}
	return strings.Join(parts, ", ")
}

func cause(ev string) string {
	if ev == "" {
		return "its cause"
	}
	return ev
}

// maxCNIPlugins bounds the plugins a message names.
const maxCNIPlugins = 6

// cniBreakdown is "CNI ADD 5.1s (bridge 5.0s, host-local 10ms)": the first
// plugin's exec to the last plugin's exit, and each plugin in exec order
// (a delegated IPAM plugin runs inside its caller: times overlap).
func cniBreakdown(sb *correlator.Sandbox) string {
	if sb == nil || len(sb.CNI) == 0 {
		return ""
	}
	procs := slices.Clone(sb.CNI)
	slices.SortStableFunc(procs, func(a, b correlator.Process) int { return a.Exec.Compare(b.Exec) })
	var first, last time.Time
	var plugins []string
	for i, p := range procs {
		if first.IsZero() || p.Exec.Before(first) {
			first = p.Exec
		}
		if p.Exit.After(last) {
			last = p.Exit
		}
		if i == maxCNIPlugins {
			plugins = append(plugins, fmt.Sprintf("%d more", len(procs)-i))
		}
		if i >= maxCNIPlugins {
			continue
		}
		name := path.Base(p.Filename)
		if p.Filename == "" {
			name = "plugin"
		}
		if d, ok := between(p.Exec, p.Exit); ok {
			name += " " + correlator.FormatDuration(d)
		} else {
			name += " (no exit seen)"
		}
		plugins = append(plugins, name)
	}
	total := "CNI ADD"
	if d, ok := between(first, last); ok {
		total += " " + correlator.FormatDuration(d)
	}
	return total + " (" + strings.Join(plugins, ", ") + ")"
}

// phasesBreakdown lists the pod phases that overlap [start, end] with their
// durations, the image pulls in it (pullsBreakdown), then the timeline's
// first insight.
func phasesBreakdown(tl *correlator.Timeline, start, end time.Time) string {
	var parts []string
	for _, p := range tl.Phases {
		if p.Start.IsZero() || (!end.IsZero() && p.Start.After(end)) || (!p.End.IsZero() && p.End.Before(start)) {
			continue
		}
		if d, ok := between(p.Start, p.End); ok {
			parts = append(parts, p.Name+" "+correlator.FormatDuration(d))
		} else {
			parts = append(parts, p.Name+" unfinished")
		}
	}
	s := strings.Join(parts, ", ")
	if p := pullsBreakdown(tl, start, end); p != "" {
		if s != "" {
			s += "; "
		}
		s += p
	}
	if len(tl.Insights) > 0 {
		if s != "" {
			s += "; "
		}
		s += tl.Insights[0].Message
	}
	return s
}

func phaseDuration(tl *correlator.Timeline, name string) (time.Duration, bool) {
	for _, p := range tl.Phases {
		if p.Name == name {
			return between(p.Start, p.End)
		}
	}
	return 0, false
}

// conditionObserved is when the watch first showed the condition True (zero
// when it did not).
func conditionObserved(tl *correlator.Timeline, cond string) time.Time {
	for _, c := range tl.Conditions {
		if c.Type == cond {
			return c.Observed
		}
	}
	return time.Time{}
}
