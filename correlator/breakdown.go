package correlator

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// BreakdownOf sums tl's time by kind: each critical path step's, the time
// between steps (ShareOther; after the last step of a Ready start,
// ShareAPILag: the cause of Ready to the API's report of it). It adds up
// to End - Start exactly (the steps lie in it, in order, apart).
func BreakdownOf(tl *Timeline) []Share {
	if span(tl.Start, tl.End) <= 0 {
		return nil
	}
	var out []Share
	idx := map[ShareKind]int{}
	add := func(kind ShareKind, what string, d time.Duration) {
		if d <= 0 {
			return
		}
		if kind == "" {
			kind = ShareOther
		}
		i, ok := idx[kind]
		if !ok {
			idx[kind] = len(out)
			out = append(out, Share{Kind: kind, What: what, Duration: d})
			return
		}
		if out[i].What != what {
			out[i].What = ""
		}
		out[i].Duration += d
	}
	prev := tl.Start
	for _, s := range tl.CriticalPath {
		if s.Start.After(prev) {
			add(ShareOther, "", s.Start.Sub(prev))
		}
		add(s.Kind, s.What, s.End.Sub(s.Start))
		prev = latest(prev, s.End)
	}
	if tl.End.After(prev) {
		kind := ShareOther
		if tl.Outcome == OutcomeReady && len(tl.CriticalPath) > 0 {
			kind = ShareAPILag
		}
		add(kind, "", tl.End.Sub(prev))
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Duration > out[j].Duration })
	return out
}

// shareNames say each kind of time for humans.
var shareNames = map[ShareKind]string{
	ShareSchedule:        "scheduling",
	ShareWaitVolumes:     "waiting for volumes",
	ShareWaitSandbox:     "waiting before the sandbox",
	ShareSandbox:         "sandbox",
	ShareSandboxFailed:   "failed sandbox attempts",
	ShareSandboxReplaced: "replaced sandboxes",
	SharePullWait:        "pull queue",
	SharePull:            "image pulls",
	SharePullFailed:      "failed pulls",
	SharePullBackOff:     "image pull back-off",
	ShareCalls:           "create/start calls",
	ShareRun:             "running",
	ShareHook:            "postStart hooks",
	ShareProbeDelay:      "probe delay",
	ShareProbeFailing:    "probes failing",
	ShareStop:            "stopping killed attempts",
	ShareBackOff:         "crash-loop back-off",
	ShareGate:            "readiness gates",
	ShareAPILag:          "status report",
	ShareOther:           "between steps (kubelet, unseen)",
}

// Name says the kind for humans: "image pull back-off".
func (k ShareKind) Name() string {
	if n, ok := shareNames[k]; ok {
		return n
	}
	return string(k)
}

// maxSummaryShares bounds the shares WhereTheTimeWent names.
const maxSummaryShares = 4

// WhereTheTimeWent summarizes the Breakdown in a line, largest first:
// "image pull back-off 28.9s (72%, app); running 5.1s (13%, app);
// sandbox 0.4s (1%); between steps (kubelet, unseen) 0.6s (1%)". It names
// at most four kinds and says what the others add up to; "" without a
// breakdown.
func (tl *Timeline) WhereTheTimeWent() string {
	total := span(tl.Start, tl.End)
	if total <= 0 || len(tl.Breakdown) == 0 {
		return ""
	}
	var parts []string
	var rest time.Duration
	for i, s := range tl.Breakdown {
		if i >= maxSummaryShares {
			rest += s.Duration
			continue
		}
		detail := fmt.Sprintf("%d%%", percent(s.Duration, total))
		if s.What != "" {
			detail += ", " + s.What
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", s.Kind.Name(), FormatDuration(s.Duration), detail))
	}
	if rest > 0 {
		parts = append(parts, fmt.Sprintf("%d more %s", len(tl.Breakdown)-maxSummaryShares, FormatDuration(rest)))
	}
	return strings.Join(parts, "; ")
}

// percent is d of total in whole percents, rounded.
func percent(d, total time.Duration) int {
	return int((200*d + total) / (2 * total))
}
