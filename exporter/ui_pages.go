package exporter

// The pages of the UI, written by Go code, one function per page or part
// of a page, each in the order of its markup. They were html/template
// templates, which are kept in testdata/ui for ui_template_test.go to
// render every page both ways and require the same bytes (see htmlWriter
// for why they are code now). Where the templates had {{with .X}} or
// {{if .X}}, the code tests X for "", an empty slice, a nil pointer or
// false. Every value is escaped by htmlWriter, numbers included.

// writeHead writes the document's head, with all its styles, and opens
// its body.
func writeHead(w *htmlWriter, title string) {
	w.raw(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>`)
	w.text(title)
	w.raw(" · readyline</title>\n<style>\n")
	// Between the two, the template had the CSS comment "/* the chart */",
	// which html/template writes as one space.
	w.raw(styleOfPages + " \n" + styleOfChart)
	w.raw("</style>\n</head>\n<body>\n")
}

// writeFoot closes the body and the document.
func writeFoot(w *htmlWriter) {
	w.raw("</body>\n</html>\n")
}

// writePodPage writes the page of a pod start (RenderWaterfallHTML): the
// links, the heading with its outcome, the reason, the header's facts, what
// readyline could not see, the chart, the insights, the critical path and
// the legend.
func writePodPage(w *htmlWriter, v *podView) {
	writeHead(w, v.Title)
	w.raw("<nav>")
	if v.Back != "" {
		w.raw(`<a href="`)
		w.url(v.Back)
		w.raw(`">← all pod starts</a>`)
	}
	if v.API != "" {
		w.raw(`<a href="`)
		w.url(v.API)
		w.raw(`">timeline JSON</a>`)
	}
	w.raw("</nav>\n")

	w.raw(`<h1><span class="pod"`)
	w.optAttr("title", v.Pod.Full)
	w.raw(">")
	w.text(v.Pod.Text)
	w.raw(`</span><span class="outcome `)
	w.text(v.Result)
	w.raw(`">`)
	w.text(v.Outcome)
	w.raw("</span></h1>\n")

	if v.Reason != "" {
		w.raw(`<p class="reason"><strong>reason:</strong> `)
		w.text(v.Reason)
		w.raw("</p>\n")
	}
	if v.Waiting != "" {
		w.raw(`<p class="reason waiting"><strong>waiting:</strong> `)
		w.text(v.Waiting)
		w.raw("</p>\n")
	}

	w.raw(`<p class="meta">`)
	for _, m := range v.Meta {
		w.raw("<span>")
		w.text(m)
		w.raw("</span>")
	}
	if v.Trace != "" {
		w.raw(`<span>trace <span class="mono">`)
		w.text(v.Trace)
		w.raw("</span></span>")
	}
	w.raw("</p>\n")

	if len(v.Notes) > 0 {
		w.raw(`<section class="unseen">
<h2>What readyline could not see, or saw less exactly</h2>
<ul>`)
		for _, n := range v.Notes {
			w.raw("\n<li>")
			if n.Topic != "" {
				w.raw(`<span class="topic">`)
				w.text(n.Topic)
				w.raw(":</span> ")
			}
			w.text(n.Text)
			w.raw("</li>")
		}
		w.raw("\n</ul>\n</section>\n")
	}

	writeChart(w, &v.Chart)

	if len(v.Breakdown) > 0 {
		w.raw("<h2>Where the time went</h2>\n" + `<table class="breakdown">`)
		for _, b := range v.Breakdown {
			w.raw("\n<tr")
			w.attr("data-kind", b.Kind)
			w.raw("><td>")
			w.text(b.Name)
			w.raw(`</td><td class="num">`)
			w.text(b.Took)
			w.raw(`</td><td class="num">`)
			w.text(b.Percent)
			w.raw("</td><td>")
			w.text(b.What)
			w.raw("</td></tr>")
		}
		w.raw("\n</table>\n")
	}

	if len(v.Insights) > 0 {
		w.raw("<h2>Insights</h2>\n" + `<ul class="insights">`)
		for _, in := range v.Insights {
			w.raw("\n<li")
			w.attr("data-kind", string(in.Kind))
			w.raw(">")
			w.text(in.Message)
			w.raw("</li>")
		}
		w.raw("\n</ul>\n")
	}

	if len(v.Critical) > 0 {
		w.raw("<h2>Critical path</h2>\n" + `<ol class="critical-path">`)
		for _, s := range v.Critical {
			w.raw("\n<li")
			w.attr("data-name", s.Name)
			w.attr("data-duration-ms", s.DurationMS)
			if s.OnChart {
				w.raw(` class="on-chart"`)
			}
			w.raw(">")
			w.text(s.Name)
			w.raw(` <span class="took">`)
			w.text(s.Took)
			w.raw("</span></li>")
		}
		w.raw("\n</ol>\n")
	}

	writeLegend(w, v.Legend)
	w.raw("\n")
	writeFoot(w)
	w.raw("\n")
}

