package exporter

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

// Geometry of the HTML waterfall's SVG, in CSS pixels. The label, start
// and took columns are left of the bars, as in the text waterfall.
const (
	svgWidth      = 1320
	svgLabelX     = 10  // the labels' left edge at depth 0
	svgIndent     = 14  // per depth
	svgLabelRight = 336 // the labels' right edge
	svgStartRight = 408 // right-aligned start column
	svgTookRight  = 476 // right-aligned took column
	svgBarLeft    = 494
	svgBarRight   = svgWidth - 24
	svgAxisHeight = 30
	svgRowHeight  = 22
	svgMsgHeight  = 16 // a waiting reason's message under its row
	svgBottom     = 10
	// svgCharWidth is a generous width of a 12px monospace character
	// (0.6 em), to cut labels before they reach the start column.
	svgCharWidth = 7.3
	// svgMessageRunes is how much of a waiting reason's message fits
	// under the bars, at svgCharWidth.
	svgMessageRunes = (svgBarRight - svgBarLeft) * 10 / 73
	// svgMinBar is the narrowest bar drawn: shorter intervals still show.
	svgMinBar = 2
	// svgTickSpacing is the least room between two tick labels.
	svgTickSpacing = 70
	// maxHeadingRunes cuts a pod's namespace/name in the heading and the
	// list (a pod name may be 253 characters); the whole name is its title.
	maxHeadingRunes = 80
)

// RenderWaterfallHTML writes tl's waterfall as a page of HTML with an
// inline SVG: the rows of the text waterfall, drawn to scale on one time
// axis, with a tooltip on every bar and mark, then the insights and the
// critical path. The page needs no script and loads nothing: its styles
// are inline, so it can be served with a Content-Security-Policy of
// default-src 'none' (see UIContentSecurityPolicy). back is the link to the
// list of pod starts ("" for none); api, when not "", links the timeline's
// JSON. Elements carry stable classes and data- attributes (data-name,
// data-start-ms, data-duration-ms, data-type, data-lag-ms) for tests.
func RenderWaterfallHTML(w io.Writer, tl *correlator.Timeline, back, api string) error {
	v := newPodView(tl, back, api)
	var page htmlWriter
	writePodPage(&page, &v)
	if _, err := w.Write(page.b); err != nil {
		return fmt.Errorf("writing waterfall page: %w", err)
	}
	return nil
}

// podView is what the page of a pod start shows (writePodPage).
type podView struct {
	Title     string
	Back      string
	API       string
	Pod       shortText
	Outcome   string
	Result    string // ready, failed, timeout, deleted, partial: a CSS class
	Reason    string
	Waiting   string
	Meta      []string
	Trace     string
	Notes     []noteView
	Chart     svgChart
	Insights  []correlator.Insight
	Breakdown []breakdownView
	Critical  []stepView
	Legend    legendView
}

// shortText is a text cut to fit, and the whole of it for a title when it
// was cut.
type shortText struct {
	Text string
	Full string // "" when Text is all of it
}

func cut(s string, n int) shortText {
	if utf8.RuneCountInString(s) <= n {
		return shortText{Text: s}
	}
	return shortText{Text: waterfall.CutRunes(s, max(n, 2)), Full: s}
}

// noteView is a waterfall.ChartNote.
type noteView struct {
	Topic, Text string
}

// stepView is one step of the critical path.
type stepView struct {
	Name       string
	Took       string
	DurationMS string
	OnChart    bool // a row of the chart shows the step
}

// legendView says which of the optional styles the chart uses.
type legendView struct {
	Pulls, Hooks, Inferred, BackOff, Waiting, Coarse, Critical, Blind bool
}

// svgChart is the waterfall's SVG.
type svgChart struct {
	Width, Height int
	GridBottom    int // where the ticks' and the guides' lines end
	BarLeft       int
	BarRight      int
	StartRight    int
	TookRight     int
	Ticks         []svgTick
	Guides        []svgGuide
	Blind         []svgBlind
	Rows          []svgRow
}

