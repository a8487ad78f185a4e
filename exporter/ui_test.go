package exporter

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

const demoRecording = "../correlator/testdata/recordings/demo-node.jsonl"

// recordedDemo replays the recording of the seed's pods on the local node
// and returns its timelines by pod name, and lifecycle-demo's.
func recordedDemo(t *testing.T) (map[string]*correlator.Timeline, *correlator.Timeline) {
	t.Helper()
	byName := map[string]*correlator.Timeline{}
	for _, tl := range replayRecording(t, demoRecording) {
		byName[tl.Pod.Name] = tl
	}
	lc := byName["lifecycle-demo"]
	if lc == nil || lc.Outcome != correlator.OutcomeReady {
		t.Fatalf("the recording has no ready lifecycle-demo: %+v", lc)
	}
	return byName, lc
}

// uiServer serves s's pages the way the daemon does.
func uiServer(t *testing.T, s *Store) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(ServeEveryPod(s.UIHandler(nil)))
	t.Cleanup(srv.Close)
	return srv
}

// getPage GETs u and returns the response and its parsed body.
func getPage(t *testing.T, u string) (*http.Response, *html.Node, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parsing %s: %v", u, err)
	}
	return resp, doc, string(body)
}

func findAll(n *html.Node, pred func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && pred(d) {
			out = append(out, d)
		}
	}
	return out
}

func findFirst(n *html.Node, pred func(*html.Node) bool) *html.Node {
	if all := findAll(n, pred); len(all) > 0 {
		return all[0]
	}
	return nil
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	c, _ := attr(n, "class")
	return slices.Contains(strings.Fields(c), class)
}

func tagClass(tag string, classes ...string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		if n.Data != tag {
			return false
		}
		for _, c := range classes {
			if !hasClass(n, c) {
				return false
			}
		}
		return true
	}
}