// writeChart writes the waterfall's SVG: the hatching patterns, the
// rows' bands, the time axis and its ticks, the blind areas, the
// conditions' guides, then the rows.
func writeChart(w *htmlWriter, c *svgChart) {
	w.raw(`<div class="chart">` + "\n" + `<svg xmlns="http://www.w3.org/2000/svg" class="waterfall"`)
	w.intAttr("width", c.Width)
	w.intAttr("height", c.Height)
	w.raw(` viewBox="0 0 `)
	w.int(c.Width)
	w.raw(" ")
	w.int(c.Height)
	w.raw(`" role="img" aria-label="waterfall of the pod start">` + "\n")
	w.raw(chartDefs)

	w.raw(`<g class="bands">`)
	for i := range c.Rows {
		if r := &c.Rows[i]; r.Band {
			w.raw(`<rect class="band" x="0"`)
			w.intAttr("y", r.Y)
			w.intAttr("width", c.Width)
			w.intAttr("height", r.Height)
			w.raw("/>")
		}
	}
	w.raw("</g>\n")

	w.raw(`<g class="ticks">` + "\n" + `<text class="num"`)
	w.intAttr("x", c.StartRight)
	w.raw(` y="18" text-anchor="end">start</text>` + "\n" + `<text class="num"`)
	w.intAttr("x", c.TookRight)
	w.raw(` y="18" text-anchor="end">took</text>` + "\n")
	for _, t := range c.Ticks {
		w.raw(`<g class="tick"><line`)
		w.attr("x1", t.X)
		w.attr("x2", t.X)
		w.raw(` y1="24"`)
		w.intAttr("y2", c.GridBottom)
		w.raw("/><text")
		w.attr("x", t.X)
		w.raw(` y="18" text-anchor="middle">`)
		w.text(t.Label)
		w.raw("</text></g>\n")
	}
	w.raw(`<line class="axis"`)
	w.intAttr("x1", c.BarLeft)
	w.intAttr("x2", c.BarRight)
	w.raw(` y1="24.5" y2="24.5"/>` + "\n</g>\n")

	w.raw(`<g class="blind-areas">`)
	for _, b := range c.Blind {
		w.raw(`<rect class="blind"`)
		w.optAttr("data-source", b.Source)
		w.attr("x", b.X)
		w.raw(` y="25"`)
		w.attr("width", b.W)
		w.intAttr("height", c.GridBottom-25)
		w.raw("><title>")
		w.text(b.Title)
		w.raw("</title></rect>")
	}
	w.raw("</g>\n")

	w.raw(`<g class="guides">`)
	for _, g := range c.Guides {
		w.raw(`<line class="guide"`)
		w.attr("data-type", g.Type)
		w.attr("x1", g.X)
		w.attr("x2", g.X)
		w.raw(` y1="25"`)
		w.intAttr("y2", c.GridBottom)
		w.raw("/>")
	}
	w.raw("</g>\n")

	for i := range c.Rows {
		writeRow(w, &c.Rows[i])
		w.raw("\n")
	}
	w.raw("</svg>\n</div>\n")
}