type svgTick struct {
	X     string
	Label string
}

// svgGuide is a condition's faint vertical line across the rows.
type svgGuide struct {
	X    string
	Type string
}

// svgBlind shades the time readyline did not see: before it watched a
// pod seen late, and each blind window of a source.
type svgBlind struct {
	X, W   string
	Source string // "" for the time before the pod was seen
	Title  string
}

// svgRow is one row of the chart.
type svgRow struct {
	Class      string // "row phase", "row container init", "message"
	Name       string
	Container  string
	Y          int // the row's top
	TextY      int // the baseline of its texts, from its top
	Height     int
	Band       bool // shaded, every other row
	StartMS    string
	DurationMS string
	Open       string // why the end is not known: "running", "?"
	LabelX     int
	Label      shortText
	Start      string
	Took       string
	Bar        *svgBar
	Marks      []svgMark
	Cond       *svgCondition
	Critical   []svgCritical
	Note       string // in place of a bar
	Message    shortText
}

type svgBar struct {
	X, Y, W, H string
	Class      string
	Title      string
}

// svgMark is a probe attempt.
type svgMark struct {
	X, Y  string
	Class string // "ok observed", "failed observed", "unknown observed", "inferred"
	Shape string // circle, cross, dot, diamond
	AtMS  string
	Title string
}

type svgCondition struct {
	Type       string
	X, Y       string
	CauseX     string // "" without a lag to draw
	LagMS      string
	ObservedMS string
	Coarse     bool
	Title      string
}

// breakdownView is one kind of time of "where the time went".
type breakdownView struct {
	Kind, Name, Took, Percent, What string
}

// svgCritical underlines the part of a row that is a step of the critical path.
type svgCritical struct {
	X, Y, W string
	Title   string
}

func newPodView(tl *correlator.Timeline, back, api string) podView {
	wc := waterfall.NewChart(tl)
	v := podView{
		Title:    tl.Pod.String() + " — " + wc.Outcome(),
		Back:     back,
		API:      api,
		Pod:      cut(tl.Pod.String(), maxHeadingRunes),
		Outcome:  wc.Outcome(),
		Result:   string(tl.Outcome),
		Reason:   tl.Reason,
		Waiting:  tl.Waiting,
		Meta:     wc.Meta(),
		Insights: tl.Insights,
	}
	for _, r := range waterfall.BreakdownRows(tl) {
		v.Breakdown = append(v.Breakdown, breakdownView{Kind: r.Kind, Name: r.Name, Took: r.Took, Percent: r.Percent, What: r.What})
	}
	if tl.Partial {
		v.Result = "partial"
	}
	for _, n := range wc.Notes() {
		v.Notes = append(v.Notes, noteView{Topic: n.Topic, Text: n.Text})
	}
	if tl.Pod.UID != "" {
		v.Trace = TraceIDForPod(tl.Pod.UID).String()
	}
	v.Chart = newSVGChart(wc)
	onChart := map[string]bool{}
	for _, r := range v.Chart.Rows {
		if len(r.Critical) > 0 {
			onChart[r.Name] = true
		}
	}
	for _, s := range tl.CriticalPath {
		d := s.End.Sub(s.Start)
		v.Critical = append(v.Critical, stepView{Name: s.Name, Took: waterfall.FormatSeconds(d), DurationMS: ms(d), OnChart: onChart[s.Name]})
	}
	v.Legend = legendView{BackOff: waterfall.HasBackOff(tl) || hasPullWaits(tl), Waiting: waterfall.HasWaiting(tl), Critical: len(onChart) > 0,
		Blind: len(v.Chart.Blind) > 0}
	for _, r := range wc.Rows {
		switch {
		case r.Style == waterfall.StyleInferred:
			v.Legend.Inferred = true
		case r.Kind == waterfall.RowPull:
			v.Legend.Pulls = true
		case r.Kind == waterfall.RowCondition && r.Cond.Coarse:
			v.Legend.Coarse = true
		}
		if r.Kind == waterfall.RowHook {
			v.Legend.Hooks = true
		}
	}
	return v
}

