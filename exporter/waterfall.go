package exporter

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
)

// Layout of the waterfall: label (as wide as the longest, within bounds),
// start offset, duration, bar.
const (
	waterfallMinLabel = 20
	waterfallNumWidth = 8
	waterfallMinWidth = 64
	// waterfallMaxWidth bounds the columns (and so the output) whatever
	// width RenderWaterfall is asked for.
	waterfallMaxWidth = 1000
	// DefaultWaterfallWidth is used when RenderWaterfall is given width <= 0.
	DefaultWaterfallWidth = 100
	// waterfallMaxSpan bounds the time the bars cover: a pod start is
	// minutes, a start timeout at most hours. A timeline whose times spread
	// further (a clock jump, a corrupt recording) is drawn over its first
	// waterfallMaxSpan, later times at the right edge, with a note.
	waterfallMaxSpan = 24 * time.Hour
)

// Glyphs of the waterfall's bars and marks.
const (
	glyphFull       = '█'
	glyphInferred   = '░'
	glyphInstant    = '▏'
	glyphProbeOK    = '●'
	glyphProbeFail  = '✗'
	glyphProbeOther = '·'
	glyphProbeGuess = '◇'
	glyphCondition  = '◆'
	glyphLag        = '─'
	glyphBackOff    = '╌'
	glyphWaiting    = '▒'
)

// maxWaitingMessageRows bounds the rows a waiting reason's message wraps to.
const maxWaitingMessageRows = 2

// eighths are the left-aligned partial blocks, index = eighths of a cell.
var eighths = []rune{' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'}

// RenderWaterfall writes tl as a text waterfall for a terminal of width
// columns (DefaultWaterfallWidth when width <= 0, at most 1000): a header, one row per
// phase, container attempt, process, hook, probe kind (its attempts as
// marks) and condition, each with its offset from the pod's creation, its
// duration and a bar to scale, then the insights and the critical path. The
// output depends only on tl and width (golden-testable), and its size on
// the number of facts in tl and width, whatever its times: bars cover at
// most 24 hours. It assumes a terminal that draws the box and block
// characters one column wide.
func RenderWaterfall(w io.Writer, tl *correlator.Timeline, width int) error {
	if width <= 0 {
		width = DefaultWaterfallWidth
	}
	width = min(max(width, waterfallMinWidth), waterfallMaxWidth)
	wf := newWaterfall(tl, width)
	bw := bufio.NewWriter(w)
	wf.header(bw)
	wf.table(bw)
	wf.footer(bw)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing waterfall: %w", err)
	}
	return nil
}

type waterfall struct {
	tl     *correlator.Timeline
	width  int
	labelW int
	barW   int
	rows   []wrow
	start  time.Time // offset zero: the pod's creation
	end    time.Time // right edge of the bars
	total  time.Duration
	// span is end - start when that is over waterfallMaxSpan (total is
	// then waterfallMaxSpan), zero otherwise.
	span time.Duration
}

func newWaterfall(tl *correlator.Timeline, width int) *waterfall {
	start, end := timelineBounds(tl)
	visitTimes(tl, func(t time.Time) {
		if t.After(end) {
			end = t
		}
	})
	total, span := end.Sub(start), time.Duration(0) // Sub saturates: no overflow
	switch {
	case total <= 0:
		total = time.Millisecond
	case total > waterfallMaxSpan:
		total, span = waterfallMaxSpan, total
		end = start.Add(total)
	}
	wf := &waterfall{tl: tl, width: width, start: start, end: end, total: total, span: span}
	// The label column fits the longest label, up to a third of the width;
	// the bars get the rest. Labels are known before the bars are drawn.
	wf.labelW = waterfallMinLabel
	wf.barW = 1
	wf.collect()
	for _, r := range wf.rows {
		wf.labelW = max(wf.labelW, utf8.RuneCountInString(r.label))
	}
	wf.labelW = min(wf.labelW, width/3)
	wf.barW = width - wf.labelW - 2*waterfallNumWidth - 4
	wf.rows = wf.rows[:0]
	wf.collect()
	return wf
}

