package exporter

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/readyline/readyline/correlator"
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
	return shortText{Text: cutRunes(s, max(n, 2)), Full: s}
}

// noteView is a chartNote.
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
	wc := newWaterfallChart(tl)
	v := podView{
		Title:    tl.Pod.String() + " — " + wc.outcome(),
		Back:     back,
		API:      api,
		Pod:      cut(tl.Pod.String(), maxHeadingRunes),
		Outcome:  wc.outcome(),
		Result:   string(tl.Outcome),
		Reason:   tl.Reason,
		Waiting:  tl.Waiting,
		Meta:     wc.meta(),
		Insights: tl.Insights,
	}
	for _, r := range breakdownRows(tl) {
		v.Breakdown = append(v.Breakdown, breakdownView{Kind: r.kind, Name: r.name, Took: r.took, Percent: r.percent, What: r.what})
	}
	if tl.Partial {
		v.Result = "partial"
	}
	for _, n := range wc.notes() {
		v.Notes = append(v.Notes, noteView{Topic: n.topic, Text: n.text})
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
		v.Critical = append(v.Critical, stepView{Name: s.Name, Took: fmtSeconds(d), DurationMS: ms(d), OnChart: onChart[s.Name]})
	}
	v.Legend = legendView{BackOff: hasBackOff(tl) || hasPullWaits(tl), Waiting: hasWaiting(tl), Critical: len(onChart) > 0,
		Blind: len(v.Chart.Blind) > 0}
	for _, r := range wc.rows {
		switch {
		case r.style == styleInferred:
			v.Legend.Inferred = true
		case r.kind == rowPull:
			v.Legend.Pulls = true
		case r.kind == rowCondition && r.cond.Coarse:
			v.Legend.Coarse = true
		}
		if r.kind == rowHook {
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
type svgScale struct{ wc *waterfallChart }

func (s svgScale) x(t time.Time) float64 {
	return svgBarLeft + s.wc.frac(t)*(svgBarRight-svgBarLeft)
}

func newSVGChart(wc *waterfallChart) svgChart {
	sc := svgScale{wc}
	c := svgChart{Width: svgWidth, BarLeft: svgBarLeft, BarRight: svgBarRight, StartRight: svgStartRight, TookRight: svgTookRight}
	step := tickStep(wc.total, (svgBarRight-svgBarLeft)/svgTickSpacing)
	for i := range min(int64(wc.total/step), 1000) + 1 {
		t := time.Duration(i) * step
		c.Ticks = append(c.Ticks, svgTick{X: px(sc.x(wc.start.Add(t))), Label: fmtTick(t, step)})
	}
	y := svgAxisHeight
	for i := range wc.rows {
		r := &wc.rows[i]
		row := newSVGRow(sc, r, y, i%2 == 1)
		c.Rows = append(c.Rows, row)
		y += row.Height
		if r.kind == rowWaiting && strings.TrimSpace(r.message) != "" {
			c.Rows = append(c.Rows, svgRow{Class: "message", Y: y, TextY: 12, Height: svgMsgHeight, Band: i%2 == 1,
				LabelX: svgBarLeft, Message: cut(strings.Join(strings.Fields(r.message), " "), svgMessageRunes)})
			y += svgMsgHeight
		}
	}
	c.GridBottom = y
	c.Blind = blindAreas(sc)
	c.Height = y + svgBottom
	for _, r := range wc.rows {
		if r.kind == rowCondition {
			c.Guides = append(c.Guides, svgGuide{X: px(sc.x(r.cond.Observed)), Type: r.cond.Type})
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
	if tl := wc.tl; !tl.ObservedSince.IsZero() {
		area(wc.start, tl.ObservedSince, "", "readyline saw this pod only from "+wc.at(tl.ObservedSince)+
			": earlier kernel and CRI facts are missing")
	}
	for _, g := range wc.tl.Gaps {
		for _, bw := range g.Windows {
			to, until := bw.To, wc.at(bw.To)
			if to.IsZero() {
				to, until = wc.end, "the end (still blind)"
			}
			area(bw.From, to, g.Source, "blind: "+g.Source+" "+bw.Reason+" "+wc.at(bw.From)+" → "+until+"\n"+g.Lacks())
		}
	}
	return out
}

// barHeight makes the rows' nesting visible: phases thickest, calls thinnest.
func barHeight(k rowKind) int {
	switch k {
	case rowPhase, rowSandbox:
		return 14
	case rowContainer:
		return 12
	case rowCall, rowCNI, rowBackOff, rowPullWait:
		return 8
	}
	return 10
}

func newSVGRow(sc svgScale, r *wrow, y int, band bool) svgRow {
	wc := sc.wc
	row := svgRow{
		Class: "row " + string(r.kind), Name: r.name, Container: r.container,
		Y: y, TextY: 15, Height: svgRowHeight, Band: band,
		LabelX: svgLabelX + svgIndent*r.depth,
		Start:  wc.offset(r.start), Took: r.took, Note: r.note,
	}
	if r.kind == rowContainer || (r.kind == rowNote && r.container != "" && r.name == r.container) {
		row.Class += " " + containerClass(r.container)
	}
	if r.failed {
		row.Class += " failed"
	}
	if r.cond != nil && r.cond.Coarse {
		row.Class += " coarse"
	}
	if r.open {
		row.Class += " open"
		row.Open = r.took
	}
	room := int((svgLabelRight - float64(row.LabelX)) / svgCharWidth)
	row.Label = cut(r.label, room)
	if !r.start.IsZero() && r.kind != rowSection && r.kind != rowNote {
		row.StartMS = ms(r.start.Sub(wc.start))
		if !r.end.IsZero() {
			row.DurationMS = ms(r.end.Sub(r.start))
		}
	}
	mid := float64(svgRowHeight) / 2
	label := r.label
	if r.container != "" && r.name != r.container {
		label = r.container + " " + label
	}
	switch {
	case r.kind == rowSection || r.kind == rowNote || r.note != "":
	case r.kind == rowCondition:
		row.Cond = newSVGCondition(sc, r.cond, mid)
	case r.kind == rowProbe:
		for _, m := range r.probes {
			mk := svgMark{X: px(sc.x(m.at)), Y: px(mid), Class: string(m.kind) + " observed", Shape: "circle",
				AtMS: ms(m.at.Sub(wc.start)), Title: probeTitle(wc, label, m)}
			switch m.kind {
			case markFailed:
				mk.Shape = "cross"
			case markOther:
				mk.Shape = "dot"
			case markInferred:
				mk.Class, mk.Shape = string(m.kind), "diamond"
			}
			row.Marks = append(row.Marks, mk)
		}
		// The span from the first attempt to the first success, faint.
		if r.end.After(r.start) {
			x0, x1 := sc.x(r.start), sc.x(r.end)
			row.Bar = &svgBar{X: px(x0), Y: px(mid - 1), W: px(x1 - x0), H: "2", Class: "bar span",
				Title: label + ": " + wc.at(r.start) + " → " + wc.at(r.end) + ", " + r.took}
		}
	default:
		h := float64(barHeight(r.kind))
		x0, x1 := sc.x(r.start), sc.x(r.end)
		cls := "bar " + string(r.style)
		if r.instant {
			x1 = x0
			cls = "bar instant"
		}
		w := max(x1-x0, svgMinBar)
		if x0+w > svgBarRight {
			x0 = svgBarRight - w
		}
		row.Bar = &svgBar{X: px(x0), Y: px(mid - h/2), W: px(w), H: px(h), Class: cls, Title: barTitle(wc, label, r)}
		for _, s := range wc.tl.CriticalPath {
			if s.Name != r.name || s.End.Before(r.start) || s.Start.After(r.end) {
				continue
			}
			// The part of the step this row shows: a step may span
			// several attempts of a container.
			cx0, cx1 := max(sc.x(s.Start), x0), min(sc.x(s.End), x0+w)
			cw := max(cx1-cx0, svgMinBar)
			row.Critical = append(row.Critical, svgCritical{X: px(cx0), Y: px(mid + h/2 + 1.5), W: px(cw),
				Title: "critical path: " + s.Name + " " + wc.at(s.Start) + " → " + wc.at(s.End) + ", " + fmtSeconds(s.End.Sub(s.Start))})
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

func barTitle(wc *waterfallChart, label string, r *wrow) string {
	var b strings.Builder
	b.WriteString(label)
	b.WriteString("\n")
	switch {
	case r.instant:
		b.WriteString("at " + wc.at(r.start))
	case r.took == "running":
		b.WriteString("from " + wc.at(r.start) + ", still running at " + wc.at(r.end))
	case r.open:
		b.WriteString("from " + wc.at(r.start) + ", its end not seen")
	default:
		b.WriteString(wc.at(r.start) + " → " + wc.at(r.end))
		if r.took != "" {
			b.WriteString(", took " + r.took)
		}
	}
	if r.detail != "" {
		b.WriteString("\n" + r.detail)
	}
	if r.style == styleInferred {
		b.WriteString("\ninferred: not seen, its bounds come from the container's start and the next container's creation")
	}
	return b.String()
}

func probeTitle(wc *waterfallChart, label string, m probeMark) string {
	p := m.attempt
	var b strings.Builder
	b.WriteString(label)
	if p.Handler != "" {
		b.WriteString(" (" + p.Handler + ")")
	}
	b.WriteString("\n")
	if p.Inferred {
		b.WriteString("inferred from the API's status flip: succeeded by " + wc.at(m.at) + ", not seen")
		return b.String()
	}
	b.WriteString(string(p.Result) + " at " + wc.at(m.at))
	if m.end.After(m.at) {
		b.WriteString(", took " + fmtSeconds(m.end.Sub(m.at)))
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
	v := &svgCondition{Type: c.Type, X: px(sc.x(c.Observed)), Y: px(mid), ObservedMS: ms(c.Observed.Sub(wc.start)), Coarse: c.Coarse}
	var b strings.Builder
	b.WriteString(c.Type + " observed True at " + wc.at(c.Observed))
	switch {
	case c.Coarse:
		b.WriteString(" (coarse: its lastTransitionTime, 1 s precision; no lag known)")
	case !c.Cause.IsZero() && !c.Cause.After(c.Observed):
		v.LagMS = ms(c.Lag())
		if c.Cause.Before(c.Observed) {
			v.CauseX = px(sc.x(c.Cause))
		}
		b.WriteString(", " + fmtSeconds(c.Lag()) + " after its cause at " + wc.at(c.Cause))
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