func hasPullWaits(tl *correlator.Timeline) bool {
	for _, ip := range tl.ImagePulls {
		if ip.Wait != nil || ip.BackOff > 0 {
			return true
		}
	}
	return false
}

// ms writes d in milliseconds, to the microsecond: "4912", "0.018".
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', -1, 64)
}

// px writes a coordinate to a tenth of a pixel.
func px(x float64) string {
	return strconv.FormatFloat(x, 'f', 1, 64)
}

// svgScale maps the chart's times to x coordinates of the bars.
type svgScale struct{ wc *waterfall.Chart }

func (s svgScale) x(t time.Time) float64 {
	return svgBarLeft + s.wc.Frac(t)*(svgBarRight-svgBarLeft)
}

func newSVGChart(wc *waterfall.Chart) svgChart {
	sc := svgScale{wc}
	c := svgChart{Width: svgWidth, BarLeft: svgBarLeft, BarRight: svgBarRight, StartRight: svgStartRight, TookRight: svgTookRight}
	step := waterfall.TickStep(wc.Total, (svgBarRight-svgBarLeft)/svgTickSpacing)
	for i := range min(int64(wc.Total/step), 1000) + 1 {
		t := time.Duration(i) * step
		c.Ticks = append(c.Ticks, svgTick{X: px(sc.x(wc.Start.Add(t))), Label: waterfall.FormatTick(t, step)})
	}
	y := svgAxisHeight
	for i := range wc.Rows {
		r := &wc.Rows[i]
		row := newSVGRow(sc, r, y, i%2 == 1)
		c.Rows = append(c.Rows, row)
		y += row.Height
		if r.Kind == waterfall.RowWaiting && strings.TrimSpace(r.Message) != "" {
			c.Rows = append(c.Rows, svgRow{Class: "message", Y: y, TextY: 12, Height: svgMsgHeight, Band: i%2 == 1,
				LabelX: svgBarLeft, Message: cut(strings.Join(strings.Fields(r.Message), " "), svgMessageRunes)})
			y += svgMsgHeight
		}
	}
	c.GridBottom = y
	c.Blind = blindAreas(sc)
	c.Height = y + svgBottom
	for _, r := range wc.Rows {
		if r.Kind == waterfall.RowCondition {
			c.Guides = append(c.Guides, svgGuide{X: px(sc.x(r.Cond.Observed)), Type: r.Cond.Type})
		}
	}
	return c
}

// blindAreas are the parts of the axis some source did not see, as the
// header's notes tell them.
func blindAreas(sc svgScale) []svgBlind {
	wc := sc.wc
	var out []svgBlind
	area := func(from, to time.Time, source, title string) {
		x0, x1 := sc.x(from), sc.x(to)
		if x1-x0 < 0.5 {
			return
		}
		out = append(out, svgBlind{X: px(x0), W: px(x1 - x0), Source: source, Title: title})
	}
	if tl := wc.Timeline; !tl.ObservedSince.IsZero() {
		area(wc.Start, tl.ObservedSince, "", "readyline saw this pod only from "+wc.At(tl.ObservedSince)+
			": earlier kernel and CRI facts are missing")
	}
	for _, g := range wc.Timeline.Gaps {
		for _, bw := range g.Windows {
			to, until := bw.To, wc.At(bw.To)
			if to.IsZero() {
				to, until = wc.End, "the end (still blind)"
			}
			area(bw.From, to, g.Source, "blind: "+g.Source+" "+bw.Reason+" "+wc.At(bw.From)+" → "+until+"\n"+g.Lacks())
		}
	}
	return out
}

