package exporter

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/readyline/readyline/collector/testenv"
)

// browserWindow is the window the page is drawn in: wide enough for the
// chart (svgWidth) and its margins.
const browserWidth, browserHeight = 1400, 1000

// requireChromium returns the headless browser to run: $READYLINE_CHROMIUM,
// else chromium on the PATH. Without one the test skips, loudly, unless
// READYLINE_REQUIRE_PRIVILEGED=1 (make test as root) or $CI demand it.
func requireChromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("READYLINE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "BROWSER TEST NOT RUN: no chromium on the PATH (install Debian's chromium: `sudo make test-deps`, or point READYLINE_CHROMIUM at one)"
	if os.Getenv(testenv.RequirePrivilegedEnv) == "1" || os.Getenv("CI") != "" {
		t.Fatal(msg + "; " + testenv.RequirePrivilegedEnv + "=1 or $CI demands it")
	}
	t.Skip(msg)
	return ""
}

// artifactsDir is where the test leaves what a reader wants to look at:
// $READYLINE_ARTIFACTS, else deploy/e2e/artifacts (git-ignored), as the
// end-to-end tests do.
func artifactsDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("READYLINE_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "deploy", "e2e", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("creating the artifacts dir: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// runChromium runs one headless chromium with args after its own, in a
// profile, home and process group of its own, for at most a minute, and
// returns what it printed. It kills the group it started when it is done:
// the browser's helpers (zygote, GPU, crash handler) do not outlive it.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{
		"--headless", "--no-sandbox", // as root, chromium's sandbox refuses to start
		"--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
		"--disable-background-networking", "--disable-component-update",
		"--user-data-dir=" + filepath.Join(home, "profile"),
		"--timeout=10000", // ms: stop loading, and draw or dump what there is
	}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		// What is left of the group it started; ESRCH when nothing is.
		if kerr := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			t.Logf("killing chromium's process group: %v", kerr)
		}
	}
	if err != nil {
		t.Fatalf("%s %s: %v (context: %v)\nstderr:\n%s", bin, strings.Join(args, " "), err, ctx.Err(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestBrowserDrawsWaterfall serves the recorded lifecycle-demo's page and
// has a real browser load it: the DOM it built has the phases with
// positive widths, the containers and the five conditions, and its
// screenshot (left in the artifacts dir to look at) shows the bars in
// their colours, which come from the inline styles the page's
// Content-Security-Policy must let through.
func TestBrowserDrawsWaterfall(t *testing.T) {
	bin := requireChromium(t)
	byName, tl := recordedDemo(t)
	s := NewStore(StoreLimits{})
	for _, other := range byName {
		s.Add(other)
	}
	page := uiServer(t, s).URL + "/ui/pods/" + tl.Pod.Namespace + "/" + tl.Pod.Name
	dir := artifactsDir(t)

	dom := runChromium(t, bin, "--dump-dom", page)
	if err := os.WriteFile(filepath.Join(dir, "ui-waterfall-lifecycle-demo.html"), dom, 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatalf("parsing the browser's DOM: %v", err)
	}
	if findFirst(doc, func(n *html.Node) bool { return n.Data == "svg" && hasClass(n, "waterfall") }) == nil {
		t.Fatalf("the browser's DOM has no waterfall:\n%.2000s", dom)
	}
	for _, name := range []string{"pod.schedule", "pod.wait_sandbox", "pod.sandbox", "pod.init", "pod.containers"} {
		if w := barWidth(t, rowNamed(t, doc, name, "")); w <= 0 {
			t.Errorf("%s's bar is %v wide in the browser", name, w)
		}
	}
	for _, c := range []struct{ name, class string }{
		{"init/init-regular", "init"}, {"sidecar/init-sidecar", "sidecar"}, {"container/nginx", "main"},
	} {
		if r := rowNamed(t, doc, c.name, ""); !hasClass(r, c.class) || barWidth(t, r) <= 0 {
			t.Errorf("container %s: %s", c.name, describe(r))
		}
	}
	var conds []string
	for _, r := range findAll(doc, tagClass("g", "condition")) {
		typ, _ := attr(r, "data-type")
		conds = append(conds, typ)
	}
	if want := "PodScheduled PodReadyToStartContainers Initialized ContainersReady Ready"; strings.Join(conds, " ") != want {
		t.Errorf("the browser shows the conditions %v, want %s", conds, want)
	}

	shot := filepath.Join(dir, "ui-waterfall-lifecycle-demo.png")
	os.Remove(shot)
	runChromium(t, bin, "--screenshot="+shot, "--window-size="+strconv.Itoa(browserWidth)+","+strconv.Itoa(browserHeight), page)
	t.Logf("screenshot of %s: %s", page, shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != browserWidth || b.Dy() != browserHeight {
		t.Errorf("screenshot is %dx%d, want the window's %dx%d", b.Dx(), b.Dy(), browserWidth, browserHeight)
	}
	if n := distinctColours(img); n < 50 {
		t.Errorf("the screenshot has %d colours: blank?", n)
	}
	// The bars' fills come from the page's <style> (writeHead): each
	// on more pixels than its legend swatch (22x12, drawn without the
	// style) has, the styles applied and the bars drawn. The recorded bars
	// are 3000 to 11000 pixels each.
	for name, rgb := range map[string][3]uint8{
		"phase": {0x3b, 0x5b, 0xdb}, "init container": {0x70, 0x48, 0xe8},
		"sidecar": {0x0c, 0x85, 0x99}, "container": {0x2b, 0x8a, 0x3e},
	} {
		n := pixelsOf(img, rgb)
		t.Logf("%s colour: %d pixels", name, n)
		if n < 1000 {
			t.Errorf("the screenshot has %d pixels of the %s colour #%02x%02x%02x, want its bars", n, name, rgb[0], rgb[1], rgb[2])
		}
	}
}

func distinctColours(img image.Image) int {
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	return len(seen)
}

// pixelsOf counts the pixels within a few levels of rgb (colour management
// and antialiasing move some).
func pixelsOf(img image.Image, rgb [3]uint8) int {
	near := func(a uint32, b uint8) bool { d := int(a>>8) - int(b); return d >= -6 && d <= 6 }
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r, rgb[0]) && near(g, rgb[1]) && near(bl, rgb[2]) {
				n++
			}
		}
	}
	return n
}