// writeRow writes a row of the chart: a group with the row's data-
// attributes, then its critical-path mark, its label, start and took
// columns, its note or its waiting reason's message, its bar, its parts
// on the critical path, its probe attempts and its condition's marker.
func writeRow(w *htmlWriter, r *svgRow) {
	w.raw("<g")
	w.attr("class", r.Class)
	w.optAttr("data-name", r.Name)
	w.optAttr("data-container", r.Container)
	w.optAttr("data-start-ms", r.StartMS)
	w.optAttr("data-duration-ms", r.DurationMS)
	w.optAttr("data-open", r.Open)
	if c := r.Cond; c != nil {
		w.attr("data-type", c.Type)
		w.attr("data-observed-ms", c.ObservedMS)
		w.optAttr("data-lag-ms", c.LagMS)
		if c.Coarse {
			w.raw(` data-coarse="true"`)
		}
	}
	w.raw(` transform="translate(0 `)
	w.int(r.Y)
	w.raw(`)">`)

	if len(r.Critical) > 0 {
		w.raw(`<rect class="critical-row" x="0" y="3" width="3"`)
		w.intAttr("height", r.Height-6)
		w.raw("/>")
	}
	// Each text of the row, when it has one: its <text> opening is
	// `<text class="..." x=".." y=".."` (no class for the message).
	text := func(open string, x int, anchorEnd bool, s, full string) {
		if s == "" {
			return
		}
		w.raw(open)
		w.intAttr("x", x)
		w.intAttr("y", r.TextY)
		if anchorEnd {
			w.raw(` text-anchor="end"`)
		}
		w.raw(">")
		w.text(s)
		w.titleIf(full)
		w.raw("</text>")
	}
	text(`<text class="label"`, r.LabelX, false, r.Label.Text, r.Label.Full)
	text(`<text class="num start"`, svgStartRight, true, r.Start, "")
	text(`<text class="num took"`, svgTookRight, true, r.Took, "")
	text(`<text class="note"`, svgBarLeft, false, r.Note, "")
	text("<text", svgBarLeft, false, r.Message.Text, r.Message.Full)
	if b := r.Bar; b != nil {
		w.raw("<rect")
		w.attr("class", b.Class)
		w.attr("x", b.X)
		w.attr("y", b.Y)
		w.attr("width", b.W)
		w.attr("height", b.H)
		w.raw(` rx="2">`)
		w.title(b.Title)
		w.raw("</rect>")
	}
	for _, c := range r.Critical {
		w.raw(`<rect class="critical-step"`)
		w.attr("x", c.X)
		w.attr("y", c.Y)
		w.attr("width", c.W)
		w.raw(` height="2.5">`)
		w.title(c.Title)
		w.raw("</rect>")
	}
	for _, m := range r.Marks {
		w.raw(`<g class="attempt `)
		w.text(m.Class)
		w.raw(`"`)
		w.attr("data-at-ms", m.AtMS)
		w.raw(` transform="translate(`)
		w.text(m.X)
		w.raw(" ")
		w.text(m.Y)
		w.raw(`)">`)
		w.title(m.Title)
		switch m.Shape {
		case "circle":
			w.raw(`<circle r="5"/>`)
		case "cross":
			w.raw(`<circle r="6" fill="transparent"/><path d="M-4 -4L4 4M-4 4L4 -4"/>`)
		case "diamond":
			w.raw(`<path d="M0 -6L6 0L0 6L-6 0Z"/>`)
		default:
			w.raw(`<circle r="3.5"/>`)
		}
		w.raw("</g>")
	}
	if c := r.Cond; c != nil {
		if c.CauseX != "" {
			w.raw(`<line class="lag"`)
			w.attr("x1", c.CauseX)
			w.attr("x2", c.X)
			w.attr("y1", c.Y)
			w.attr("y2", c.Y)
			w.raw(`/><circle class="cause"`)
			w.attr("cx", c.CauseX)
			w.attr("cy", c.Y)
			w.raw(` r="2.5"/>`)
		}
		w.raw(`<path class="diamond" transform="translate(`)
		w.text(c.X)
		w.raw(" ")
		w.text(c.Y)
		w.raw(`)" d="M0 -6L6 0L0 6L-6 0Z">`)
		w.title(c.Title)
		w.raw("</path>")
	}
	w.raw("</g>")
}

