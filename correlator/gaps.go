package correlator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// When a source was blind. A source that stops seeing (the kubelet it
// probes restarted, its ring buffer lost records, the runtime or the API
// server stopped answering) says so with a SourceStatus Down, and with an
// Up when it sees again. What it would have reported in between is missing
// from every pod start that overlaps the window, and no rule can tell
// "missing" from "did not happen": a timeline lists those windows (Gaps)
// instead of looking complete.
//
// The correlator keeps the recent windows of each source, bounded, and
// gives each timeline, when it is made (reported at its deadline or
// completed), the windows that overlap its start.

// SourceGap says that one of readyline's sources was blind during part of
// a pod start.
type SourceGap struct {
	// Source names the source (event.SourceProcess, event.SourceKubeletCalls,
	// ...).
	Source string `json:"source"`
	// Windows are its blind windows that overlap the start, oldest first.
	Windows []BlindWindow `json:"windows"`
}

// BlindWindow is one time a source was blind: from a Down status (its
// Since, when set) to the next Up.
type BlindWindow struct {
	// Reason is the Down's reason ("ring_full", "kubelet_restarted",
	// "disconnected", ...); several, comma-separated, when the source gave
	// more than one before it saw again.
	Reason string    `json:"reason"`
	From   time.Time `json:"from"`
	// To is the Up; zero when the source was still blind when the timeline
	// was made.
	To time.Time `json:"to,omitzero"`
	// Lost is how many records the source knows it lost in the window, 0
	// when it does not know.
	Lost uint64 `json:"lost,omitempty"`
}

// maxBlindWindows bounds the windows kept per source. Past it the two
// oldest merge into one that spans both: a timeline may then say a source
// was blind where it saw, never the reverse.
const maxBlindWindows = 64

// mergeBlindWithin: a Down of the same reason this soon after a window's
// end extends that window (a ring buffer that loses records every second
// is one window, not one a second).
const mergeBlindWithin = 2 * time.Second

// noteSourceStatus opens, extends or closes the source's blind window.
func (c *Correlator) noteSourceStatus(e *event.SourceStatus) {
	if e.Source == "" {
		return
	}
	ws := c.blind[e.Source]
	n := len(ws)
	open := n > 0 && ws[n-1].To.IsZero()
	if e.Up {
		if open {
			ws[n-1].To = latest(e.Time, ws[n-1].From)
		}
		return
	}
	from := e.Time
	if !e.Since.IsZero() && e.Since.Before(from) {
		from = e.Since
	}
	switch {
	case open: // still blind: another reason, more records lost
		w := &ws[n-1]
		w.From, w.Reason, w.Lost = earliest(w.From, from), joinReasons(w.Reason, e.Reason), w.Lost+e.Lost
	case n > 0 && ws[n-1].Reason == e.Reason && !from.After(ws[n-1].To.Add(mergeBlindWithin)):
		w := &ws[n-1]
		w.From, w.To, w.Lost = earliest(w.From, from), time.Time{}, w.Lost+e.Lost
	default:
		ws = append(ws, BlindWindow{Reason: e.Reason, From: from, Lost: e.Lost})
	}
	c.blind[e.Source] = c.forgetBlind(ws)
}

// forgetBlind drops the windows that ended before any start the
// correlator tracks (or will soon: one not yet seen, within Timeout) began,
// and merges the oldest past maxBlindWindows.
func (c *Correlator) forgetBlind(ws []BlindWindow) []BlindWindow {
	horizon := c.clock.now.Add(-c.cfg.Timeout)
	for _, p := range c.pods {
		horizon = earliest(horizon, earliest(p.pod.CreationTimestamp.Time, p.firstSight()))
	}
	ws = slices.DeleteFunc(ws, func(w BlindWindow) bool { return !w.To.IsZero() && w.To.Before(horizon) })
	for len(ws) > maxBlindWindows {
		ws[1].From, ws[1].Reason, ws[1].Lost = earliest(ws[0].From, ws[1].From), joinReasons(ws[0].Reason, ws[1].Reason), ws[0].Lost+ws[1].Lost
		ws = ws[1:]
	}
	return ws
}

// joinReasons adds reason b to the comma-separated reasons a.
func joinReasons(a, b string) string {
	switch {
	case b == "" || a == b:
		return a
	case a == "":
		return b
	}
	have := strings.Split(a, ",")
	for _, r := range strings.Split(b, ",") {
		if !slices.Contains(have, r) {
			have = append(have, r)
		}
	}
	return strings.Join(have, ",")
}

