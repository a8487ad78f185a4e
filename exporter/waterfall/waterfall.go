package waterfall

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
	// NumWidth is the width of the start and took columns.
	NumWidth = 8
	// MinWidth is the narrowest waterfall Render draws, whatever width it
	// is asked for.
	MinWidth = 64
	// MaxWidth bounds the columns (and so the output) whatever
	// width Render is asked for.
	MaxWidth = 1000
	// DefaultWidth is used when Render is given width <= 0.
	DefaultWidth = 100
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

// Render writes tl as a text waterfall for a terminal of width
// columns (DefaultWidth when width <= 0, at most MaxWidth): a header, one row per
// phase, container attempt, process, hook, probe kind (its attempts as
// marks) and condition, each with its offset from the pod's creation, its
// duration and a bar to scale, then the insights and the critical path. The
// output depends only on tl and width (golden-testable), and its size on
// the number of facts in tl and width, whatever its times: bars cover at
// most 24 hours. It assumes a terminal that draws the box and block
// characters one column wide.
func Render(w io.Writer, tl *correlator.Timeline, width int) error {
	if width <= 0 {
		width = DefaultWidth
	}
	width = min(max(width, MinWidth), MaxWidth)
	wf := newWaterfall(NewChart(tl), width)
	bw := bufio.NewWriter(w)
	wf.header(bw)
	wf.table(bw)
	wf.footer(bw)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing waterfall: %w", err)
	}
	return nil
}

// waterfall draws a Chart in columns of text.
type waterfall struct {
	*Chart
	width  int
	labelW int
	barW   int
}

func newWaterfall(wc *Chart, width int) *waterfall {
	// The label column fits the longest label, up to a third of the width;
	// the bars get the rest.
	labelW := waterfallMinLabel
	for i := range wc.Rows {
		labelW = max(labelW, utf8.RuneCountInString(textLabel(&wc.Rows[i])))
	}
	labelW = min(labelW, width/3)
	return &waterfall{Chart: wc, width: width, labelW: labelW, barW: width - labelW - 2*NumWidth - 4}
}

// textLabel is a row's label indented by its depth, terminal-safe (a
// container's or a process's name is the pod's).
func textLabel(r *Row) string {
	return strings.Repeat("  ", r.Depth) + termtext.Escape(r.Label)
}

func (wf *waterfall) header(w *bufio.Writer) {
	tl := wf.Timeline
	fmt.Fprintf(w, "%s  %s\n", termtext.Escape(tl.Pod.String()), termtext.Escape(wf.Outcome()))
	if tl.Reason != "" {
		writeWrapped(w, "  reason: ", tl.Reason, wf.width)
	}
	if tl.Waiting != "" {
		writeWrapped(w, "  waiting: ", tl.Waiting, wf.width)
	}
	if then := tl.After.Summary(tl.Start); then != "" {
		writeWrapped(w, "  ", then, wf.width)
	}
	if meta := wf.Meta(); len(meta) > 0 {
		writeItems(w, "  ", meta, "  ", wf.width)
	}
	if tl.Pod.UID != "" {
		fmt.Fprintf(w, "  trace %s\n", podtrace.TraceIDForPod(tl.Pod.UID))
	}
	for _, n := range wf.Notes() {
		prefix := "  "
		if n.Topic != "" {
			prefix += n.Topic + ": "
		}
		writeWrapped(w, prefix, n.Text, wf.width)
	}
	w.WriteString("\n")
}

func (wf *waterfall) table(w *bufio.Writer) {
	wf.line(w, "", "start", "took", wf.axis())
	for i := range wf.Rows {
		r := &wf.Rows[i]
		wf.line(w, textLabel(r), wf.Offset(r.Start), r.Took, wf.drawRow(r))
		if r.Kind == RowWaiting {
			for _, line := range wrapWords(termtext.Escape(r.Message), wf.barW, maxWaitingMessageRows) {
				wf.line(w, "", "", "", line)
			}
		}
	}
}

