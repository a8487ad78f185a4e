package exporter

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/podtrace"
	"github.com/readyline/readyline/exporter/termtext"
)

// Layout of the text waterfall: label (as wide as the longest, within
// bounds), start offset, duration, bar.
const (
	waterfallMinLabel = 20
	waterfallNumWidth = 8
	waterfallMinWidth = 64
	// waterfallMaxWidth bounds the columns (and so the output) whatever
	// width RenderWaterfall is asked for.
	waterfallMaxWidth = 1000
	// DefaultWaterfallWidth is used when RenderWaterfall is given width <= 0.
	DefaultWaterfallWidth = 100
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
	wf := newWaterfall(newWaterfallChart(tl), width)
	bw := bufio.NewWriter(w)
	wf.header(bw)
	wf.table(bw)
	wf.footer(bw)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing waterfall: %w", err)
	}
	return nil
}

// waterfall draws a waterfallChart in columns of text.
type waterfall struct {
	*waterfallChart
	width  int
	labelW int
	barW   int
}

func newWaterfall(wc *waterfallChart, width int) *waterfall {
	// The label column fits the longest label, up to a third of the width;
	// the bars get the rest.
	labelW := waterfallMinLabel
	for i := range wc.rows {
		labelW = max(labelW, utf8.RuneCountInString(textLabel(&wc.rows[i])))
	}
	labelW = min(labelW, width/3)
	return &waterfall{waterfallChart: wc, width: width, labelW: labelW, barW: width - labelW - 2*waterfallNumWidth - 4}
}

// textLabel is a row's label indented by its depth, terminal-safe (a
// container's or a process's name is the pod's).
func textLabel(r *wrow) string {
	return strings.Repeat("  ", r.depth) + termtext.Escape(r.label)
}

func (wf *waterfall) header(w *bufio.Writer) {
	tl := wf.tl
	fmt.Fprintf(w, "%s  %s\n", termtext.Escape(tl.Pod.String()), termtext.Escape(wf.outcome()))
	if tl.Reason != "" {
		writeWrapped(w, "  reason: ", tl.Reason, wf.width)
	}
	if tl.Waiting != "" {
		writeWrapped(w, "  waiting: ", tl.Waiting, wf.width)
	}
	if then := tl.After.Summary(tl.Start); then != "" {
		writeWrapped(w, "  ", then, wf.width)
	}
	if meta := wf.meta(); len(meta) > 0 {
		writeItems(w, "  ", meta, "  ", wf.width)
	}
	if tl.Pod.UID != "" {
		fmt.Fprintf(w, "  trace %s\n", podtrace.TraceIDForPod(tl.Pod.UID))
	}
	for _, n := range wf.notes() {
		prefix := "  "
		if n.topic != "" {
			prefix += n.topic + ": "
		}
		writeWrapped(w, prefix, n.text, wf.width)
	}
	w.WriteString("\n")
}

func (wf *waterfall) table(w *bufio.Writer) {
	wf.line(w, "", "start", "took", wf.axis())
	for i := range wf.rows {
		r := &wf.rows[i]
		wf.line(w, textLabel(r), wf.offset(r.start), r.took, wf.drawRow(r))
		if r.kind == rowWaiting {
			for _, line := range wrapWords(termtext.Escape(r.message), wf.barW, maxWaitingMessageRows) {
				wf.line(w, "", "", "", line)
			}
		}
	}
}

// drawRow is the bar column of a row.
func (wf *waterfall) drawRow(r *wrow) string {
	switch {
	case r.note != "":
		return termtext.Escape(r.note)
	case r.kind == rowSection || r.kind == rowNote:
		return ""
	case r.kind == rowCondition:
		return wf.condition(*r.cond)
	case r.kind == rowProbe:
		cells := wf.emptyCells()
		for _, m := range r.probes {
			wf.put(cells, m.at, probeGlyph(m.kind))
		}
		return strings.TrimRight(string(cells), " ")
	case r.instant:
		return wf.mark(r.start, glyphInstant)
	}
	return wf.bar(r.start, r.end, styleGlyph(r.style))
}