// writeLegend writes the legend of the chart: the styles and marks every
// chart may have, and those of the optional ones this chart has.
func writeLegend(w *htmlWriter, l legendView) {
	w.raw(`<ul class="legend">` + "\n" + legendStyles)
	entry := func(shown bool, li string) {
		if shown {
			w.raw("\n" + li)
		}
	}
	entry(l.Pulls, legendPulls)
	entry(l.Hooks, legendHooks)
	entry(l.Inferred, legendInferred)
	entry(l.BackOff, legendBackOff)
	entry(l.Waiting, legendWaiting)
	w.raw("\n" + legendMarks)
	entry(l.Coarse, legendCoarse)
	entry(l.Blind, legendBlind)
	entry(l.Critical, legendCritical)
	w.raw("\n</ul>")
}

// writeListPage writes the list of the stored pod starts, newest first, or
// says there is none yet.
func writeListPage(w *htmlWriter, v *listView) {
	writeHead(w, "pod starts")
	w.raw("<h1>Pod starts</h1>\n" + `<p class="meta">the last pod starts this daemon keeps (at most `)
	w.int(v.Limit)
	w.raw("), newest first; each links to its waterfall</p>\n")
	if len(v.Starts) > 0 {
		w.raw(`<table class="starts">
<thead><tr><th>pod</th><th>outcome</th><th>took</th><th>created</th><th>reason</th></tr></thead>
<tbody>`)
		for i := range v.Starts {
			writeStart(w, &v.Starts[i])
		}
		w.raw("\n</tbody>\n</table>\n")
	} else {
		w.raw(`<p class="empty">No pod start yet: a pod start is listed here once it is Ready, has failed, was deleted or reached the start timeout.</p>` + "\n")
	}
	writeFoot(w)
	w.raw("\n")
}

// writeStart writes a row of the list's table.
func writeStart(w *htmlWriter, s *startView) {
	w.raw("\n" + `<tr class="start"`)
	w.attr("data-uid", s.UID)
	w.attr("data-outcome", string(s.Outcome))
	w.raw(">\n" + `<td class="mono"><a href="`)
	w.url(s.Href)
	w.raw(`"`)
	w.optAttr("title", s.Pod.Full)
	w.raw(">")
	w.text(s.Pod.Text)
	w.raw("</a></td>\n" + `<td><span class="badge `)
	w.text(s.Result)
	w.raw(`">`)
	w.text(string(s.Outcome))
	w.raw("</span></td>\n" + `<td class="num mono">`)
	w.text(s.Took)
	w.raw("</td>\n" + `<td class="mono created">`)
	w.text(s.Created)
	w.raw("</td>\n" + `<td class="reason-cell"`)
	w.optAttr("title", s.Reason.Full)
	w.raw(">")
	w.text(s.Reason.Text)
	w.raw("</td>\n</tr>")
}

// writeNotFoundPage writes the 404 of a pod start the store does not have,
// and why it may not have it.
func writeNotFoundPage(w *htmlWriter, v *notFoundView) {
	writeHead(w, "not found")
	w.raw(`<nav><a href="`)
	w.url(v.Back)
	w.raw(`">← all pod starts</a></nav>` + "\n" + `<h1>No pod start of <span class="pod"`)
	w.optAttr("title", v.What.Full)
	w.raw(">")
	w.text(v.What.Text)
	w.raw("</span> here</h1>\n" + `<p class="notfound">`)
	w.text(v.Why)
	w.raw("</p>\n")
	writeFoot(w)
	w.raw("\n")
}

