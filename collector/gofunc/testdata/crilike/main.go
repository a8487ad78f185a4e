// crilike is a uprobe target: its methods have the shapes of the kubelet's
// CRI client methods (k8s.io/cri-client/pkg, v0.37), so tests can attach
// probes to a binary they built themselves and check what the probes read.
//
// Every method is //go:noinline, takes a context, sleeps a known multiple of
// -sleep and has several return paths:
//
//   - an early error return, before any sleep, for an invalid argument (an
//     empty id or a nil config); the loop makes one every -invalid-every calls;
//   - a late error return, after the sleep, like the runtime answering with an
//     error; the loop asks for one every -err-every calls;
//   - the normal return.
//
// Sleeps, in units of -sleep: RunPodSandbox 3, StopPodSandbox 1,
// RemovePodSandbox 1, CreateContainer 2, StartContainer 1, StopContainer 1,
// RemoveContainer 1, ExecSync 1, ContainerStatus 0, PodSandboxStatus 0,
// ListContainers 0, PullImage 4.
//
// Each goroutine (-goroutines) loops over one pod's life: PullImage,
// RunPodSandbox, CreateContainer, StartContainer, ExecSync, ContainerStatus,
// PodSandboxStatus, ListContainers, StopContainer, RemoveContainer,
// StopPodSandbox, RemovePodSandbox, and does it -calls times (0: until
// killed). The goroutines sleep inside the calls, so they change OS thread
// between a call's entry and its return. With -fresh every call runs on a new
// goroutine, whose small initial stack makes RunPodSandbox (it has a frame of
// more than 4 KiB) grow the stack in its prologue: morestack, then the entry
// runs again.
//
// With -print, every call prints one JSON line on stdout after it returns:
//
//	{"method":"RunPodSandbox","goroutine":0,"round":3,"arg":"pod-0-3","result":"sb-0-3","err":"","start_ns":...,"end_ns":...}
//
// arg is the id argument the method received (sandbox id, container id,
// image reference, or the pod name for RunPodSandbox; ExecSync's is the
// container id and cmd is printed apart); result is the string the method
// returned (sandbox id, container id, image ref, ExecSync's stdout); err is the
// error's text or "". start_ns and end_ns are wall-clock Unix nanoseconds
// taken around the call. The first line, also with -print, is
// {"pid":N}.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PodSandboxMetadata names a pod, like runtimeapi.PodSandboxMetadata.
type PodSandboxMetadata struct {
	Name, UID, Namespace string
	Attempt              uint32
}

// PodSandboxConfig is the shape of runtimeapi.PodSandboxConfig that matters
// here.
type PodSandboxConfig struct {
	Metadata *PodSandboxMetadata
	Hostname string
	Labels   map[string]string
}

// ImageSpec is an image reference, like runtimeapi.ImageSpec.
type ImageSpec struct {
	Image string
}

// AuthConfig holds registry credentials, like runtimeapi.AuthConfig.
type AuthConfig struct {
	Username, Password string
}

// ContainerConfig is the shape of runtimeapi.ContainerConfig that matters
// here.
type ContainerConfig struct {
	Name    string
	Image   *ImageSpec
	Command []string
}

// ContainerStatus is a container's state, like runtimeapi.ContainerStatus.
type ContainerStatus struct {
	ID, State string
}

// PodSandboxStatus is a sandbox's state, like runtimeapi.PodSandboxStatus.
type PodSandboxStatus struct {
	ID, State string
}

// Container is a listed container, like runtimeapi.Container.
type Container struct {
	ID, PodSandboxID string
}

// errInvalid is the early error: the argument was refused before any work.
var errInvalid = errors.New("invalid argument")

// errRuntime is the late error: the "runtime" answered with an error.
var errRuntime = errors.New("rpc error: code = Unknown desc = runtime said no")

// remoteRuntimeService has the receiver shape of cri-client's
// *remoteRuntimeService.
type remoteRuntimeService struct {
	timeout time.Duration
	unit    time.Duration // -sleep
	mu      sync.Mutex
	live    map[string]string // container id -> sandbox id
	failing map[string]bool   // ids whose calls fail late
}

