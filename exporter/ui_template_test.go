package exporter

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"go/parser"
	"go/token"
	"html/template"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
	"github.com/readyline/readyline/exporter/internal/fixtures"
)

// The pages of the UI were html/template templates; they are Go code now
// (ui_pages.go, htmlWriter), which must write the very bytes the templates
// wrote, for every input. The templates are kept here, for the tests only:
// each test below renders pages both ways and compares them.

//go:embed testdata/ui/*.html
var uiTemplateFiles embed.FS

// uiTemplates are the pages as they were: the reference.
var uiTemplates = template.Must(template.New("").Funcs(template.FuncMap{
	"startRight": func() int { return svgStartRight },
	"tookRight":  func() int { return svgTookRight },
	"barLeft":    func() int { return svgBarLeft },
	"sub":        func(a, b int) int { return a - b },
}).ParseFS(uiTemplateFiles, "testdata/ui/*.html"))

// renderBothWays renders a page's view (a *podView, *listView or
// *notFoundView) with its template and with its Go code.
func renderBothWays(view any) (page string, tmpl, code []byte, err error) {
	var w htmlWriter
	var data any
	switch v := view.(type) {
	case *podView:
		page, data = "pod.html", *v
		writePodPage(&w, v)
	case *listView:
		page, data = "list.html", *v
		writeListPage(&w, v)
	case *notFoundView:
		page, data = "notfound.html", *v
		writeNotFoundPage(&w, v)
	default:
		panic(fmt.Sprintf("no page shows a %T", view))
	}
	var b bytes.Buffer
	err = uiTemplates.ExecuteTemplate(&b, page, data)
	return page, b.Bytes(), w.b, err
}

// requireSamePage fails unless the Go code renders view exactly as the
// template does; it shows where they part.
func requireSamePage(t testing.TB, what string, view any) {
	t.Helper()
	page, tmpl, code, err := renderBothWays(view)
	if err != nil {
		t.Fatalf("%s: the template %s failed: %v", what, page, err)
	}
	if !bytes.Equal(tmpl, code) {
		t.Fatalf("%s: %s differs from its template (%d bytes, the template's %d):\n%s", what, page, len(code), len(tmpl), firstDifference(tmpl, code))
	}
}

// firstDifference shows both around the first byte where they differ.
func firstDifference(want, got []byte) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	around := func(b []byte) string {
		from, to := max(i-120, 0), min(i+120, len(b))
		return strconv.Quote(string(b[from:i])) + " >>> " + strconv.Quote(string(b[i:to]))
	}
	return fmt.Sprintf("at byte %d\n template: %s\n code:     %s", i, around(want), around(got))
}

// uiFixture is a timeline to draw: a fixture made fresh, or a recorded
// one (planter copies what it changes).
type uiFixture struct {
	name string
	tl   func() *correlator.Timeline
}

// uiFixtures are the timelines the tests of this package draw: the
// fixtures, every recording of the correlator, and FuzzWaterfall's seeds
// and corpus (fixtures with odd times: year 1, year 9999, end before start).
func uiFixtures(t testing.TB) []uiFixture {
	t.Helper()
	fresh := map[string]func() *correlator.Timeline{
		"lifecycle-demo": lifecycleDemo, "init-failure-never": initFailureNever, "poststart-demo": postStartDemo,
		"probe-retries": probeRetries, "restarts": restarts, "restarts-failed-calls": restartsFailedCalls,
		"stuck-crashloop": stuckCrashLoop, "late-seen": lateSeen, "static-pod": staticPod, "blind-sources": blindSources,
		"kernel": kernelTimeline, "late-ready": lateReady, "pulls": pullsTimeline, "slow-sandbox": slowSandbox,
		"late-ready-uncorrected": func() *correlator.Timeline { return uncorrected(lateReady()) },
		"reported":               func() *correlator.Timeline { r, _ := reportedAndCompleted(); return r },
		"completed":              func() *correlator.Timeline { _, c := reportedAndCompleted(); return c },
		// TestWaterfallPageEscapes's.
		"escapes": escapesTimeline,
		// TestUIPagesOfTheStore's name too long for the heading.
		"long-name": func() *correlator.Timeline {
			tl := lifecycleDemo()
			tl.Pod.Namespace, tl.Pod.Name, tl.Pod.UID = "ns", strings.Repeat("n", 253), "long-name"
			return tl
		},
		"partial": func() *correlator.Timeline {
			tl := stuckCrashLoop()
			tl.Partial, tl.Outcome = true, correlator.OutcomeTimeout
			return tl
		},
	}
	var out []uiFixture
	for _, name := range slices.Sorted(maps.Keys(fresh)) { // in an order of their own: FuzzUIMatchesTemplate picks by index
		out = append(out, uiFixture{name, fresh[name]})
	}
	recordings, err := filepath.Glob("../correlator/testdata/recordings/*.jsonl")
	if err != nil || len(recordings) == 0 {
		t.Fatalf("no recordings: %v", err)
	}
	for _, path := range recordings {
		for i, tl := range replayRecording(t, path) {
			out = append(out, uiFixture{fmt.Sprintf("%s#%d %s", filepath.Base(path), i, tl.Pod), func() *correlator.Timeline { return tl }})
		}
	}
	seeds := fixtures.WaterfallFuzzSeeds()
	corpus, err := filepath.Glob(waterfallCorpus)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range corpus {
		seeds = append(seeds, readWaterfallCorpus(t, path))
	}
	for i, s := range seeds {
		out = append(out, uiFixture{fmt.Sprintf("FuzzWaterfall seed %d", i), func() *correlator.Timeline {
			return fixtures.FuzzTimeline(s.Fixture, s.Times)
		}})
	}
	return out
}