// legendStyles are the legend's entries always shown: the styles of the
// bars every chart may have.
const legendStyles = `<li><svg width="22" height="12" aria-hidden="true"><rect y="0" width="22" height="12" rx="2" fill="#3b5bdb"/></svg>phase</li>
<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#7048e8"/></svg>init container</li>
<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#0c8599"/></svg>sidecar</li>
<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#2b8a3e"/></svg>container</li>
<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#adb5bd"/></svg>process</li>
<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#adb5bd" fill-opacity=".55"/></svg>still running, or end not seen</li>
<li><svg width="22" height="12" aria-hidden="true"><rect y="2" width="22" height="8" rx="2" fill="#ced4da"/></svg>CRI call</li>`

// legendPulls is the legend's entry of the image pulls' bars.
const legendPulls = `<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#c2255c"/></svg>image pull</li>`

// legendHooks is the legend's entry of the postStart hooks' bars.
const legendHooks = `<li><svg width="22" height="12" aria-hidden="true"><rect y="1" width="22" height="10" rx="2" fill="#f76707"/></svg>postStart hook</li>`

// legendInferred is the legend's entry of a bar inferred, not seen.
const legendInferred = `<li><svg width="22" height="12" aria-hidden="true"><defs><pattern id="lg-inferred" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff4e6"/><rect width="2" height="5" fill="#ffa94d"/></pattern></defs><rect y="1" width="22" height="10" rx="2" fill="url(#lg-inferred)" stroke="#f76707"/></svg>inferred, not seen</li>`

// legendBackOff is the legend's entry of back-offs and waits.
const legendBackOff = `<li><svg width="22" height="12" aria-hidden="true"><defs><pattern id="lg-wait" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#f1f3f5"/><rect width="2" height="5" fill="#adb5bd"/></pattern></defs><rect y="2" width="22" height="8" rx="2" fill="url(#lg-wait)" stroke="#868e96" stroke-width=".8"/></svg>back-off, wait</li>`

// legendWaiting is the legend's entry of the API's waiting reasons.
const legendWaiting = `<li><svg width="22" height="12" aria-hidden="true"><defs><pattern id="lg-waiting" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff3bf"/><rect width="2" height="5" fill="#fab005"/></pattern></defs><rect y="1" width="22" height="10" rx="2" fill="url(#lg-waiting)" stroke="#f08c00" stroke-width=".8"/></svg>waiting (the API's reason)</li>`

// legendMarks are the legend's entries of the probes' and the conditions'
// marks, always shown.
const legendMarks = `<li class="probe-observed"><svg width="14" height="14" aria-hidden="true"><circle cx="7" cy="7" r="5" fill="#2b8a3e"/></svg>probe succeeded (observed)</li>
<li><svg width="14" height="14" aria-hidden="true"><path d="M3 3L11 11M3 11L11 3" stroke="#e03131" stroke-width="2.2" stroke-linecap="round"/></svg>probe failed (observed)</li>
<li><svg width="14" height="14" aria-hidden="true"><circle cx="7" cy="7" r="3.5" fill="#868e96"/></svg>probe seen, result unknown</li>
<li class="probe-inferred"><svg width="14" height="14" aria-hidden="true"><path d="M7 1L13 7L7 13L1 7Z" fill="#fff" stroke="#1c7ed6" stroke-width="1.8"/></svg>probe inferred from the API's status</li>
<li><svg width="34" height="14" aria-hidden="true"><line x1="4" x2="26" y1="7" y2="7" stroke="#f08c00" stroke-width="2"/><circle cx="4" cy="7" r="2.5" fill="#f08c00"/><path d="M27 1L33 7L27 13L21 7Z" fill="#212529"/></svg>condition observed True, after its cause (the lag)</li>`

// legendCoarse is the legend's entry of a coarse condition.
const legendCoarse = `<li><svg width="14" height="14" aria-hidden="true"><path d="M7 1L13 7L7 13L1 7Z" fill="#fff" stroke="#212529" stroke-width="1.5"/></svg>condition coarse (no lag known)</li>`

