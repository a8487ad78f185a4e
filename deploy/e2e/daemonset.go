//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The DaemonSet of deploy/base as its overlays name it.
const (
	ReadylineNamespace = "readyline"
	ReadylineDaemonSet = "readyline"
	// ReadylineServiceAccount is the user the daemon's requests are
	// authorized as.
	ReadylineServiceAccount = "system:serviceaccount:readyline:readyline"
	// NodeImage is what `make node-image` imports into the node.
	NodeImage = "localhost/readyline:dev"
)

// Kubectl runs the kubectl node.sh built (Tool; the preinstalled kubectl 1.32
// loses watches against a 1.37 API server) against the node
// as cluster-admin, with stdin when it is not nil, and returns its stdout.
// The error carries stderr.
func (e *Env) Kubectl(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	kubectl, err := Tool("kubectl")
	if err != nil {
		return nil, err
	}
	args = append([]string{"--kubeconfig", e.Kubeconfig, "--cache-dir", filepath.Join(e.NodeDir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, kubectl, args...)
	cmd.Dir = e.RepoRoot
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args[4:], " "), err, stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// BuildNodeImage runs `make node-image`: readyline built from the working
// tree, written as an image archive without Docker and imported into the
// node's containerd as NodeImage.
func (e *Env) BuildNodeImage(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", "node-image")
	cmd.Dir = e.RepoRoot
	cmd.Env = append(os.Environ(), "NODE_DIR="+e.NodeDir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("make node-image: %w\n%s", err, out)
	}
	return nil
}

// Deployment is readyline running as the DaemonSet of an overlay (a
// kustomization directory such as deploy/local).
type Deployment struct {
	env *Env
	// Overlay is the kustomization directory, relative to the repository.
	Overlay string
	// Pod is the DaemonSet's pod on this node, as it was when it became
	// Ready; ReadyAfter is the time from `kubectl apply -k` to then.
	Pod        *corev1.Pod
	ReadyAfter time.Duration
}

// Deploy applies overlay with `kubectl apply -k` and waits until the
// DaemonSet's pod on this node is Ready. It refuses to when another
// `readyline run` is running on the host: two daemons would export every
// pod start into the same trace. Delete undoes it.
func (e *Env) Deploy(ctx context.Context, overlay string, timeout time.Duration) (*Deployment, error) {
	if others := otherDaemons(); len(others) > 0 {
		return nil, fmt.Errorf("another 'readyline run' is running (pids %v); it would send the same traces", others)
	}
	d := &Deployment{env: e, Overlay: overlay}
	start := time.Now()
	if _, err := e.Kubectl(ctx, nil, "apply", "-k", overlay); err != nil {
		return d, err
	}
	pods := e.Client.CoreV1().Pods(ReadylineNamespace)
	selector := fields.OneTermEqualSelector("spec.nodeName", e.NodeName).String()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, nil // the namespace's informers may lag
		}
		for i := range list.Items {
			p := &list.Items[i]
			if p.DeletionTimestamp != nil || !isDaemonSetPod(p) {
				continue
			}
			last = p
			if ConditionStatus(p, corev1.PodReady) == corev1.ConditionTrue {
				d.Pod, d.ReadyAfter = p, time.Since(start)
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		state := "no pod"
		if last != nil {
			state = "pod " + last.Name + ": " + DescribeStatus(last)
			if logs, lerr := e.podLogs(ctx, last); lerr == nil {
				state += "\n" + logs
			}
		}
		return d, fmt.Errorf("waiting for the %s DaemonSet's pod on %s to be Ready: %w (%s)", overlay, e.NodeName, err, state)
	}
	return d, nil
}

func isDaemonSetPod(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Name == ReadylineDaemonSet {
			return true
		}
	}
	return false
}

// Logs returns the log of the daemon in the deployment's pod.
func (d *Deployment) Logs(ctx context.Context) (string, error) {
	if d.Pod == nil {
		return "", errors.New("no pod")
	}
	return d.env.podLogs(ctx, d.Pod)
}

func (e *Env) podLogs(ctx context.Context, p *corev1.Pod) (string, error) {
	b, err := e.Client.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	return string(b), err
}

// Delete deletes what the overlay created (`kubectl delete -k`, the
// namespace with it) and waits until the namespace is gone and no
// `readyline run` process is left on the host, so that the next test can
// run its own daemon.
func (d *Deployment) Delete(ctx context.Context, timeout time.Duration) error {
	e := d.env
	if _, err := e.Kubectl(ctx, nil, "delete", "-k", d.Overlay, "--ignore-not-found", "--wait=false"); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := e.Client.CoreV1().Namespaces().Get(ctx, ReadylineNamespace, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return false, err
		}
		return apierrors.IsNotFound(err) && len(otherDaemons()) == 0, nil
	})
}

// ContainerUsage is a container's resource use as the kubelet reports it
// (its stats summary API, the source of metrics-server).
type ContainerUsage struct {
	Time time.Time
	// CPU is the cumulative CPU time; WorkingSet the memory the kubelet
	// counts against limits and evictions.
	CPU        time.Duration
	WorkingSet uint64
}