// readWaterfallCorpus reads a file of FuzzWaterfall's corpus: a byte, an
// int and a []byte, each on its line in Go syntax.
func readWaterfallCorpus(t testing.TB, path string) fixtures.WaterfallFuzzSeed {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	arg := func(i int, typ string) string {
		if len(lines) != 4 || !strings.HasPrefix(lines[i], typ+"(") || !strings.HasSuffix(lines[i], ")") {
			t.Fatalf("%s: line %d is not %s(...): %q", path, i+1, typ, lines)
		}
		return lines[i][len(typ)+1 : len(lines[i])-1]
	}
	fixture, err1 := strconv.Unquote(arg(1, "byte"))
	width, err2 := strconv.Atoi(arg(2, "int"))
	times, err3 := strconv.Unquote(arg(3, "[]byte"))
	if err1 != nil || err2 != nil || err3 != nil || len(fixture) == 0 {
		t.Fatalf("%s: %v %v %v", path, err1, err2, err3)
	}
	r := []rune(fixture)[0] // a rune literal unquotes to its UTF-8
	return fixtures.WaterfallFuzzSeed{Fixture: uint8(r), Width: width, Times: []byte(times)}
}

// apiLink is the JSON link of a pod's page, as UIHandler makes it.
func apiLink(tl *correlator.Timeline) string {
	return "../../../api/v1/timelines/" + url.PathEscape(tl.Pod.Namespace) + "/" + url.PathEscape(tl.Pod.Name)
}

// TestUIMatchesTemplate: every timeline the tests use, on the pages that
// show it (its own page, as RenderWaterfallHTML and the handlers link it,
// the list of a store that has it, a 404), is written byte for byte as the
// templates wrote it; so is the empty list.
func TestUIMatchesTemplate(t *testing.T) {
	s := NewStore(StoreLimits{})
	for _, fx := range uiFixtures(t) {
		tl := fx.tl()
		for _, links := range [][2]string{{"", ""}, {"../../", apiLink(tl)}, {"../", ""}} {
			v := newPodView(tl, links[0], links[1])
			requireSamePage(t, fx.name, &v)
		}
		one := NewStore(StoreLimits{})
		one.Add(tl)
		lv := everyStart(one)
		requireSamePage(t, fx.name, &lv)
		s.Add(tl)
	}
	lv := everyStart(s)
	if len(lv.Starts) < 20 {
		t.Fatalf("the store lists %d starts", len(lv.Starts))
	}
	requireSamePage(t, "all the timelines", &lv)
	empty := everyStart(NewStore(StoreLimits{}))
	requireSamePage(t, "no timeline", &empty)
	for _, what := range []string{"nowhere/nothing", "uid nope", "ns/" + strings.Repeat("n", 253)} {
		v := notFoundView{Back: "../../", What: cut(what, maxHeadingRunes), Why: s.notFoundWhy(apiclient.ErrNotFound)}
		requireSamePage(t, what, &v)
	}
}