// textOf is the text inside n, its <title> tooltips left out.
func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.Type == html.ElementNode && n.Data == "title":
			return
		}
		for c := range n.ChildNodes() {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// titleOf is the text of n's own <title> child (its tooltip).
func titleOf(n *html.Node) string {
	for c := range n.ChildNodes() {
		if c.Type == html.ElementNode && c.Data == "title" {
			var b strings.Builder
			for t := range c.Descendants() {
				if t.Type == html.TextNode {
					b.WriteString(t.Data)
				}
			}
			return b.String()
		}
	}
	return ""
}

// chartRows are the rows of the page's waterfall, in order.
func chartRows(doc *html.Node) []*html.Node {
	return findAll(doc, tagClass("g", "row"))
}

// rowNamed is the first row of the chart with that data-name (and
// data-container, when container is not "").
func rowNamed(t *testing.T, doc *html.Node, name, container string) *html.Node {
	t.Helper()
	for _, r := range chartRows(doc) {
		n, _ := attr(r, "data-name")
		c, _ := attr(r, "data-container")
		if n == name && (container == "" || c == container) {
			return r
		}
	}
	t.Fatalf("no row named %q (container %q) on the page", name, container)
	return nil
}

// rowLabel is the whole label of a row: its text, or the title of a label
// cut short.
func rowLabel(r *html.Node) string {
	l := findFirst(r, tagClass("text", "label"))
	if l == nil {
		return ""
	}
	if full := titleOf(l); full != "" {
		return full
	}
	return textOf(l)
}

func msAttr(t *testing.T, n *html.Node, key string) float64 {
	t.Helper()
	v, ok := attr(n, key)
	if !ok {
		t.Fatalf("%s has no %s", describe(n), key)
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s %s=%q: %v", describe(n), key, v, err)
	}
	return f
}

func describe(n *html.Node) string {
	var b strings.Builder
	b.WriteString("<" + n.Data)
	for _, a := range n.Attr {
		b.WriteString(" " + a.Key + "=" + strconv.Quote(a.Val))
	}
	return b.String() + ">"
}

// barWidth is the width of a row's bar, failing when it has none.
func barWidth(t *testing.T, r *html.Node) float64 {
	t.Helper()
	bar := findFirst(r, tagClass("rect", "bar"))
	if bar == nil {
		t.Fatalf("row %s has no bar", describe(r))
	}
	return msAttr(t, bar, "width")
}

// TestWaterfallPageRecordedDemo renders the recorded lifecycle-demo's page
// and checks its chart against the timeline: the phases to scale, the
// containers by kind, their processes and probes (observed and inferred),
// the five conditions with their lags, the insights and the critical path.
func TestWaterfallPageRecordedDemo(t *testing.T) {
	_, tl := recordedDemo(t)
	s := NewStore(StoreLimits{})
	s.Add(tl)
	resp, doc, _ := getPage(t, uiServer(t, s).URL+"/ui/pods/readyline-demo/lifecycle-demo")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'none'") {
		t.Errorf("Content-Security-Policy %q", got)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	h1 := findFirst(doc, func(n *html.Node) bool { return n.Data == "h1" })
	if got := textOf(h1); !strings.Contains(got, "readyline-demo/lifecycle-demo") || !strings.Contains(got, "Ready in "+waterfall.FormatSeconds(tl.End.Sub(tl.Start))) {
		t.Errorf("heading %q", got)
	}

	// The phases, in order, where the timeline has them, wider when longer.
	var phases []string
	prevX := -1.0
	for _, p := range tl.Phases {
		r := rowNamed(t, doc, p.Name, "")
		phases = append(phases, p.Name)
		if !hasClass(r, "phase") {
			t.Errorf("row %s is not a phase", describe(r))
		}
		if got, want := msAttr(t, r, "data-start-ms"), float64(p.Start.Sub(tl.Start).Microseconds())/1000; got != want {
			t.Errorf("%s starts at %v ms, want %v", p.Name, got, want)
		}
		if got, want := msAttr(t, r, "data-duration-ms"), float64(p.Duration().Microseconds())/1000; got != want {
			t.Errorf("%s lasts %v ms, want %v", p.Name, got, want)
		}
		if w := barWidth(t, r); w <= 0 {
			t.Errorf("%s's bar is %v wide", p.Name, w)
		}
		bar := findFirst(r, tagClass("rect", "bar"))
		x := msAttr(t, bar, "x")
		if x < prevX {
			t.Errorf("%s's bar at x=%v, left of the phase before it (%v)", p.Name, x, prevX)
		}
		prevX = x
		if title := titleOf(bar); !strings.Contains(title, "+"+waterfall.FormatSeconds(p.Start.Sub(tl.Start))) || !strings.Contains(title, "took "+waterfall.FormatSeconds(p.Duration())) {
			t.Errorf("%s's tooltip %q does not give its start and duration", p.Name, title)
		}
	}
	if want := []string{"pod.schedule", "pod.wait_sandbox", "pod.sandbox", "pod.init", "pod.containers"}; !slices.Equal(phases, want) {
		t.Errorf("phases %v, want %v", phases, want)
	}
	if init, ctr := barWidth(t, rowNamed(t, doc, "pod.init", "")), barWidth(t, rowNamed(t, doc, "pod.schedule", "")); init <= ctr*10 {
		t.Errorf("pod.init (11.5 s) is %v wide, pod.schedule (0 s) %v: not to scale", init, ctr)
	}

	// The containers, by kind, each with its entrypoint.
	for _, c := range []struct{ name, class, process string }{
		{"init/init-regular", "init", "process sh"},
		{"sidecar/init-sidecar", "sidecar", "process sh"},
		{"container/nginx", "main", "process httpd"},
	} {
		r := rowNamed(t, doc, c.name, "")
		if !hasClass(r, "container") || !hasClass(r, c.class) {
			t.Errorf("row %s: want classes container and %s", describe(r), c.class)
		}
		if w := barWidth(t, r); w <= 0 {
			t.Errorf("%s's bar is %v wide", c.name, w)
		}
		p := rowNamed(t, doc, c.process, c.name)
		if c.class == "init" {
			if label := rowLabel(p); label != c.process+" exit 0" {
				t.Errorf("init-regular's process row %q, want its exit code", label)
			}
		} else if open, _ := attr(p, "data-open"); open != "running" {
			t.Errorf("%s's process: data-open %q, want running", c.name, open)
		}
	}

	// Probes: the sidecar's startupProbe was seen (exec), nginx's httpGet
	// probes are inferred from the status flips; the legend tells them apart.
	for _, p := range []struct{ container, probe, class string }{
		{"sidecar/init-sidecar", "startupProbe", "observed"},
		{"container/nginx", "startupProbe", "inferred"},
		{"container/nginx", "readinessProbe", "inferred"},
	} {
		r := rowNamed(t, doc, p.probe, p.container)
		marks := findAll(r, tagClass("g", "attempt"))
		if len(marks) == 0 {
			t.Errorf("%s %s: no attempt marks", p.container, p.probe)
		}
		for _, m := range marks {
			if !hasClass(m, p.class) || titleOf(m) == "" {
				t.Errorf("%s %s: mark %s, want class %s and a tooltip", p.container, p.probe, describe(m), p.class)
			}
		}
	}
	for _, class := range []string{"probe-observed", "probe-inferred"} {
		if findFirst(doc, tagClass("li", class)) == nil {
			t.Errorf("the legend has no %s entry", class)
		}
	}

	// The five conditions, in order, each with its lag after its cause.
	var conds []string
	for _, r := range findAll(doc, tagClass("g", "condition")) {
		typ, _ := attr(r, "data-type")
		conds = append(conds, typ)
		c := tl.Conditions[slices.IndexFunc(tl.Conditions, func(c correlator.ConditionTransition) bool { return c.Type == typ })]
		if got, want := msAttr(t, r, "data-observed-ms"), float64(c.Observed.Sub(tl.Start).Microseconds())/1000; got != want {
			t.Errorf("%s observed at %v ms, want %v", typ, got, want)
		}
		lag, hasLag := attr(r, "data-lag-ms")
		if wantLag := !c.Cause.IsZero() && !c.Coarse; hasLag != wantLag {
			t.Errorf("%s: data-lag-ms %q, want one: %v", typ, lag, wantLag)
		} else if hasLag {
			if got, want := msAttr(t, r, "data-lag-ms"), float64(c.Lag().Microseconds())/1000; got != want {
				t.Errorf("%s lag %v ms, want %v", typ, got, want)
			}
			if took := textOf(findFirst(r, tagClass("text", "took"))); took != "+"+waterfall.FormatSeconds(c.Lag()) {
				t.Errorf("%s shows lag %q", typ, took)
			}
		}
		if d := findFirst(r, tagClass("path", "diamond")); d == nil || !strings.Contains(titleOf(d), typ+" observed True at") {
			t.Errorf("%s: no marker with a tooltip", typ)
		}
	}
	if want := []string{"PodScheduled", "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready"}; !slices.Equal(conds, want) {
		t.Errorf("conditions %v, want %v", conds, want)
	}

	// The insights and the critical path, as the timeline has them.
	var insights []string
	for _, li := range findAll(doc, func(n *html.Node) bool { return n.Data == "li" && n.Parent != nil && hasClass(n.Parent, "insights") }) {
		insights = append(insights, textOf(li))
	}
	var want []string
	for _, in := range tl.Insights {
		want = append(want, in.Message)
	}
	if len(want) == 0 || !slices.Equal(insights, want) {
		t.Errorf("insights %q, want %q", insights, want)
	}
	var steps []string
	for _, li := range findAll(doc, func(n *html.Node) bool {
		return n.Data == "li" && n.Parent != nil && hasClass(n.Parent, "critical-path")
	}) {
		name, _ := attr(li, "data-name")
		steps = append(steps, name)
	}
	var wantSteps []string
	for _, s := range tl.CriticalPath {
		wantSteps = append(wantSteps, s.Name)
	}
	if len(wantSteps) == 0 || !slices.Equal(steps, wantSteps) {
		t.Errorf("critical path %q, want %q", steps, wantSteps)
	}
	for _, name := range []string{"pod.wait_sandbox", "init/init-regular", "sidecar/init-sidecar", "container/nginx"} {
		r := rowNamed(t, doc, name, "")
		if !hasClass(r, "critical") || findFirst(r, tagClass("rect", "critical-step")) == nil {
			t.Errorf("row %s is not highlighted as a step of the critical path", name)
		}
	}
	if r := rowNamed(t, doc, "pod.init", ""); hasClass(r, "critical") {
		t.Error("pod.init is highlighted, but the critical path goes through its containers")
	}
}

// TestWaterfallPageSameRowsAsText: the page's chart has the rows of the
// text waterfall, in its order, for each recorded timeline and fixture.
func TestWaterfallPageSameRowsAsText(t *testing.T) {
	tls := replayRecording(t, demoRecording)
	tls = append(tls, restarts(), stuckCrashLoop(), lateSeen(), blindSources(), postStartDemo())
	for _, tl := range tls {
		var text bytes.Buffer
		if err := waterfall.Render(&text, tl, waterfall.MaxWidth); err != nil {
			t.Fatal(err)
		}
		var want []string
		lines := strings.Split(text.String(), "\n")
		// The table's heading is the label column, then "start" and
		// "took" right-aligned in theirs (waterfall.line).
		labelW := -1
		for _, line := range lines {
			if labelW < 0 {
				if strings.HasPrefix(strings.TrimLeft(line, " "), "start     took") {
					labelW = strings.Index(line, "start") - (1 + waterfall.NumWidth - len("start"))
				}
				continue
			}
			if line == "" {
				break
			}
			r := []rune(line) // trailing spaces trimmed
			if label := strings.TrimSpace(string(r[:min(labelW, len(r))])); label != "" {
				want = append(want, label)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%s: no rows in the text waterfall:\n%s", tl.Pod, text.String())
		}
		var page bytes.Buffer
		if err := RenderWaterfallHTML(&page, tl, "", ""); err != nil {
			t.Fatal(err)
		}
		doc, err := html.Parse(&page)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range chartRows(doc) {
			got = append(got, rowLabel(r))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: the page's rows\n%q\ndiffer from the text's\n%q", tl.Pod, got, want)
		}
	}
}

// pageEvil is markup planted where users write.
const pageEvil = `</title></text></svg><script>alert(1)</script><img src=x onerror=alert(2)>"'&`

// escapesTimeline is a stuck start with pageEvil in its reason, an
// insight, an image, a waiting message, argv and what was missing.
func escapesTimeline() *correlator.Timeline {
	tl := stuckCrashLoop()
	tl.Reason = pageEvil
	tl.Insights = append(tl.Insights, correlator.Insight{Kind: correlator.InsightRetries, Message: pageEvil})
	tl.Containers[0].Image = pageEvil
	tl.Containers[0].Waiting[0].Message = pageEvil
	tl.Containers[0].Attempts[0].Process.Argv = []string{"sh", "-c", pageEvil}
	tl.Missing = []string{pageEvil}
	return tl
}

// TestWaterfallPageEscapes: what users write (a failure's reason, a
// waiting message, argv, an image, an insight) is text on the page, never
// markup.
func TestWaterfallPageEscapes(t *testing.T) {
	tl := escapesTimeline()
	var page bytes.Buffer
	if err := RenderWaterfallHTML(&page, tl, "", ""); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(page.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range findAll(doc, func(*html.Node) bool { return true }) {
		if n.Data == "script" || n.Data == "img" {
			t.Errorf("the page has a <%s> element", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("%s has an event handler", describe(n))
			}
		}
	}
	if got := textOf(findFirst(doc, tagClass("p", "reason"))); got != "reason: "+pageEvil {
		t.Errorf("reason shown as %q", got)
	}
	li := findAll(doc, func(n *html.Node) bool { return n.Data == "li" && n.Parent != nil && hasClass(n.Parent, "insights") })
	if len(li) == 0 || textOf(li[len(li)-1]) != pageEvil {
		t.Errorf("the insight is not shown as its text")
	}
	proc := rowNamed(t, doc, "process false", "container/app")
	if title := titleOf(findFirst(proc, tagClass("rect", "bar"))); !strings.Contains(title, "sh -c "+pageEvil) {
		t.Errorf("the process's tooltip %q does not show its argv as text", title)
	}
}

// TestUIPagesOfTheStore: the list of the stored starts, newest first, each
// linking to its page (by name for the latest of a name, by UID for an
// earlier one); the page by UID; a clear 404; long names cut, with their
// whole name as a title.
func TestUIPagesOfTheStore(t *testing.T) {
	byName, _ := recordedDemo(t)
	s := NewStore(StoreLimits{})
	for _, tl := range replayRecording(t, demoRecording) {
		s.Add(tl)
	}
	// The pod lifecycle-demo deleted and created again: its name's page is
	// the second start, the list links the first by its UID.
	again := *byName["lifecycle-demo"]
	again.Pod.UID = "second-start"
	again.Start, again.End = again.Start.Add(3600e9), again.End.Add(3600e9)
	s.Add(&again)
	long := lifecycleDemo()
	long.Pod.Namespace, long.Pod.Name, long.Pod.UID = "ns", strings.Repeat("n", 253), "long-name"
	s.Add(long)
	srv := uiServer(t, s)

	resp, doc, _ := getPage(t, srv.URL+"/ui/")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("list: %s, CSP %q", resp.Status, resp.Header.Get("Content-Security-Policy"))
	}
	rows := findAll(doc, tagClass("tr", "start"))
	if len(rows) != s.Len() {
		t.Fatalf("%d starts listed, the store has %d", len(rows), s.Len())
	}
	base, _ := url.Parse(srv.URL + "/ui/")
	var prev string
	for _, row := range rows {
		a := findFirst(row, func(n *html.Node) bool { return n.Data == "a" })
		href, _ := attr(a, "href")
		uid, _ := attr(row, "data-uid")
		target, err := base.Parse(href)
		if err != nil {
			t.Fatal(err)
		}
		tl, _ := s.GetUID(uid)
		created := textOf(findFirst(row, tagClass("td", "created")))
		if prev != "" && created > prev {
			t.Errorf("%s created %s listed after one created %s: not newest first", tl.Pod, created, prev)
		}
		prev = created
		switch uid {
		case byName["lifecycle-demo"].Pod.UID:
			if target.Path != "/ui/uid/"+uid {
				t.Errorf("the earlier lifecycle-demo links to %s", target)
			}
		case "second-start":
			if target.Path != "/ui/pods/readyline-demo/lifecycle-demo" {
				t.Errorf("the latest lifecycle-demo links to %s", target)
			}
		case "long-name":
			if got := textOf(a); utf8.RuneCountInString(got) > maxHeadingRunes {
				t.Errorf("a 253-character name is listed as %d characters", utf8.RuneCountInString(got))
			}
			if title, _ := attr(a, "title"); title != long.Pod.String() {
				t.Errorf("the cut name's title %q", title)
			}
		}
		resp, page, _ := getPage(t, target.String())
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s", target, resp.Status)
			continue
		}
		pod := findFirst(page, tagClass("span", "pod"))
		if shown, title := textOf(pod), func() string { v, _ := attr(pod, "title"); return v }(); shown != tl.Pod.String() && title != tl.Pod.String() {
			t.Errorf("%s shows pod %q (title %q), want %s", target, shown, title, tl.Pod)
		}
		back := findFirst(page, func(n *html.Node) bool { return n.Data == "a" && strings.Contains(textOf(n), "all pod starts") })
		if href, _ := attr(back, "href"); back == nil || mustResolve(t, target, href) != "/ui/" {
			t.Errorf("%s: the link back to the list is %q", target, href)
		}
	}

	resp, doc, _ = getPage(t, srv.URL+"/ui/pods/nowhere/nothing")
	if resp.StatusCode != http.StatusNotFound || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("unknown pod: %s, %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	if h1 := textOf(findFirst(doc, func(n *html.Node) bool { return n.Data == "h1" })); h1 != "No pod start of nowhere/nothing here" {
		t.Errorf("404 heading %q", h1)
	}
	if p := textOf(findFirst(doc, tagClass("p", "notfound"))); !strings.Contains(p, "keeps the last 500 that ended") {
		t.Errorf("404 says %q", p)
	}
	if resp, _, _ := getPage(t, srv.URL+"/ui/uid/nope"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown uid: %s", resp.Status)
	}
	if resp, _, _ := getPage(t, srv.URL+"/ui"); resp.Request.URL.Path != "/ui/" {
		t.Errorf("/ui ends at %s", resp.Request.URL)
	}
	resp, err := http.Post(srv.URL+"/ui/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: %s", resp.Status)
	}
}

func mustResolve(t *testing.T, base *url.URL, href string) string {
	t.Helper()
	u, err := base.Parse(href)
	if err != nil {
		t.Fatal(err)
	}
	return u.Path
}

// TestUIListEmpty: a daemon that has seen no start yet says so.
func TestUIListEmpty(t *testing.T) {
	_, doc, _ := getPage(t, uiServer(t, NewStore(StoreLimits{})).URL+"/ui/")
	if p := findFirst(doc, tagClass("p", "empty")); p == nil || !strings.Contains(textOf(p), "No pod start yet") {
		t.Error("the empty list does not say it is empty")
	}
}