// Usage reads the readyline container's usage from the kubelet's
// /stats/summary (through the API server's node proxy).
func (d *Deployment) Usage(ctx context.Context) (ContainerUsage, error) {
	if d.Pod == nil {
		return ContainerUsage{}, errors.New("no pod")
	}
	b, err := d.env.Client.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", d.env.NodeName, "proxy", "stats", "summary").DoRaw(ctx)
	if err != nil {
		return ContainerUsage{}, fmt.Errorf("reading the kubelet's stats summary: %w", err)
	}
	var summary struct {
		Pods []struct {
			PodRef struct {
				UID string `json:"uid"`
			} `json:"podRef"`
			Containers []struct {
				Name string `json:"name"`
				CPU  struct {
					Time                 time.Time `json:"time"`
					UsageCoreNanoSeconds uint64    `json:"usageCoreNanoSeconds"`
				} `json:"cpu"`
				Memory struct {
					WorkingSetBytes uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(b, &summary); err != nil {
		return ContainerUsage{}, fmt.Errorf("decoding the kubelet's stats summary: %w", err)
	}
	for _, p := range summary.Pods {
		if p.PodRef.UID != string(d.Pod.UID) {
			continue
		}
		for _, c := range p.Containers {
			if c.Name == "readyline" {
				return ContainerUsage{Time: c.CPU.Time, CPU: time.Duration(c.CPU.UsageCoreNanoSeconds),
					WorkingSet: c.Memory.WorkingSetBytes}, nil
			}
		}
	}
	return ContainerUsage{}, fmt.Errorf("the kubelet's stats summary has no readyline container of pod %s", d.Pod.Name)
}

// CPUBetween returns the CPU the container used per second of wall time
// between two readings, in millicores.
func CPUBetween(a, b ContainerUsage) float64 {
	wall := b.Time.Sub(a.Time)
	if wall <= 0 {
		return 0
	}
	return float64(b.CPU-a.CPU) / float64(wall) * 1000
}

// JaegerV2Version is the Jaeger v2 release of the Jaeger module node.sh
// builds (v1.75.0 / v2.12.0 are one release), and the tag of the official
// image deploy/kind runs.
const JaegerV2Version = "2.12.0"

// ImportJaegerImage writes the Jaeger node.sh built (the same release as
// the official jaegertracing/jaeger image, without the UI's assets) as an
// image like the official one, named ref, and imports it into the node: an
// entrypoint with no arguments runs the all-in-one configuration on every
// interface (JAEGER_LISTEN_HOST=0.0.0.0), as uid 10001.
func (e *Env) ImportJaegerImage(ctx context.Context, ref, dir string) error {
	mod, err := os.ReadFile(filepath.Join(e.RepoRoot, "deploy", "node", "tools", "jaeger", "go.mod"))
	if err != nil {
		return err
	}
	const moduleVersion = "v1.75.0"
	if !bytes.Contains(mod, []byte("github.com/jaegertracing/jaeger "+moduleVersion)) {
		return fmt.Errorf("deploy/node builds another Jaeger than %s (v%s): update JaegerV2Version and deploy/kind", moduleVersion, JaegerV2Version)
	}
	bin, err := Tool("jaeger")
	if err != nil {
		return err
	}
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "cmd", "jaeger"), 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(rootfs, "tmp"), 0o1777); err != nil {
		return err
	}
	if err := os.Chmod(filepath.Join(rootfs, "tmp"), 0o1777); err != nil { // umask
		return err
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return fmt.Errorf("the Jaeger node.sh builds: %w", err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "cmd", "jaeger", "jaeger-linux"), b, 0o755); err != nil {
		return err
	}
	return e.importImage(ctx, rootfs, ref, filepath.Join(dir, "jaeger.tar"),
		"-entrypoint", `["/cmd/jaeger/jaeger-linux"]`, "-env", "JAEGER_LISTEN_HOST=0.0.0.0", "-user", "10001")
}

// ImportGoImage builds the Go program in pkg (a directory of the
// repository, e.g. ./deploy/e2e/testdata/connflood), static, as the one
// file of an image named ref whose entrypoint it is, and imports that into
// the node: a pod of the tests' own, with no base image and no registry.
// dir holds the build.
func (e *Env) ImportGoImage(ctx context.Context, pkg, ref, dir string) error {
	name := filepath.Base(pkg)
	rootfs := filepath.Join(dir, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return err
	}
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", filepath.Join(rootfs, name), pkg)
	build.Dir, build.Env = e.RepoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, out)
	}
	return e.importImage(ctx, rootfs, ref, filepath.Join(dir, name+".tar"), "-entrypoint", `["/`+name+`"]`)
}

// importImage writes rootfs as the image ref (deploy/node/mkimage, with
// more of its flags in mkimage) to archive and imports it into the node's
// containerd.
func (e *Env) importImage(ctx context.Context, rootfs, ref, archive string, mkimage ...string) error {
	for _, args := range [][]string{
		append([]string{"go", "run", "./deploy/node/mkimage", "-rootfs", rootfs, "-ref", ref, "-o", archive}, mkimage...),
		{filepath.Join(e.RepoRoot, "deploy", "node", "node.sh"), "import-image", archive},
	} {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir = e.RepoRoot
		cmd.Env = append(os.Environ(), "NODE_DIR="+e.NodeDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// PortForward runs `kubectl port-forward` to target (e.g. service/jaeger)
// in namespace from a free local port, and returns that port's URL and a
// function that ends it.
func (e *Env) PortForward(ctx context.Context, namespace, target string, port int) (string, func(), error) {
	kubectl, err := Tool("kubectl")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", e.Kubeconfig, "-n", namespace,
		"port-forward", target, fmt.Sprintf(":%d", port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	// "Forwarding from 127.0.0.1:41234 -> 16686"
	line, err := bufio.NewReader(out).ReadString('\n')
	var local int
	if err == nil {
		_, err = fmt.Sscanf(line, "Forwarding from 127.0.0.1:%d", &local)
	}
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("kubectl port-forward %s: %q: %w", target, line, err)
	}
	go io.Copy(io.Discard, out)
	return fmt.Sprintf("http://127.0.0.1:%d", local), stop, nil
}