// hostile are strings planted in what users write: markup, quotes, an
// entity, a plus (html/template writes &#43;), NUL, invalid UTF-8, unsafe
// and odd URLs for the links, non-ASCII, a template's own syntax, and long.
var hostile = []string{
	`<script>alert(1)</script>`,
	`" onmouseover="x`,
	`'`,
	`&amp;`,
	`+`,
	"a\x00b\x00",
	"\xff\xfe\xc3(\xe2\x82 \xed\xa0\x80 bad UTF-8 \xc0\xaf",
	"javascript:alert(1)",
	"JavaScript:alert(1)",
	" javascript:alert(1)",
	"java\tscript:alert(1)",
	"data:text/html,<b>x</b>",
	"vbscript:msgbox",
	"httpſ://long-s.example/", // strings.EqualFold takes ſ for s
	"HTTPS://Example.COM/a b?q=1&r=2+3#frag'\"<>",
	"mailto:someone@example.com",
	"//evil.example/x",
	"/ui/../api?x=%41%zz%4",
	"100%",
	"%",
	"a/b:c",
	"</title><title>",
	"</style><style>",
	"</text></g></svg><svg onload=alert(1)>",
	"<!-- -->",
	"`backtick` = \\ ; {}",
	"{{.}} {{template \"foot\"}}",
	"ünïcödé — 名前 ポッド 🚀 \u2028\u2029 \ufdd0\ufffe\uffff \u200b",
	"\t\n\r\v\f line\nbreaks ",
	"\x01\x02\x1b[31m\x7f",
	"",
	" ",
	strings.Repeat("long+<&>\"' ", 100),
	strings.Repeat("n", 253) + "/" + strings.Repeat("é", 100),
}

// planter changes what it walks (through pointers, slices, maps and
// structs), copying every pointer, slice and map on its way so that what
// it was handed stays as it was. It sets strings, those of named types
// too; with views set, it also sets bools and ints and adds an element to
// slices and a value to nil pointers, to reach every branch of a page.
type planter struct {
	views bool
	str   func() string // the next string to plant
	take  func() bool   // whether to plant the next string, add an element...
	num   func() int    // the next int
}

func (p *planter) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() && p.take() {
			v.SetString(p.str())
		}
	case reflect.Bool:
		if p.views && v.CanSet() {
			v.SetBool(p.take())
		}
	case reflect.Int:
		if p.views && v.CanSet() && p.take() {
			v.SetInt(int64(p.num()))
		}
	case reflect.Pointer:
		if !v.CanSet() {
			return
		}
		if v.IsNil() {
			if !p.views || !p.take() {
				return
			}
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			cp := reflect.New(v.Type().Elem())
			cp.Elem().Set(v.Elem())
			v.Set(cp)
		}
		p.walk(v.Elem())
	case reflect.Slice:
		if !v.CanSet() || (v.Len() == 0 && !p.views) {
			return
		}
		n := v.Len()
		if p.views && p.take() {
			n++
		}
		cp := reflect.MakeSlice(v.Type(), n, n)
		reflect.Copy(cp, v)
		v.Set(cp)
		for i := range n {
			p.walk(v.Index(i))
		}
	case reflect.Map:
		if !v.CanSet() || v.IsNil() {
			return
		}
		cp := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			p.walk(e)
			cp.SetMapIndex(it.Key(), e)
		}
		v.Set(cp)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			p.walk(v.Field(i))
		}
	}
}

// planted is a copy of tl with strings planted by p.
func planted(tl *correlator.Timeline, p *planter) *correlator.Timeline {
	cp := *tl
	p.walk(reflect.ValueOf(&cp).Elem())
	return &cp
}

// plantedView is a copy of view (a pointer to a page's view) with p's
// values planted in it.
func plantedView[V any](view *V, p *planter) *V {
	cp := *view
	p.walk(reflect.ValueOf(&cp).Elem())
	return &cp
}