func (wf *waterfall) header(w *bufio.Writer) {
	tl := wf.tl
	d := tl.End.Sub(tl.Start)
	if tl.End.IsZero() || tl.Start.IsZero() {
		d = wf.total
	}
	var outcome string
	switch tl.Outcome {
	case correlator.OutcomeReady:
		outcome = "Ready in " + fmtSeconds(d)
	case correlator.OutcomeFailed:
		outcome = "FAILED after " + fmtSeconds(d)
	case correlator.OutcomeTimeout:
		outcome = "TIMED OUT after " + fmtSeconds(d)
		if tl.Partial {
			outcome = "STILL STARTING after " + fmtSeconds(d) + " (the start timeout; the start goes on)"
		}
	case correlator.OutcomeDeleted:
		outcome = "deleted after " + fmtSeconds(d)
	default:
		outcome = string(tl.Outcome) + " after " + fmtSeconds(d)
	}
	fmt.Fprintf(w, "%s  %s\n", tl.Pod.String(), outcome)
	if tl.Reason != "" {
		writeWrapped(w, "  reason: ", tl.Reason, wf.width)
	}
	var meta []string
	if tl.Pod.UID != "" {
		meta = append(meta, "uid "+tl.Pod.UID)
	}
	if tl.Pod.Node != "" {
		meta = append(meta, "node "+tl.Pod.Node)
	}
	if !tl.Start.IsZero() {
		meta = append(meta, "created "+tl.Start.UTC().Format(time.RFC3339))
	}
	if !tl.ReportedAt.IsZero() {
		meta = append(meta, "reported still starting at +"+fmtSeconds(reportedAfter(tl)))
	}
	if tl.Pod.Static() {
		meta = append(meta, "static pod (config hash "+tl.Pod.ConfigHash+")")
	}
	if len(meta) > 0 {
		writeItems(w, "  ", meta, "  ", wf.width)
	}
	if tl.Pod.UID != "" {
		fmt.Fprintf(w, "  trace %s\n", TraceIDForPod(tl.Pod.UID))
	}
	if tl.TraceParent != "" {
		if sc, reason := parseTraceParent(tl.TraceParent); reason == "" {
			writeWrapped(w, "  ", fmt.Sprintf("linked to trace %s span %s (%s)", sc.TraceID(), sc.SpanID(), correlator.TraceParentAnnotation), wf.width)
		} else {
			writeWrapped(w, "  ", correlator.TraceParentAnnotation+" ignored: "+reason, wf.width)
		}
	}
	if !tl.ObservedSince.IsZero() {
		writeWrapped(w, "  ", "readyline saw this pod from +"+fmtSeconds(tl.ObservedSince.Sub(wf.start))+
			": earlier kernel and CRI facts are missing", wf.width)
	}
	for _, m := range tl.Marks {
		switch m {
		case correlator.MarkAPILag:
			writeWrapped(w, "  ", "the API delivered some conditions late (api_lag): they are at their lastTransitionTime, marked coarse", wf.width)
		case correlator.MarkClockStep:
			steps := make([]string, len(tl.ClockSteps))
			for i, s := range tl.ClockSteps {
				at := fmtSeconds(s.At.Sub(wf.start))
				if !s.At.Before(wf.start) {
					at = "+" + at
				}
				steps[i] = fmtOffset(s.Step) + " at " + at
			}
			writeWrapped(w, "  ", "the node's wall clock stepped (clock_step: "+strings.Join(steps, ", ")+
				"): the times are on the clock after it", wf.width)
		}
	}
	if len(tl.Missing) > 0 {
		writeWrapped(w, "  missing: ", strings.Join(tl.Missing, "; "), wf.width)
	}
	for _, g := range tl.Gaps {
		writeWrapped(w, "  blind: ", g.Describe(wf.at), wf.width)
	}
	if wf.span > 0 {
		writeWrapped(w, "  ", "its times spread over "+fmtSeconds(wf.span)+" (a clock jump or a corrupt record?): "+
			"the bars show the first "+fmtSeconds(wf.total)+", later times at the right edge", wf.width)
	}
	w.WriteString("\n")
}

func (wf *waterfall) table(w *bufio.Writer) {
	wf.line(w, "", "start", "took", wf.axis())
	for _, r := range wf.rows {
		wf.line(w, r.label, r.offset, r.duration, r.bar)
	}
}