// legendBlind is the legend's entry of the time readyline was blind.
const legendBlind = `<li><svg width="22" height="12" aria-hidden="true"><defs><pattern id="lg-blind" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="6" height="6" fill="#fff5f5"/><rect width="1.5" height="6" fill="#ffa8a8"/></pattern></defs><rect width="22" height="12" fill="url(#lg-blind)"/></svg>readyline blind (not watching yet, or a source down)</li>`

// legendCritical is the legend's entry of the critical path.
const legendCritical = `<li><svg width="22" height="12" aria-hidden="true"><rect y="0" width="22" height="7" rx="1" fill="#3b5bdb"/><rect y="8.5" width="22" height="2.5" fill="#e03131"/></svg>critical path</li>`

// chartDefs are the patterns of the chart's hatched bars and areas.
const chartDefs = `<defs>
<pattern id="wait" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#f1f3f5"/><rect width="2" height="5" fill="#adb5bd"/></pattern>
<pattern id="waiting" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff3bf"/><rect width="2" height="5" fill="#fab005"/></pattern>
<pattern id="blind" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="8" height="8" fill="#fff5f5" fill-opacity=".7"/><rect width="1.5" height="8" fill="#ffa8a8" fill-opacity=".6"/></pattern>
<pattern id="inferred" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#fff4e6"/><rect width="2" height="5" fill="#ffa94d"/></pattern>
</defs>
`

// styleOfPages is the CSS of the pages but their chart's.
const styleOfPages = `:root { color-scheme: light; --ink: #212529; --muted: #6c757d; --line: #dee2e6; --band: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0; padding: 20px 28px 40px; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: var(--ink); background: #fff; }
a { color: #1c62c9; text-decoration: none; }
a:hover { text-decoration: underline; }
nav { font-size: 13px; margin-bottom: 10px; color: var(--muted); }
nav a { margin-right: 14px; }
h1 { font-size: 20px; margin: 0 0 6px; font-weight: 600; overflow-wrap: anywhere; }
h1 .pod { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-weight: 600; }
h2 { font-size: 15px; margin: 22px 0 6px; }
.outcome { display: inline-block; margin-left: 10px; padding: 1px 10px; border-radius: 11px; font-size: 15px; font-weight: 600; vertical-align: 2px; }
.outcome.ready { background: #d3f9d8; color: #1b6e2d; }
.outcome.failed, .outcome.timeout { background: #ffe3e3; color: #a61e1e; }
.outcome.partial, .outcome.starting { background: #fff3bf; color: #8a5a00; }
.outcome.deleted { background: #e9ecef; color: #495057; }
.meta { color: var(--muted); font-size: 13px; margin: 2px 0; }
.meta span + span::before { content: "·"; margin: 0 8px; color: #adb5bd; }
.mono, code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
.reason { margin: 8px 0; padding: 6px 10px; border-left: 3px solid #e03131; background: #fff5f5; overflow-wrap: anywhere; }
.reason.waiting { border-left-color: #f59f00; background: #fff9db; }
.unseen { margin: 12px 0; padding: 8px 12px; border: 1px solid #ffd43b; background: #fff9db; border-radius: 4px; max-width: 1320px; }
.unseen h2 { margin: 0 0 4px; font-size: 14px; }
.unseen ul { margin: 0; padding-left: 20px; }
.unseen .topic { font-weight: 600; }
.chart { margin: 14px 0 6px; overflow-x: auto; }
.chart svg { display: block; max-width: 100%; height: auto; }
ul.insights { margin: 0; padding-left: 20px; max-width: 1320px; }
table.breakdown { border-collapse: collapse; font-size: 13.5px; }
table.breakdown td { padding: 2px 14px 2px 0; }
table.breakdown td.num { text-align: right; font-variant-numeric: tabular-nums; }
ol.critical-path { margin: 0; padding: 0; list-style: none; display: flex; flex-wrap: wrap; gap: 4px 0; max-width: 1320px; }
ol.critical-path li { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12.5px; }
ol.critical-path li + li::before { content: "→"; margin: 0 8px; color: #adb5bd; }
ol.critical-path .took { color: var(--muted); }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 16px 0 0; padding: 0; list-style: none; font-size: 12.5px; color: #495057; max-width: 1320px; }
.legend li { display: flex; align-items: center; gap: 6px; }
.legend svg { flex: none; }
table.starts { border-collapse: collapse; margin-top: 10px; font-size: 13.5px; }
table.starts th { text-align: left; font-weight: 600; color: var(--muted); border-bottom: 2px solid var(--line); padding: 5px 14px 5px 0; }
table.starts td { border-bottom: 1px solid var(--line); padding: 5px 14px 5px 0; vertical-align: top; }
table.starts td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.starts td.created { white-space: nowrap; }
table.starts td.reason-cell { color: var(--muted); max-width: 480px; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 0 8px; border-radius: 9px; font-size: 12px; font-weight: 600; }
.badge.ready { background: #d3f9d8; color: #1b6e2d; }
.badge.failed, .badge.timeout { background: #ffe3e3; color: #a61e1e; }
.badge.partial, .badge.starting { background: #fff3bf; color: #8a5a00; }
.badge.deleted { background: #e9ecef; color: #495057; }
.empty { color: var(--muted); }
`