// TestUIMatchesTemplateHostile: with hostile strings in every string of the
// timelines (pod names and namespaces, reasons, messages, argv, images,
// insights, container names...), or in every field of the pages' views
// (links, classes, coordinates, trace ids too, with every optional part
// present), each page is written as its template wrote it. First each
// hostile string everywhere, then all of them in turn, field after field.
func TestUIMatchesTemplateHostile(t *testing.T) {
	fixtures := uiFixtures(t)
	for round := range len(hostile) + 1 {
		var str func() string
		k := 0
		if round < len(hostile) {
			str = func() string { return hostile[round] }
		} else {
			str = func() string { k++; return hostile[k%len(hostile)] }
		}
		yes := func() bool { return true }
		nums := []int{0, 1, -1, 6, 25, math.MaxInt, math.MinInt}
		num := func() int { k++; return nums[k%len(nums)] }
		store := NewStore(StoreLimits{Timelines: 10000, Bytes: 1 << 40})
		for _, fx := range fixtures {
			what := fmt.Sprintf("%s, round %d", fx.name, round)
			tl := planted(fx.tl(), &planter{str: str, take: yes})
			v := newPodView(tl, str(), str())
			requireSamePage(t, what, &v)
			v2 := newPodView(tl, "../../", apiLink(tl))
			requireSamePage(t, what, &v2)
			requireSamePage(t, what+", every field", plantedView(&v, &planter{views: true, str: str, take: yes, num: num}))
			store.Add(tl)
		}
		lv := everyStart(store)
		requireSamePage(t, fmt.Sprintf("list, round %d", round), &lv)
		requireSamePage(t, fmt.Sprintf("list, round %d, every field", round), plantedView(&lv, &planter{views: true, str: str, take: yes, num: num}))
		nf := notFoundView{Back: str(), What: cut(str(), maxHeadingRunes), Why: str()}
		requireSamePage(t, fmt.Sprintf("not found, round %d", round), &nf)
		requireSamePage(t, fmt.Sprintf("not found, round %d, every field", round), plantedView(&nf, &planter{views: true, str: str, take: yes, num: num}))
	}
}