// axis labels the bar area with round offsets, at most one per column.
func (wf *waterfall) axis() string {
	cells := []rune(strings.Repeat(" ", wf.barW))
	step := tickStep(wf.total, wf.barW/9)
	ticks := min(int64(wf.total/step), int64(wf.barW))
	free := 0 // first column a label may use
	for i := range ticks + 1 {
		t := time.Duration(i) * step
		col := int(math.Round(float64(t) / float64(wf.total) * float64(wf.barW)))
		label := []rune(fmtTick(t, step))
		if col < free || col+len(label) > wf.barW {
			continue
		}
		copy(cells[col:], label)
		free = col + len(label) + 1
	}
	return string(cells)
}

// tickStep is the roundest step giving at most n ticks over total; it is
// never below 10 ms.
func tickStep(total time.Duration, n int) time.Duration {
	n = max(n, 1)
	for _, s := range []time.Duration{
		10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
		100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond,
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second,
		30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
		15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour,
	} {
		if total/s <= time.Duration(n) {
			return s
		}
	}
	return max(total/time.Duration(n), 10*time.Millisecond)
}

func fmtTick(t, step time.Duration) string {
	if step < time.Second {
		return fmt.Sprintf("%gs", math.Round(t.Seconds()*100)/100)
	}
	return fmt.Sprintf("%ds", int(t.Round(time.Second).Seconds()))
}

// wrow is one line of the waterfall.
type wrow struct {
	label    string
	offset   string
	duration string
	bar      string
}

// collect builds the rows of the table.
func (wf *waterfall) collect() {
	tl := wf.tl
	emitted := make(map[int]bool) // container indexes in tl.Containers
	sandboxDone, earlierDone := false, false
	containersOf := func(kinds ...correlator.ContainerKind) {
		for ci := range tl.Containers {
			c := &tl.Containers[ci]
			for _, k := range kinds {
				if c.Kind == k && !emitted[ci] {
					emitted[ci] = true
					wf.container(c, 1)
				}
			}
		}
	}
	for _, p := range tl.Phases {
		end, dur := p.End, fmtSeconds(p.Duration())
		if end.IsZero() {
			end, dur = wf.end, "?"
		}
		wf.emit(wrow{p.Name, wf.offset(p.Start), dur, wf.bar(p.Start, end, glyphFull)})
		switch p.Name {
		case correlator.PhaseSandboxReplaced:
			wf.earlierSandboxes()
			earlierDone = true
		case correlator.PhaseSandbox:
			wf.pause()
			sandboxDone = true
		case correlator.PhaseInit:
			containersOf(correlator.KindInit, correlator.KindSidecar)
		case correlator.PhaseContainers:
			containersOf(correlator.KindMain)
		}
	}
	if !earlierDone {
		wf.earlierSandboxes()
	}
	if !sandboxDone {
		wf.pause()
	}
	containersOf(correlator.KindInit, correlator.KindSidecar, correlator.KindMain)

	if len(tl.Conditions) > 0 {
		wf.emit(wrow{label: "conditions"})
		for _, c := range tl.Conditions {
			lag := ""
			switch {
			case c.Coarse:
				lag = "coarse" // at its lastTransitionTime: no lag known
			case !c.Cause.IsZero() && !c.Cause.After(c.Observed): // the correlator never gives a later cause
				lag = "+" + fmtSeconds(c.Lag())
			}
			wf.emit(wrow{"  " + c.Type, wf.offset(c.Observed), lag, wf.condition(c)})
		}
	}
}

// earlierSandboxes shows the replaced sandboxes, each from its first
// RunPodSandbox call (failed ones included) or creation to its end, with
// its calls and CNI plugins.
func (wf *waterfall) earlierSandboxes() {
	for i := range wf.tl.EarlierSandboxes {
		sb := &wf.tl.EarlierSandboxes[i]
		start, end := sandboxStart(sb), sb.Ended
		if start.IsZero() {
			continue
		}
		dur := ""
		if end.IsZero() {
			end, dur = start, "?"
		} else {
			dur = fmtSeconds(end.Sub(start))
		}
		wf.emit(wrow{fmt.Sprintf("  sandbox attempt %d ✗ replaced", sb.Attempt), wf.offset(start), dur, wf.bar(start, end, glyphFull)})
		for _, call := range sb.FailedCalls {
			wf.call("    ", call)
		}
		if sb.Call != nil {
			wf.call("    ", *sb.Call)
		}
		wf.cni("    ", sb)
	}
}