func styleGlyph(s barStyle) rune {
	switch s {
	case styleInferred:
		return glyphInferred
	case styleBackOff:
		return glyphBackOff
	case styleWaiting:
		return glyphWaiting
	}
	return glyphFull
}

func probeGlyph(k probeMarkKind) rune {
	switch k {
	case markOK:
		return glyphProbeOK
	case markFailed:
		return glyphProbeFail
	case markInferred:
		return glyphProbeGuess
	}
	return glyphProbeOther
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
		out[rows-1] = cutRunes(out[rows-1]+" …", width)
	}
	return out
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
	if rows := breakdownRows(tl); len(rows) > 0 {
		w.WriteString("where the time went\n")
		for _, r := range rows {
			line := fmt.Sprintf("  %-32s %8s %4s", r.name, r.took, r.percent)
			if r.what != "" {
				line += "  " + termtext.Escape(r.what)
			}
			w.WriteString(cutRunes(line, wf.width) + "\n")
		}
	}
	if af := tl.After; af != nil && (len(af.Events) > 0 || len(af.Recoveries) > 0) {
		fmt.Fprintf(w, "after the start (as of %s)\n", af.AsOf.UTC().Format("15:04:05Z"))
		for i, e := range af.Events {
			if i == maxAfterEventsShown/4 && af.EventsOmitted > 0 {
				fmt.Fprintf(w, "  (%d more)\n", af.EventsOmitted)
			}
			writeWrapped(w, fmt.Sprintf("  %9s  ", wf.at(e.At)), joinNonEmpty(" ", e.Container, e.What), wf.width)
		}
		for _, r := range af.Recoveries {
			writeWrapped(w, "  ", "Ready again at "+wf.at(r.End)+" after "+fmtSeconds(r.Duration())+
				" ("+joinNonEmpty(", ", r.Cause, recoveryShares(r))+")", wf.width)
		}
	}
	if len(tl.Insights) > 0 {
		w.WriteString("insights\n")
		for _, in := range tl.Insights {
			writeWrapped(w, "  • ", in.Message, wf.width)
		}
	}
	if parts := wf.criticalSteps(); len(parts) > 0 {
		w.WriteString("critical path\n")
		for i := range parts[:len(parts)-1] {
			parts[i] += " →"
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
	if hasWaiting(tl) {
		legend = append(legend, string(glyphWaiting)+" waiting (API)")
	}
	writeItems(w, "", legend, "  ", wf.width)
}

// maxAfterEventsShown is the correlator's bound on what it keeps of a
// pod's life after its start (the first quarter, then the latest).
const maxAfterEventsShown = 32

// recoveryShares is a Recovery's breakdown in words: "crash-loop back-off
// 10.0s, create/start calls 0.1s, running 0.5s".
func recoveryShares(r correlator.Recovery) string {
	parts := make([]string, len(r.Breakdown))
	for i, s := range r.Breakdown {
		parts[i] = s.Kind.Name() + " " + fmtSeconds(s.Duration)
	}
	return strings.Join(parts, ", ")
}

// cutRunes cuts s to at most n runes, the last one "…" when it was cut.
func cutRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// writeItems writes prefix and the items joined by sep, wrapped at width
// between items, continuation lines indented like the prefix; the items
// are made terminal-safe.
func writeItems(w *bufio.Writer, prefix string, items []string, sep string, width int) {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	line, n := prefix, utf8.RuneCountInString(prefix)
	for i, it := range items {
		it = termtext.Escape(it)
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
// text is made terminal-safe first, so its newlines show as \n.
func writeWrapped(w *bufio.Writer, prefix, text string, width int) {
	text = termtext.Escape(text)
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

func (wf *waterfall) line(w *bufio.Writer, label, offset, duration, bar string) {
	s := padRight(cutRunes(label, wf.labelW), wf.labelW) + " " +
		padLeft(offset, waterfallNumWidth) + " " + padLeft(duration, waterfallNumWidth) + "  " + bar
	w.WriteString(strings.TrimRight(s, " ") + "\n")
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

func padRight(s string, n int) string {
	return s + strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s)))
}

func padLeft(s string, n int) string {
	return strings.Repeat(" ", max(0, n-utf8.RuneCountInString(s))) + s
}