// drawRow is the bar column of a row.
func (wf *waterfall) drawRow(r *Row) string {
	switch {
	case r.Note != "":
		return termtext.Escape(r.Note)
	case r.Kind == RowSection || r.Kind == RowNote:
		return ""
	case r.Kind == RowCondition:
		return wf.condition(*r.Cond)
	case r.Kind == RowProbe:
		cells := wf.emptyCells()
		for _, m := range r.Probes {
			wf.put(cells, m.At, probeGlyph(m.Kind))
		}
		return strings.TrimRight(string(cells), " ")
	case r.Instant:
		return wf.mark(r.Start, glyphInstant)
	}
	return wf.bar(r.Start, r.End, styleGlyph(r.Style))
}

func styleGlyph(s BarStyle) rune {
	switch s {
	case StyleInferred:
		return glyphInferred
	case StyleBackOff:
		return glyphBackOff
	case StyleWaiting:
		return glyphWaiting
	}
	return glyphFull
}

func probeGlyph(k ProbeMarkKind) rune {
	switch k {
	case MarkOK:
		return glyphProbeOK
	case MarkFailed:
		return glyphProbeFail
	case MarkInferred:
		return glyphProbeGuess
	}
	return glyphProbeOther
}

// axis labels the bar area with round offsets, at most one per column.
func (wf *waterfall) axis() string {
	cells := []rune(strings.Repeat(" ", wf.barW))
	step := TickStep(wf.Total, wf.barW/9)
	ticks := min(int64(wf.Total/step), int64(wf.barW))
	free := 0 // first column a label may use
	for i := range ticks + 1 {
		t := time.Duration(i) * step
		col := int(math.Round(float64(t) / float64(wf.Total) * float64(wf.barW)))
		label := []rune(FormatTick(t, step))
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
		out[rows-1] = CutRunes(out[rows-1]+" …", width)
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
	tl := wf.Timeline
	w.WriteString("\n")
	if rows := BreakdownRows(tl); len(rows) > 0 {
		w.WriteString("where the time went\n")
		for _, r := range rows {
			line := fmt.Sprintf("  %-32s %8s %4s", r.Name, r.Took, r.Percent)
			if r.What != "" {
				line += "  " + termtext.Escape(r.What)
			}
			w.WriteString(CutRunes(line, wf.width) + "\n")
		}
	}
	if af := tl.After; af != nil && (len(af.Events) > 0 || len(af.Recoveries) > 0) {
		fmt.Fprintf(w, "after the start (as of %s)\n", af.AsOf.UTC().Format("15:04:05Z"))
		for i, e := range af.Events {
			if i == maxAfterEventsShown/4 && af.EventsOmitted > 0 {
				fmt.Fprintf(w, "  (%d more)\n", af.EventsOmitted)
			}
			writeWrapped(w, fmt.Sprintf("  %9s  ", wf.At(e.At)), JoinNonEmpty(" ", e.Container, e.What), wf.width)
		}
		for _, r := range af.Recoveries {
			writeWrapped(w, "  ", "Ready again at "+wf.At(r.End)+" after "+FormatSeconds(r.Duration())+
				" ("+JoinNonEmpty(", ", r.Cause, recoveryShares(r))+")", wf.width)
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
	if HasBackOff(tl) {
		legend = append(legend, string(glyphBackOff)+" back-off")
	}
	if HasWaiting(tl) {
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
		parts[i] = s.Kind.Name() + " " + FormatSeconds(s.Duration)
	}
	return strings.Join(parts, ", ")
}

// CutRunes cuts s to at most n runes, the last one "…" when it was cut.
func CutRunes(s string, n int) string {
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
	s := padRight(CutRunes(label, wf.labelW), wf.labelW) + " " +
		padLeft(offset, NumWidth) + " " + padLeft(duration, NumWidth) + "  " + bar
	w.WriteString(strings.TrimRight(s, " ") + "\n")
}

func (wf *waterfall) emptyCells() []rune {
	return []rune(strings.Repeat(" ", wf.barW))
}

// x is t's position in cells from the left edge of the bars.
func (wf *waterfall) x(t time.Time) float64 {
	x := float64(t.Sub(wf.Start)) / float64(wf.Total) * float64(wf.barW)
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