func (wf *waterfall) cni(indent string, sb *correlator.Sandbox) {
	for i := range sb.CNI {
		p := &sb.CNI[i]
		end, dur := p.Exit, fmtSeconds(p.Exit.Sub(p.Exec))
		if end.IsZero() {
			end, dur = p.Exec, "?"
		}
		wf.emit(wrow{indent + "cni " + path.Base(p.Filename), wf.offset(p.Exec), dur, wf.bar(p.Exec, end, glyphFull)})
	}
}

// pause shows the sandbox's insides: the CNI plugins, the pause process,
// and the image pulls that follow it.
func (wf *waterfall) pause() {
	sb := wf.tl.Sandbox
	if sb != nil {
		for _, call := range sb.FailedCalls {
			wf.call("  ", call)
		}
		wf.cni("  ", sb)
		if !sb.PauseStart.IsZero() {
			wf.emit(wrow{"  process pause", wf.offset(sb.PauseStart), "", wf.mark(sb.PauseStart, glyphInstant)})
		}
	}
	for _, ip := range wf.tl.ImagePulls {
		if ip.Call.Start.IsZero() || ip.Call.End.IsZero() {
			continue
		}
		if w := ip.Wait; w != nil {
			// The serialized puller's queue: the pull it began right after.
			label := "image.pull.wait behind " + w.Behind[len(w.Behind)-1].Image
			wf.emit(wrow{label, wf.offset(w.Start), fmtSeconds(w.Duration()), wf.bar(w.Start, w.End, glyphBackOff)})
		}
		if ip.BackOff > 0 {
			from := ip.Call.Start.Add(-ip.BackOff)
			wf.emit(wrow{"image.pull.back_off", wf.offset(from), fmtSeconds(ip.BackOff), wf.bar(from, ip.Call.Start, glyphBackOff)})
		}
		label := "image.pull " + ip.Image
		if ip.Attempt > 1 {
			label += fmt.Sprintf(" #%d", ip.Attempt)
		}
		if ip.Call.Err {
			label += " ✗"
			if ip.ErrorReason != "" {
				label += " " + ip.ErrorReason
			}
		}
		wf.emit(wrow{label, wf.offset(ip.Call.Start), fmtSeconds(ip.Call.End.Sub(ip.Call.Start)), wf.bar(ip.Call.Start, ip.Call.End, glyphFull)})
	}
}

func (wf *waterfall) container(c *correlator.Container, depth int) {
	indent := strings.Repeat("  ", depth)
	name := ContainerSpanName(c)
	if len(c.Attempts) == 0 {
		wf.emit(wrow{indent + name, "", "", "never started"})
	}
	for ai := range c.Attempts {
		a := &c.Attempts[ai]
		start, end, ok := attemptBounds(a)
		label := name
		if a.Attempt > 0 {
			label += fmt.Sprintf(" #%d", a.Attempt)
		}
		switch {
		case a.KilledBy != "": // the exit code is the kill's 128+signal
			label += fmt.Sprintf(" ✗ %s kill", a.KilledBy)
		case a.ExitCode != nil && *a.ExitCode != 0:
			label += fmt.Sprintf(" ✗ exit %d", *a.ExitCode)
		}
		if a.Reason != "" && a.Reason != "Error" && a.Reason != "Completed" {
			label += " " + a.Reason
		}
		if a.BackOff > 0 && ai > 0 {
			// The wait since the previous attempt's exit: the kubelet's back-off.
			from := a.Created.Add(-a.BackOff)
			if a.Created.IsZero() && a.Process != nil {
				from = a.Process.Exec.Add(-a.BackOff)
			}
			wf.emit(wrow{indent + "back-off", wf.offset(from), fmtSeconds(a.BackOff), wf.bar(from, from.Add(a.BackOff), glyphBackOff)})
		}
		if !ok {
			wf.emit(wrow{indent + label, "", "", "no times known"})
			continue
		}
		wf.emit(wrow{indent + label, wf.offset(start), fmtSeconds(end.Sub(start)), wf.bar(start, end, glyphFull)})
		sub := indent + "  "
		for _, call := range a.Calls {
			wf.call(sub, call)
		}
		if p := a.Process; p != nil && !p.Exec.IsZero() {
			label := ProcessSpanName(p)
			switch {
			case p.Signal != 0: // before the exit code, which a signal leaves meaningless
				label += fmt.Sprintf(" signal %d", p.Signal)
			case p.ExitCode != nil:
				label += fmt.Sprintf(" exit %d", *p.ExitCode)
			}
			pend, dur := p.Exit, fmtSeconds(p.Exit.Sub(p.Exec))
			if pend.IsZero() {
				pend, dur = end, "running"
			}
			wf.emit(wrow{sub + label, wf.offset(p.Exec), dur, wf.bar(p.Exec, pend, glyphFull)})
		}
		if h := a.PostStart; h != nil && !h.Start.IsZero() {
			label, glyph := "postStart", glyphFull
			if h.Handler != "" && h.Handler != "exec" {
				label += " " + h.Handler
			}
			if h.Inferred {
				label += " (inferred)"
				glyph = glyphInferred
			}
			if h.ExitCode != nil && *h.ExitCode != 0 {
				label += fmt.Sprintf(" ✗ exit %d", *h.ExitCode)
			}
			hend, dur := h.End, fmtSeconds(h.End.Sub(h.Start))
			if hend.IsZero() {
				hend, dur = end, "?"
			}
			wf.emit(wrow{sub + label, wf.offset(h.Start), dur, wf.bar(h.Start, hend, glyph)})
		}
		wf.probes(sub, a.Probes, a.ProbesOmitted)
	}
	wf.containerFacts(indent+"  ", c)
}