// gaps returns the blind windows of every source that overlap the start
// tl tells (from its Start to its End), by source, the source blind first
// first. The tcp source counts only for a pod whose probes or hooks make
// connections readyline follows.
func (c *Correlator) gaps(p *podState, tl *Timeline) []SourceGap {
	markTrimmed(tl, p) // and what readyline itself dropped (budget.go)
	var out []SourceGap
	for source, ws := range c.blind {
		if source == event.SourceTCP && len(connPorts(p.pod)) == 0 {
			continue
		}
		g := SourceGap{Source: source}
		for _, w := range ws {
			if w.From.Before(tl.End) && (w.To.IsZero() || w.To.After(tl.Start)) {
				g.Windows = append(g.Windows, w)
			}
		}
		if len(g.Windows) > 0 {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b SourceGap) int {
		if c := a.Windows[0].From.Compare(b.Windows[0].From); c != 0 {
			return c
		}
		return strings.Compare(a.Source, b.Source)
	})
	return out
}

// Lost is how many records the source knows it lost in the windows.
func (g SourceGap) Lost() uint64 {
	var n uint64
	for _, w := range g.Windows {
		n += w.Lost
	}
	return n
}

// Lacks says what the windows leave out of the timeline: "kubelet calls in
// this window are not seen".
func (g SourceGap) Lacks() string {
	what := map[string]string{
		event.SourceProcess:      "process execs and exits",
		event.SourceKubeletCalls: "kubelet calls",
		event.SourceTCP:          "probe connections",
		event.SourceRuntime:      "runtime state changes",
		event.SourcePodWatch:     "pod updates",
		event.SourcePodEvents:    "the kubelet's Events",
	}[g.Source]
	if what == "" {
		what = g.Source + " facts"
	}
	where := "in this window"
	if len(g.Windows) > 1 {
		where = "in these windows"
	}
	// A source that lost some records may have seen the rest; the runtime
	// and the API server, once they answer, tell the state they reached.
	partial, late := true, g.Source == event.SourceRuntime || g.Source == event.SourcePodWatch || g.Source == event.SourcePodEvents
	for _, w := range g.Windows {
		for _, r := range strings.Split(w.Reason, ",") {
			partial = partial && (r == event.ReasonRingFull || r == event.ReasonStreamBehind)
		}
	}
	switch {
	case partial:
		return what + " " + where + " may be missing"
	case late:
		return what + " " + where + " are seen late or not at all"
	}
	return what + " " + where + " are not seen"
}

// maxDescribedWindows bounds the windows Describe lists one by one.
const maxDescribedWindows = 3

// Describe says in one line what the gap is and what it leaves out, with
// times written by at: "cri_calls: kubelet_restarted 12:00:01.200–12:00:03.600:
// kubelet calls in this window are not seen".
func (g SourceGap) Describe(at func(time.Time) string) string {
	var b strings.Builder
	b.WriteString(g.Source)
	b.WriteString(": ")
	for i, w := range g.Windows {
		if i == maxDescribedWindows-1 && len(g.Windows) > maxDescribedWindows {
			fmt.Fprintf(&b, " and %d more, the last ", len(g.Windows)-i-1)
			w = g.Windows[len(g.Windows)-1]
		} else if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(w.Reason)
		if w.To.IsZero() {
			b.WriteString(" since " + at(w.From) + " (still blind)")
		} else {
			b.WriteString(" " + at(w.From) + "–" + at(w.To))
		}
		if i == maxDescribedWindows-1 {
			break
		}
	}
	if n := g.Lost(); n > 0 {
		fmt.Fprintf(&b, " (%d records lost)", n)
	}
	b.WriteString(": ")
	b.WriteString(g.Lacks())
	return b.String()
}

// String is Describe with UTC times of day to the millisecond.
func (g SourceGap) String() string {
	return g.Describe(func(t time.Time) string { return t.UTC().Format("15:04:05.000") })
}

// maxRuntimeWait bounds how long a finished start waits, past its grace,
// for the runtime's source to see again.
const maxRuntimeWait = 15 * time.Second

// waitsForRuntime tells whether finished start p should wait past its
// grace: the runtime's source (event.SourceRuntime) is blind (the runtime
// restarted, or does not answer), and when it sees again its first full
// list reports the containers created and started meanwhile, with the
// runtime's own times, which belong in the start. The list comes before the
// source's Up; the wait ends with it, or after maxRuntimeWait.
func (c *Correlator) waitsForRuntime(p *podState) bool {
	ws := c.blind[event.SourceRuntime]
	return len(ws) > 0 && ws[len(ws)-1].To.IsZero() && c.clock.now.Sub(p.doneStamp) < maxRuntimeWait
}