// remoteImageService has the receiver shape of cri-client's
// *remoteImageService.
type remoteImageService struct {
	timeout time.Duration
	unit    time.Duration
}

// fails reports whether the loop asked calls on id to fail late.
func (r *remoteRuntimeService) fails(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failing[id]
}

// setFailing makes calls on ids fail late, or no longer.
func (r *remoteRuntimeService) setFailing(on bool, ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if on {
			r.failing[id] = true
		} else {
			delete(r.failing, id)
		}
	}
}

//go:noinline
func (r *remoteRuntimeService) RunPodSandbox(ctx context.Context, config *PodSandboxConfig, runtimeHandler string) (string, error) {
	if config == nil || config.Metadata == nil {
		return "", fmt.Errorf("RunPodSandbox: %w: no sandbox config", errInvalid)
	}
	if runtimeHandler == "" {
		return "", fmt.Errorf("RunPodSandbox: %w: no runtime handler", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout*2)
	defer cancel()
	if err := sleep(ctx, 3*r.unit); err != nil {
		return "", err
	}
	if config.Labels["fail"] == "true" {
		return "", fmt.Errorf("RunPodSandbox %s: %w", config.Metadata.Name, errRuntime)
	}
	// A scratch buffer bigger than a new goroutine's stack: with -fresh the
	// prologue calls morestack and the entry runs twice.
	var scratch [4608]byte
	id := append(scratch[:0], "sb-"...)
	id = append(id, strings.TrimPrefix(config.Metadata.Name, "pod-")...)
	return string(id), nil
}

//go:noinline
func (r *remoteRuntimeService) StopPodSandbox(ctx context.Context, podSandBoxID string) (err error) {
	if podSandBoxID == "" {
		return fmt.Errorf("StopPodSandbox: %w: empty sandbox id", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := sleep(ctx, r.unit); err != nil {
		return err
	}
	if r.fails(podSandBoxID) {
		return fmt.Errorf("StopPodSandbox %s: %w", podSandBoxID, errRuntime)
	}
	return nil
}

//go:noinline
func (r *remoteRuntimeService) RemovePodSandbox(ctx context.Context, podSandBoxID string) (err error) {
	if podSandBoxID == "" {
		return fmt.Errorf("RemovePodSandbox: %w: empty sandbox id", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := sleep(ctx, r.unit); err != nil {
		return err
	}
	if r.fails(podSandBoxID) {
		return fmt.Errorf("RemovePodSandbox %s: %w", podSandBoxID, errRuntime)
	}
	return nil
}

// CreateContainer wraps createContainerV1 the way cri-client does.
//
//go:noinline
func (r *remoteRuntimeService) CreateContainer(ctx context.Context, podSandBoxID string, config *ContainerConfig, sandboxConfig *PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.createContainerV1(ctx, podSandBoxID, config, sandboxConfig)
}

//go:noinline
func (r *remoteRuntimeService) createContainerV1(ctx context.Context, podSandBoxID string, config *ContainerConfig, sandboxConfig *PodSandboxConfig) (string, error) {
	if podSandBoxID == "" || config == nil || sandboxConfig == nil {
		return "", fmt.Errorf("CreateContainer: %w: sandbox id, config and sandbox config are required", errInvalid)
	}
	if err := sleep(ctx, 2*r.unit); err != nil {
		return "", err
	}
	if r.fails(podSandBoxID) {
		return "", fmt.Errorf("CreateContainer in %s: %w", podSandBoxID, errRuntime)
	}
	id := "ctr-" + strings.TrimPrefix(podSandBoxID, "sb-") + "-" + config.Name
	r.mu.Lock()
	r.live[id] = podSandBoxID
	r.mu.Unlock()
	return id, nil
}

//go:noinline
func (r *remoteRuntimeService) StartContainer(ctx context.Context, containerID string) (err error) {
	if containerID == "" {
		return fmt.Errorf("StartContainer: %w: empty container id", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := sleep(ctx, r.unit); err != nil {
		return err
	}
	if r.fails(containerID) {
		return fmt.Errorf("StartContainer %s: %w", containerID, errRuntime)
	}
	return nil
}

//go:noinline
func (r *remoteRuntimeService) StopContainer(ctx context.Context, containerID string, timeout int64) (err error) {
	if containerID == "" {
		return fmt.Errorf("StopContainer: %w: empty container id", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout+time.Duration(timeout)*time.Second)
	defer cancel()
	if err := sleep(ctx, r.unit); err != nil {
		return err
	}
	if r.fails(containerID) {
		return fmt.Errorf("StopContainer %s: %w", containerID, errRuntime)
	}
	return nil
}

//go:noinline
func (r *remoteRuntimeService) RemoveContainer(ctx context.Context, containerID string) (err error) {
	if containerID == "" {
		return fmt.Errorf("RemoveContainer: %w: empty container id", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if err := sleep(ctx, r.unit); err != nil {
		return err
	}
	if r.fails(containerID) {
		return fmt.Errorf("RemoveContainer %s: %w", containerID, errRuntime)
	}
	r.mu.Lock()
	delete(r.live, containerID)
	r.mu.Unlock()
	return nil
}

// ExecSync wraps execSyncV1 the way cri-client does.
//
//go:noinline
func (r *remoteRuntimeService) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error) {
	if containerID == "" {
		return nil, nil, fmt.Errorf("ExecSync: %w: empty container id", errInvalid)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout+timeout)
	defer cancel()
	return r.execSyncV1(ctx, containerID, cmd, timeout)
}

//go:noinline
func (r *remoteRuntimeService) execSyncV1(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout []byte, stderr []byte, err error) {
	if len(cmd) == 0 {
		return nil, nil, fmt.Errorf("ExecSync: %w: empty command", errInvalid)
	}
	if err := sleep(ctx, r.unit); err != nil {
		return nil, nil, err
	}
	if r.fails(containerID) {
		return nil, []byte("exec failed\n"), fmt.Errorf("ExecSync %s: %w", containerID, errRuntime)
	}
	return []byte(strings.Join(cmd, " ") + "\n"), nil, nil
}

//go:noinline
func (r *remoteRuntimeService) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*ContainerStatus, error) {
	if containerID == "" {
		return nil, fmt.Errorf("ContainerStatus: %w: empty container id", errInvalid)
	}
	r.mu.Lock()
	_, ok := r.live[containerID]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("ContainerStatus %s: not found", containerID)
	}
	return &ContainerStatus{ID: containerID, State: "CONTAINER_RUNNING"}, nil
}

//go:noinline
func (r *remoteRuntimeService) PodSandboxStatus(ctx context.Context, podSandBoxID string, verbose bool) (*PodSandboxStatus, error) {
	if podSandBoxID == "" {
		return nil, fmt.Errorf("PodSandboxStatus: %w: empty sandbox id", errInvalid)
	}
	return &PodSandboxStatus{ID: podSandBoxID, State: "SANDBOX_READY"}, nil
}

//go:noinline
func (r *remoteRuntimeService) ListContainers(ctx context.Context, sandboxID string) ([]*Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Container
	for id, sb := range r.live {
		if sandboxID == "" || sb == sandboxID {
			out = append(out, &Container{ID: id, PodSandboxID: sb})
		}
	}
	return out, nil
}

// PullImage wraps pullImageV1 the way cri-client does.
//
//go:noinline
func (r *remoteImageService) PullImage(ctx context.Context, image *ImageSpec, auth *AuthConfig, podSandboxConfig *PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	return r.pullImageV1(ctx, image, auth, podSandboxConfig)
}

//go:noinline
func (r *remoteImageService) pullImageV1(ctx context.Context, image *ImageSpec, auth *AuthConfig, podSandboxConfig *PodSandboxConfig) (string, error) {
	if image == nil || image.Image == "" {
		return "", fmt.Errorf("PullImage: %w: no image", errInvalid)
	}
	if err := sleep(ctx, 4*r.unit); err != nil {
		return "", err
	}
	if strings.HasSuffix(image.Image, ":fail") {
		return "", fmt.Errorf("PullImage %s: %w", image.Image, errRuntime)
	}
	ref := image.Image
	if auth != nil && auth.Username != "" {
		ref = auth.Username + "@" + ref
	}
	return "sha256:" + strconv.Itoa(len(ref)) + "-" + ref, nil
}

// sleep waits d, or returns the context's error if it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call is one line of -print output.
type call struct {
	Method    string   `json:"method"`
	Goroutine int      `json:"goroutine"`
	Round     int      `json:"round"`
	Arg       string   `json:"arg"`
	Cmd       []string `json:"cmd,omitempty"`
	Result    string   `json:"result"`
	Err       string   `json:"err"`
	StartNs   int64    `json:"start_ns"`
	EndNs     int64    `json:"end_ns"`
}

// printer writes -print lines, one at a time.
type printer struct {
	mu  sync.Mutex
	enc *json.Encoder // nil: print nothing
}

func (p *printer) print(c call) {
	if p.enc == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.enc.Encode(c); err != nil {
		fatalf("printing: %v", err)
	}
}

// fatalf reports a failure and exits. It never returns, and has no RET
// instruction: a test looks it up to see that reported.
//
//go:noinline
func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "crilike: "+format+"\n", args...)
	os.Exit(1)
	panic("unreachable")
}

// config is the command line.
type config struct {
	calls, goroutines      int
	errEvery, invalidEvery int
	unit                   time.Duration
	fresh, print           bool
}

// worker runs one pod's life per round.
type worker struct {
	cfg config
	rt  *remoteRuntimeService
	img *remoteImageService
	out *printer
	g   int
}

// timed runs fn, on a new goroutine with -fresh, and prints the call.
func (w *worker) timed(c call, fn func() (result string, err error)) {
	run := func() {
		c.StartNs = time.Now().UnixNano()
		res, err := fn()
		c.EndNs = time.Now().UnixNano()
		c.Result = res
		if err != nil {
			c.Err = err.Error()
		}
	}
	if w.cfg.fresh {
		done := make(chan struct{})
		go func() { defer close(done); run() }()
		<-done
	} else {
		run()
	}
	w.out.print(c)
}

func every(k, n int) bool { return k > 0 && n%k == 0 }

func (w *worker) round(ctx context.Context, n int) {
	rt, img := w.rt, w.img
	fail := every(w.cfg.errEvery, n)
	invalid := every(w.cfg.invalidEvery, n)
	c := call{Goroutine: w.g, Round: n}

	image := &ImageSpec{Image: fmt.Sprintf("registry.local/app-%d:v%d", w.g, n)}
	if fail {
		image.Image += ":fail"
	}
	c.Method, c.Arg = "PullImage", image.Image
	w.timed(c, func() (string, error) { return img.PullImage(ctx, image, &AuthConfig{}, nil) })

	pod := fmt.Sprintf("pod-%d-%d", w.g, n)
	sbCfg := &PodSandboxConfig{Metadata: &PodSandboxMetadata{Name: pod, UID: "uid-" + pod, Namespace: "default"}}
	handler := "runc"
	if fail {
		sbCfg.Labels = map[string]string{"fail": "true"}
	}
	if invalid {
		handler = ""
	}
	// The ids the later calls use when a call before them failed: empty ones
	// (early error returns) in an invalid round, made-up ones (late error
	// returns) in a failing round.
	sandboxID, containerID := "", ""
	if !invalid {
		sandboxID = fmt.Sprintf("sb-%d-%d", w.g, n)
		containerID = fmt.Sprintf("ctr-%d-%d-app", w.g, n)
	}
	if fail {
		rt.setFailing(true, sandboxID, containerID)
		defer rt.setFailing(false, sandboxID, containerID)
	}

	c.Method, c.Arg = "RunPodSandbox", pod
	w.timed(c, func() (string, error) {
		id, err := rt.RunPodSandbox(ctx, sbCfg, handler)
		if err == nil {
			sandboxID = id
		}
		return id, err
	})

	ctrCfg := &ContainerConfig{Name: "app", Image: image, Command: []string{"sleep", "inf"}}
	c.Method, c.Arg = "CreateContainer", sandboxID
	w.timed(c, func() (string, error) {
		id, err := rt.CreateContainer(ctx, sandboxID, ctrCfg, sbCfg)
		if err == nil {
			containerID = id
		}
		return id, err
	})

	c.Method, c.Arg = "StartContainer", containerID
	w.timed(c, func() (string, error) { return "", rt.StartContainer(ctx, containerID) })

	cmd := []string{"/bin/sh", "-c", "test -f /ready && echo " + strconv.Itoa(n)}
	c.Method, c.Arg, c.Cmd = "ExecSync", containerID, cmd
	w.timed(c, func() (string, error) {
		stdout, _, err := rt.ExecSync(ctx, containerID, cmd, time.Second)
		return string(stdout), err
	})
	c.Cmd = nil

	c.Method, c.Arg = "ContainerStatus", containerID
	w.timed(c, func() (string, error) {
		st, err := rt.ContainerStatus(ctx, containerID, false)
		if err != nil {
			return "", err
		}
		return st.State, nil
	})
	c.Method, c.Arg = "PodSandboxStatus", sandboxID
	w.timed(c, func() (string, error) {
		st, err := rt.PodSandboxStatus(ctx, sandboxID, false)
		if err != nil {
			return "", err
		}
		return st.State, nil
	})
	c.Method, c.Arg = "ListContainers", sandboxID
	w.timed(c, func() (string, error) {
		l, err := rt.ListContainers(ctx, sandboxID)
		return strconv.Itoa(len(l)), err
	})

	c.Method, c.Arg = "StopContainer", containerID
	w.timed(c, func() (string, error) { return "", rt.StopContainer(ctx, containerID, 0) })
	c.Method, c.Arg = "RemoveContainer", containerID
	w.timed(c, func() (string, error) { return "", rt.RemoveContainer(ctx, containerID) })
	c.Method, c.Arg = "StopPodSandbox", sandboxID
	w.timed(c, func() (string, error) { return "", rt.StopPodSandbox(ctx, sandboxID) })
	c.Method, c.Arg = "RemovePodSandbox", sandboxID
	w.timed(c, func() (string, error) { return "", rt.RemovePodSandbox(ctx, sandboxID) })
}

func main() {
	var cfg config
	flag.IntVar(&cfg.calls, "calls", 0, "rounds per goroutine, each one pod's life (0: until killed)")
	flag.IntVar(&cfg.goroutines, "goroutines", 4, "goroutines running rounds at once")
	flag.DurationVar(&cfg.unit, "sleep", 2*time.Millisecond, "sleep unit; every method sleeps a fixed multiple of it (see the program doc)")
	flag.IntVar(&cfg.errEvery, "err-every", 0, "every K-th round, each call fails after its sleep (0: never)")
	flag.IntVar(&cfg.invalidEvery, "invalid-every", 0, "every K-th round, the calls get an empty id and take their early error return (0: never)")
	flag.BoolVar(&cfg.fresh, "fresh", false, "run every call on a new goroutine (small stack: RunPodSandbox's prologue grows it)")
	flag.BoolVar(&cfg.print, "print", false, "print one JSON line per call on stdout")
	gate := flag.Bool("wait-stdin", false, "start calling only once a line (or EOF) arrives on stdin: lets a tracer attach first")
	flag.Parse()
	if *gate {
		bufio.NewReader(os.Stdin).ReadString('\n')
	}
	if cfg.calls < 0 || cfg.goroutines < 1 || cfg.unit < 0 || cfg.errEvery < 0 || cfg.invalidEvery < 0 {
		fatalf("-calls, -sleep, -err-every and -invalid-every must not be negative; -goroutines at least 1")
	}

	out := &printer{}
	if cfg.print {
		out.enc = json.NewEncoder(os.Stdout)
		out.enc.SetEscapeHTML(false)
		out.mu.Lock()
		fmt.Printf("{\"pid\":%d}\n", os.Getpid())
		out.mu.Unlock()
	}
	rt := &remoteRuntimeService{
		timeout: 2 * time.Minute, unit: cfg.unit,
		live: map[string]string{}, failing: map[string]bool{},
	}
	img := &remoteImageService{timeout: time.Minute, unit: cfg.unit}
	ctx := context.Background()

	var wg sync.WaitGroup
	for g := range cfg.goroutines {
		w := &worker{cfg: cfg, rt: rt, img: img, out: out, g: g}
		wg.Go(func() {
			for n := 1; cfg.calls == 0 || n <= cfg.calls; n++ {
				w.round(ctx, n)
			}
		})
	}
	wg.Wait()
}