// call draws a CRI call, marked ✗ when it failed.
func (wf *waterfall) call(indent string, call correlator.CRICall) {
	if call.Start.IsZero() || call.End.IsZero() {
		return
	}
	method := call.Method.Short()
	if call.Err {
		method += " ✗"
	}
	wf.emit(wrow{indent + method, wf.offset(call.Start), fmtSeconds(call.End.Sub(call.Start)), wf.bar(call.Start, call.End, glyphFull)})
}

// containerFacts draws what belongs to a container rather than to one of
// its attempts, after them: the calls that made no attempt, then each
// waiting reason from its first to its last observation, its message
// wrapped below the bar.
func (wf *waterfall) containerFacts(indent string, c *correlator.Container) {
	for _, call := range c.FailedCalls {
		wf.call(indent, call)
	}
	for _, w := range c.Waiting {
		label := "waiting " + w.Reason
		if w.Times > 1 {
			label += fmt.Sprintf(" ×%d", w.Times)
		}
		dur := "" // seen once
		if w.Last.After(w.First) {
			dur = fmtSeconds(w.Duration())
		}
		wf.emit(wrow{indent + label, wf.offset(w.First), dur, wf.bar(w.First, w.Last, glyphWaiting)})
		for _, line := range wrapWords(w.Message, wf.barW, maxWaitingMessageRows) {
			wf.emit(wrow{bar: line})
		}
	}
	if c.WaitingOmitted > 0 {
		wf.emit(wrow{label: indent + fmt.Sprintf("(%d more waiting reasons)", c.WaitingOmitted)})
	}
}

// wrapWords splits text into at most rows lines of at most width runes,
// between words where it can; the last line ends with "…" when text did
// not fit.
func wrapWords(text string, width, rows int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(text) {
		for utf8.RuneCountInString(word) > width { // a word longer than a line
			if line != "" {
				out, line = append(out, line), ""
			}
			r := []rune(word)
			out, word = append(out, string(r[:width])), string(r[width:])
		}
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			out, line = append(out, line), word
		}
	}
	if line != "" {
		out = append(out, line)
	}
	if len(out) > rows {
		out = out[:rows]
		out[rows-1] = truncate(out[rows-1]+" …", width)
	}
	return out
}