// barHeight makes the rows' nesting visible: phases thickest, calls thinnest.
func barHeight(k waterfall.RowKind) int {
	switch k {
	case waterfall.RowPhase, waterfall.RowSandbox:
		return 14
	case waterfall.RowContainer:
		return 12
	case waterfall.RowCall, waterfall.RowCNI, waterfall.RowBackOff, waterfall.RowPullWait:
		return 8
	}
	return 10
}

func newSVGRow(sc svgScale, r *waterfall.Row, y int, band bool) svgRow {
	wc := sc.wc
	row := svgRow{
		Class: "row " + string(r.Kind), Name: r.Name, Container: r.Container,
		Y: y, TextY: 15, Height: svgRowHeight, Band: band,
		LabelX: svgLabelX + svgIndent*r.Depth,
		Start:  wc.Offset(r.Start), Took: r.Took, Note: r.Note,
	}
	if r.Kind == waterfall.RowContainer || (r.Kind == waterfall.RowNote && r.Container != "" && r.Name == r.Container) {
		row.Class += " " + containerClass(r.Container)
	}
	if r.Failed {
		row.Class += " failed"
	}
	if r.Cond != nil && r.Cond.Coarse {
		row.Class += " coarse"
	}
	if r.Open {
		row.Class += " open"
		row.Open = r.Took
	}
	room := int((svgLabelRight - float64(row.LabelX)) / svgCharWidth)
	row.Label = cut(r.Label, room)
	if !r.Start.IsZero() && r.Kind != waterfall.RowSection && r.Kind != waterfall.RowNote {
		row.StartMS = ms(r.Start.Sub(wc.Start))
		if !r.End.IsZero() {
			row.DurationMS = ms(r.End.Sub(r.Start))
		}
	}
	mid := float64(svgRowHeight) / 2
	label := r.Label
	if r.Container != "" && r.Name != r.Container {
		label = r.Container + " " + label
	}
	switch {
	case r.Kind == waterfall.RowSection || r.Kind == waterfall.RowNote || r.Note != "":
	case r.Kind == waterfall.RowCondition:
		row.Cond = newSVGCondition(sc, r.Cond, mid)
	case r.Kind == waterfall.RowProbe:
		for _, m := range r.Probes {
			mk := svgMark{X: px(sc.x(m.At)), Y: px(mid), Class: string(m.Kind) + " observed", Shape: "circle",
				AtMS: ms(m.At.Sub(wc.Start)), Title: probeTitle(wc, label, m)}
			switch m.Kind {
			case waterfall.MarkFailed:
				mk.Shape = "cross"
			case waterfall.MarkOther:
				mk.Shape = "dot"
			case waterfall.MarkInferred:
				mk.Class, mk.Shape = string(m.Kind), "diamond"
			}
			row.Marks = append(row.Marks, mk)
		}
		// The span from the first attempt to the first success, faint.
		if r.End.After(r.Start) {
			x0, x1 := sc.x(r.Start), sc.x(r.End)
			row.Bar = &svgBar{X: px(x0), Y: px(mid - 1), W: px(x1 - x0), H: "2", Class: "bar span",
				Title: label + ": " + wc.At(r.Start) + " → " + wc.At(r.End) + ", " + r.Took}
		}
	default:
		h := float64(barHeight(r.Kind))
		x0, x1 := sc.x(r.Start), sc.x(r.End)
		cls := "bar " + string(r.Style)
		if r.Instant {
			x1 = x0
			cls = "bar instant"
		}
		w := max(x1-x0, svgMinBar)
		if x0+w > svgBarRight {
			x0 = svgBarRight - w
		}
		row.Bar = &svgBar{X: px(x0), Y: px(mid - h/2), W: px(w), H: px(h), Class: cls, Title: barTitle(wc, label, r)}
		for _, s := range wc.Timeline.CriticalPath {
			if s.Name != r.Name || s.End.Before(r.Start) || s.Start.After(r.End) {
				continue
			}
			// The part of the step this row shows: a step may span
			// several attempts of a container.
			cx0, cx1 := max(sc.x(s.Start), x0), min(sc.x(s.End), x0+w)
			cw := max(cx1-cx0, svgMinBar)
			row.Critical = append(row.Critical, svgCritical{X: px(cx0), Y: px(mid + h/2 + 1.5), W: px(cw),
				Title: "critical path: " + s.Name + " " + wc.At(s.Start) + " → " + wc.At(s.End) + ", " + waterfall.FormatSeconds(s.End.Sub(s.Start))})
		}
		if len(row.Critical) > 0 {
			row.Class += " critical"
		}
	}
	return row
}