// styleOfChart is the CSS of the chart's SVG.
const styleOfChart = `svg text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 12px; fill: var(--ink); }
svg .num { fill: #495057; font-size: 11.5px; }
svg .tick text { fill: var(--muted); font-size: 11px; }
svg .tick line { stroke: #e9ecef; }
svg .axis { stroke: var(--line); }
svg .band { fill: var(--band); }
svg .blind { fill: url(#blind); }
svg .guide { stroke: #adb5bd; stroke-dasharray: 2 3; stroke-width: 1; }
svg .row.section text.label { font-weight: 700; fill: #495057; }
svg .row.phase text.label { font-weight: 700; }
svg .row.note text.note, svg .message text { fill: var(--muted); font-style: italic; }
svg .row.open text.took { fill: var(--muted); font-style: italic; }
svg .bar { fill: #868e96; }
svg .phase .bar { fill: #3b5bdb; }
svg .sandbox .bar { fill: #e8590c; fill-opacity: .55; }
svg .cni .bar { fill: #f59f00; }
svg .container.init .bar { fill: #7048e8; }
svg .container.sidecar .bar { fill: #0c8599; }
svg .container.main .bar { fill: #2b8a3e; }
svg .process .bar { fill: #adb5bd; }
svg .call .bar { fill: #ced4da; }
svg .pull .bar { fill: #c2255c; }
svg .hook .bar { fill: #f76707; }
svg .hook .bar.inferred { fill: url(#inferred); stroke: #f76707; stroke-width: 1; }
svg .bar.wait { fill: url(#wait); stroke: #868e96; stroke-width: .8; }
svg .bar.waiting { fill: url(#waiting); stroke: #f08c00; stroke-width: .8; }
svg .bar.instant { fill: var(--ink); }
svg .bar.span { fill: #ced4da; }
svg .row.open .bar { fill-opacity: .55; }
svg .row.failed text.label { fill: #c92a2a; }
svg .row.failed .bar { stroke: #c92a2a; stroke-width: 1.2; }
svg .critical-step { fill: #e03131; }
svg .critical-row { fill: #e03131; }
svg .attempt.ok circle { fill: #2b8a3e; }
svg .attempt.failed path { stroke: #e03131; stroke-width: 2.2; stroke-linecap: round; }
svg .attempt.unknown circle { fill: #868e96; }
svg .attempt.inferred path { fill: #fff; stroke: #1c7ed6; stroke-width: 1.8; }
svg .condition .diamond { fill: var(--ink); }
svg .condition.coarse .diamond { fill: #fff; stroke: var(--ink); stroke-width: 1.5; }
svg .condition .lag { stroke: #f08c00; stroke-width: 2; }
svg .condition .cause { fill: #f08c00; }
`