// probes draws one row per probe kind, its attempts as marks; the duration is
// from the first attempt to the end of the first success (or of the last
// attempt when none succeeded). The counts include the attempts the
// timeline left out (omitted), which have no mark.
func (wf *waterfall) probes(indent string, probes []correlator.ProbeAttempt, omitted map[correlator.ProbeKind]correlator.OmittedProbes) {
	var kinds []correlator.ProbeKind
	for _, p := range probes {
		if !slices.Contains(kinds, p.Kind) {
			kinds = append(kinds, p.Kind)
		}
	}
	for _, k := range kinds {
		cells := wf.emptyCells()
		var first, last, success time.Time
		n, failed := 0, 0
		for _, p := range probes {
			if p.Kind != k || p.Start.IsZero() {
				continue
			}
			n++
			end := p.End
			if end.IsZero() {
				end = p.Start
			}
			if first.IsZero() {
				first = p.Start
			}
			last = end
			glyph := glyphProbeOther
			switch {
			case p.Inferred:
				glyph = glyphProbeGuess
			case p.Result == correlator.ProbeSuccess:
				glyph = glyphProbeOK
			case p.Result == correlator.ProbeFailure:
				glyph = glyphProbeFail
				failed++
			}
			if p.Result == correlator.ProbeSuccess && success.IsZero() {
				success = end
			}
			wf.put(cells, p.Start, glyph)
		}
		if n == 0 {
			continue
		}
		if !success.IsZero() {
			last = success
		}
		n, failed = n+omitted[k].Attempts, failed+omitted[k].Failed
		label := fmt.Sprintf("%s ×%d", ProbeSpanName(k), n)
		if failed > 0 {
			label += fmt.Sprintf(" (%d✗)", failed)
		}
		dur := ""
		if last.After(first) {
			dur = fmtSeconds(last.Sub(first))
		}
		wf.emit(wrow{indent + label, wf.offset(first), dur, strings.TrimRight(string(cells), " ")})
	}
}

func (wf *waterfall) condition(c correlator.ConditionTransition) string {
	cells := wf.emptyCells()
	if !c.Coarse && !c.Cause.IsZero() && c.Cause.Before(c.Observed) {
		for i := wf.col(c.Cause); i < wf.col(c.Observed); i++ {
			cells[i] = glyphLag
		}
	}
	wf.put(cells, c.Observed, glyphCondition)
	return strings.TrimRight(string(cells), " ")
}

func (wf *waterfall) footer(w *bufio.Writer) {
	tl := wf.tl
	w.WriteString("\n")
	if len(tl.Insights) > 0 {
		w.WriteString("insights\n")
		for _, in := range tl.Insights {
			writeWrapped(w, "  • ", in.Message, wf.width)
		}
	}
	if len(tl.CriticalPath) > 0 {
		w.WriteString("critical path\n")
		parts := make([]string, len(tl.CriticalPath))
		for i, s := range tl.CriticalPath {
			parts[i] = s.Name + " " + fmtSeconds(s.End.Sub(s.Start))
			if i < len(parts)-1 {
				parts[i] += " →"
			}
		}
		writeItems(w, "  ", parts, " ", wf.width)
	}
	legend := []string{
		string(glyphFull) + " interval",
		string(glyphInferred) + " inferred",
		string(glyphInstant) + " instant",
		string(glyphProbeOK) + " probe ok",
		string(glyphProbeFail) + " probe failed",
		string(glyphProbeGuess) + " probe inferred from status",
		string(glyphCondition) + " condition observed",
		string(glyphLag) + " its lag",
	}
	if hasBackOff(tl) {
		legend = append(legend, string(glyphBackOff)+" back-off")
	}
	if slices.ContainsFunc(tl.Containers, func(c correlator.Container) bool { return len(c.Waiting) > 0 }) {
		legend = append(legend, string(glyphWaiting)+" waiting (API)")
	}
	writeItems(w, "", legend, "  ", wf.width)
}

func hasBackOff(tl *correlator.Timeline) bool {
	for _, c := range tl.Containers {
		for _, a := range c.Attempts {
			if a.BackOff > 0 {
				return true
			}
		}
	}
	return false
}

// writeItems writes prefix and the items joined by sep, wrapped at width
// between items, continuation lines indented like the prefix.
func writeItems(w *bufio.Writer, prefix string, items []string, sep string, width int) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line, n := prefix, utf8.RuneCountInString(prefix)
	for i, it := range items {
		l := utf8.RuneCountInString(it)
		if i > 0 {
			if n+utf8.RuneCountInString(sep)+l > width {
				w.WriteString(line + "\n")
				line, n = indent, len(indent)
			} else {
				line += sep
				n += utf8.RuneCountInString(sep)
			}
		}
		line += it
		n += l
	}
	w.WriteString(line + "\n")
}