// containerClass is the CSS class of a container's kind: init, sidecar, main.
func containerClass(owner string) string {
	kind, _, _ := strings.Cut(owner, "/")
	if kind == string(correlator.KindMain) {
		return "main"
	}
	return kind
}

func barTitle(wc *waterfall.Chart, label string, r *waterfall.Row) string {
	var b strings.Builder
	b.WriteString(label)
	b.WriteString("\n")
	switch {
	case r.Instant:
		b.WriteString("at " + wc.At(r.Start))
	case r.Took == "running":
		b.WriteString("from " + wc.At(r.Start) + ", still running at " + wc.At(r.End))
	case r.Open:
		b.WriteString("from " + wc.At(r.Start) + ", its end not seen")
	default:
		b.WriteString(wc.At(r.Start) + " → " + wc.At(r.End))
		if r.Took != "" {
			b.WriteString(", took " + r.Took)
		}
	}
	if r.Detail != "" {
		b.WriteString("\n" + r.Detail)
	}
	if r.Style == waterfall.StyleInferred {
		b.WriteString("\ninferred: not seen, its bounds come from the container's start and the next container's creation")
	}
	return b.String()
}

func probeTitle(wc *waterfall.Chart, label string, m waterfall.ProbeMark) string {
	p := m.Attempt
	var b strings.Builder
	b.WriteString(label)
	if p.Handler != "" {
		b.WriteString(" (" + p.Handler + ")")
	}
	b.WriteString("\n")
	if p.Inferred {
		b.WriteString("inferred from the API's status flip: succeeded by " + wc.At(m.At) + ", not seen")
		return b.String()
	}
	b.WriteString(string(p.Result) + " at " + wc.At(m.At))
	if m.End.After(m.At) {
		b.WriteString(", took " + waterfall.FormatSeconds(m.End.Sub(m.At)))
	}
	if p.ExitCode != nil {
		fmt.Fprintf(&b, ", exit %d", *p.ExitCode)
	}
	if p.Conn != nil && p.Conn.Result != "" {
		b.WriteString(", connection " + p.Conn.Result)
	}
	return b.String()
}

func newSVGCondition(sc svgScale, c *correlator.ConditionTransition, mid float64) *svgCondition {
	wc := sc.wc
	v := &svgCondition{Type: c.Type, X: px(sc.x(c.Observed)), Y: px(mid), ObservedMS: ms(c.Observed.Sub(wc.Start)), Coarse: c.Coarse}
	var b strings.Builder
	b.WriteString(c.Type + " observed True at " + wc.At(c.Observed))
	switch {
	case c.Coarse:
		b.WriteString(" (coarse: its lastTransitionTime, 1 s precision; no lag known)")
	case !c.Cause.IsZero() && !c.Cause.After(c.Observed):
		v.LagMS = ms(c.Lag())
		if c.Cause.Before(c.Observed) {
			v.CauseX = px(sc.x(c.Cause))
		}
		b.WriteString(", " + waterfall.FormatSeconds(c.Lag()) + " after its cause at " + wc.At(c.Cause))
		if c.CauseEvent != "" {
			b.WriteString(" (" + c.CauseEvent + ")")
		}
	}
	if c.ReadinessGate {
		b.WriteString("\na readiness gate")
	}
	v.Title = b.String()
	return v
}