// TestUIHostileStringsReachThePages: the differential tests would pass
// vacuously if the planted strings never reached a page. They do, escaped
// as html/template escapes them, an unsafe link defanged.
func TestUIHostileStringsReachThePages(t *testing.T) {
	for _, c := range []struct{ plant, want string }{
		{`<script>alert(1)</script>`, `&lt;script&gt;alert(1)&lt;/script&gt;`},
		{`" onmouseover="x`, ` title="&#34; onmouseover=&#34;x`},
		{"a+b\x00'", "a&#43;b\uFFFD&#39;"},
		{"javascript:alert(1)", `<a href="#ZgotmplZ">`},
		{"https://example.com/a b'", `<a href="https://example.com/a%20b%27https:`},
	} {
		s := strings.Repeat(c.plant, maxHeadingRunes) // cut: a title too
		tl := planted(lifecycleDemo(), &planter{str: func() string { return s }, take: func() bool { return true }})
		v := newPodView(tl, s, s)
		_, tmpl, code, err := renderBothWays(&v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(tmpl, []byte(c.want)) || !bytes.Equal(tmpl, code) {
			t.Errorf("planting %q: the template's page does not have %q, or the code's differs", c.plant, c.want)
		}
	}
}

// TestUIHandlerPagesMatchTemplate: the handlers serve the pages of the
// views they make, as the templates wrote them, for pods with hostile
// names too.
func TestUIHandlerPagesMatchTemplate(t *testing.T) {
	s := NewStore(StoreLimits{})
	var tls []*correlator.Timeline
	for i, h := range append([]string{"lifecycle-demo"}, hostile...) {
		tl := lifecycleDemo()
		if h != "" {
			tl.Pod.Namespace, tl.Pod.Name, tl.Pod.UID = h, h+strconv.Itoa(i), "uid-"+h+strconv.Itoa(i)
		}
		tl.Reason = h
		tl.Start = tl.Start.Add(time.Duration(i) * time.Second)
		s.Add(tl)
		tls = append(tls, tl)
	}
	h := ServeEveryPod(s.UIHandler(nil))
	get := func(path string) (int, []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://node"+path, nil))
		return rec.Code, rec.Body.Bytes()
	}
	same := func(what string, status, wantStatus int, body []byte, view any) {
		t.Helper()
		page, tmpl, _, err := renderBothWays(view)
		if err != nil {
			t.Fatal(err)
		}
		if status != wantStatus || !bytes.Equal(body, tmpl) {
			t.Errorf("%s: %d, %s differs from its template:\n%s", what, status, page, firstDifference(tmpl, body))
		}
	}
	status, body := get("/ui/")
	lv := everyStart(s)
	same("the list", status, http.StatusOK, body, &lv)
	for _, tl := range tls {
		if tl.Pod.Namespace == "" || strings.ContainsAny(tl.Pod.Namespace+tl.Pod.Name, "/\x00") {
			continue // not a path of the handler's
		}
		status, body = get("/ui/pods/" + url.PathEscape(tl.Pod.Namespace) + "/" + url.PathEscape(tl.Pod.Name))
		// The page shows the timeline as stored: its JSON, in which
		// invalid UTF-8 became U+FFFD (but in the pod's name and UID).
		stored, _ := s.GetUID(tl.Pod.UID)
		v := newPodView(stored, "../../", apiLink(tl))
		same(tl.Pod.String(), status, http.StatusOK, body, &v)
		status, body = get("/ui/uid/" + url.PathEscape(tl.Pod.UID))
		v = newPodView(stored, "../", "")
		same(tl.Pod.UID, status, http.StatusOK, body, &v)
	}
	status, body = get("/ui/pods/nowhere/" + url.PathEscape(`<b>"x'&+`))
	nf := notFoundView{Back: "../../", What: cut(`nowhere/<b>"x'&+`, maxHeadingRunes), Why: s.notFoundWhy(apiclient.ErrNotFound)}
	same("a pod not stored", status, http.StatusNotFound, body, &nf)
	status, body = get("/ui/uid/" + url.PathEscape(`<b>"x'&+`))
	nf = notFoundView{Back: "../", What: cut(`uid <b>"x'&+`, maxHeadingRunes), Why: s.notFoundWhy(apiclient.ErrNotFound)}
	same("a uid not stored", status, http.StatusNotFound, body, &nf)
}

// FuzzUIMatchesTemplate plants strings from the fuzzer (data, cut at each
// \x1e) in the strings of one of the timelines the tests use (which), then
// draws one of its pages (bits%5): its own, as is or with every field of its
// view planted (links, classes, coordinates, ints and bools too, optional
// parts added), the list of a store that has it, as is or planted, or a
// 404 planted. bits also seeds the choice of the fields planted. The page
// must be written as its template wrote it.
func FuzzUIMatchesTemplate(f *testing.F) {
	for i, h := range hostile {
		for page := range uint64(5) {
			f.Add(uint16(i), uint64(i)*0x9e3779b97f4a7c15*5+page, h+"\x1e"+hostile[(i+7)%len(hostile)])
		}
	}
	f.Add(uint16(0), uint64(0), "")
	f.Add(uint16(3), ^uint64(0), "javascript:x\x1e\x00\x1e+\x1e\xff")
	fixtures := uiFixtures(f)
	f.Fuzz(func(t *testing.T, which uint16, bits uint64, data string) {
		parts := strings.Split(data, "\x1e")
		rng := rand.New(rand.NewPCG(bits, uint64(len(data))))
		k := 0
		str := func() string { k++; return parts[k%len(parts)] }
		take := func() bool { return rng.IntN(3) != 0 }
		num := func() int {
			switch rng.IntN(8) {
			case 0:
				return math.MinInt
			case 1:
				return math.MaxInt
			}
			return rng.IntN(4000) - 2000
		}
		fx := fixtures[int(which)%len(fixtures)]
		tl := planted(fx.tl(), &planter{str: str, take: take})
		views := &planter{views: true, str: str, take: take, num: num}
		switch bits % 5 { // one page a run: more runs
		case 0:
			v := newPodView(tl, str(), str())
			requireSamePage(t, fx.name, &v)
		case 1:
			v := newPodView(tl, str(), str())
			requireSamePage(t, fx.name+", every field", plantedView(&v, views))
		case 2, 3:
			s := NewStore(StoreLimits{})
			s.Add(tl)
			lv := everyStart(s)
			if bits%5 == 2 {
				requireSamePage(t, fx.name+", list", &lv)
			} else {
				requireSamePage(t, fx.name+", list, every field", plantedView(&lv, views))
			}
		case 4:
			nf := notFoundView{Back: str(), What: cut(str(), maxHeadingRunes), Why: str()}
			requireSamePage(t, "not found", &nf)
			requireSamePage(t, "not found, every field", plantedView(&nf, views))
		}
	})
}

// TestNoTemplatePackage: no file of the package but its tests imports
// html/template or text/template (see htmlWriter for why).
func TestNoTemplatePackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "html/template" || p == "text/template" {
				t.Errorf("%s imports %s", name, p)
			}
		}
	}
}

// everyStart is the list page's view of every start s keeps.
func everyStart(s *Store) listView {
	v, _ := s.listView(context.Background(), EveryPod) // EveryPod refuses nothing
	return v
}