// writeWrapped writes prefix+text wrapped at width, continuation lines
// indented like the prefix; a word longer than a line is cut across lines.
func writeWrapped(w *bufio.Writer, prefix, text string, width int) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line := prefix
	lineLen := utf8.RuneCountInString(prefix)
	empty := true
	flush := func() {
		w.WriteString(line + "\n")
		line, lineLen, empty = indent, len(indent), true
	}
	for _, word := range strings.Fields(text) {
		wl := utf8.RuneCountInString(word)
		if !empty && lineLen+1+wl > width {
			flush()
		}
		if !empty {
			line += " "
			lineLen++
		}
		for room := width - lineLen; wl > room && room > 0; room = width - lineLen {
			r := []rune(word)
			line += string(r[:room])
			word, wl = string(r[room:]), wl-room
			flush()
		}
		line += word
		lineLen += wl
		empty = false
	}
	w.WriteString(line + "\n")
}

func (wf *waterfall) emit(r wrow) {
	wf.rows = append(wf.rows, r)
}

func (wf *waterfall) line(w *bufio.Writer, label, offset, duration, bar string) {
	s := padRight(truncate(label, wf.labelW), wf.labelW) + " " +
		padLeft(offset, waterfallNumWidth) + " " + padLeft(duration, waterfallNumWidth) + "  " + bar
	w.WriteString(strings.TrimRight(s, " ") + "\n")
}

func (wf *waterfall) offset(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmtSeconds(t.Sub(wf.start))
}

func (wf *waterfall) emptyCells() []rune {
	return []rune(strings.Repeat(" ", wf.barW))
}

// x is t's position in cells from the left edge of the bars.
func (wf *waterfall) x(t time.Time) float64 {
	x := float64(t.Sub(wf.start)) / float64(wf.total) * float64(wf.barW)
	return math.Min(math.Max(x, 0), float64(wf.barW))
}

// col is the cell t falls in.
func (wf *waterfall) col(t time.Time) int {
	return min(int(wf.x(t)), wf.barW-1)
}

func (wf *waterfall) put(cells []rune, t time.Time, glyph rune) {
	cells[wf.col(t)] = glyph
}

func (wf *waterfall) mark(t time.Time, glyph rune) string {
	cells := wf.emptyCells()
	wf.put(cells, t, glyph)
	return strings.TrimRight(string(cells), " ")
}

// bar draws start -> end with whole cells and an eighth-block right edge;
// anything shorter than an eighth of a cell is an instant mark.
func (wf *waterfall) bar(start, end time.Time, glyph rune) string {
	cells := wf.emptyCells()
	x0, x1 := wf.x(start), wf.x(end)
	if x1-x0 < 1.0/8 {
		wf.put(cells, start, glyphInstant)
		return strings.TrimRight(string(cells), " ")
	}
	i0 := int(x0)
	i1 := int(x1)
	for i := i0; i < i1 && i < wf.barW; i++ {
		cells[i] = glyph
	}
	if i1 < wf.barW {
		if e := int(math.Round((x1 - float64(i1)) * 8)); e > 0 {
			if glyph == glyphFull {
				cells[i1] = eighths[e]
			} else {
				cells[i1] = glyph
			}
		}
	}
	return strings.TrimRight(string(cells), " ")
}

// fmtSeconds formats d in seconds with millisecond precision, shorter for
// long durations: "0.045s", "27.097s", "123.4s"; past 11 days (no pod start
// takes that long: a clock jump or a corrupt record) in whole days, so that
// any duration fits the waterfall's columns: "106752d".
// at writes t as the header counts: from the start, "+1.200s" (before
// it, "-3.000s").
func (wf *waterfall) at(t time.Time) string {
	if t.Before(wf.start) {
		return fmtSeconds(t.Sub(wf.start))
	}
	return "+" + fmtSeconds(t.Sub(wf.start))
}

func fmtSeconds(d time.Duration) string {
	s := d.Seconds()
	switch a := math.Abs(s); {
	case a >= 1e6:
		return fmt.Sprintf("%.0fd", s/(24*60*60))
	case a >= 1000:
		return fmt.Sprintf("%.0fs", s)
	case a >= 100:
		return fmt.Sprintf("%.1fs", s)
	default:
		return fmt.Sprintf("%.3fs", s)
	}
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func padRight(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}

func padLeft(s string, n int) string {
	return strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) + s
}
