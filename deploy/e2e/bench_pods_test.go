//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// What the bench's pods set up, as real pods do, so that readyline's
// newer sources run under the load they would meet: every pod mounts a
// configMap and a Secret and has its service account's token (a projected
// volume), each set up by the kubelet's in-tree plugins (probed at their
// SetUpAt; the kubelet sets the configMap and the Secret up again at each
// sync of the pod, about once a minute); a few have a claim of a CSI
// volume (benchDriverName: NodeStageVolume, NodePublishVolume); in the
// churn, a few pull their image at each start while a user watches the
// starts (watchPulls), which has the content store read.

// benchDriverName is the CSI driver the bench serves (deploy/csi), a
// name of its own: an e2e run on the same node serves csi.readyline.test.
const benchDriverName = "bench.csi.readyline.test"

// How many pods of a churn round pull their image (from the node's
// registry, its layers present: the pull resolves the manifest, ~30 ms),
// and how many pods of a round, or of the steady state, have a CSI claim.
const (
	benchPullPods = 10
	benchCSIPods  = 5
)

// benchPullImage is the image the pulling pods' app runs: the node
// registry's copy of the pause image, which no pod runs by its local name.
// Not the registry's copy of localImage: the kubelet (1.37) keeps a record
// of the image it pulled, by image id, with the names it was pulled by,
// and from then on refuses the same image by another name to a pod with
// imagePullPolicy Never (ErrImageNeverPull: "not present"), which every
// pod of localImage is, the e2e tests' included.
const benchPullImage = "127.0.0.1:5000/readyline/pause:local"

// benchVolumeObjects are the ConfigMap and the Secret every bench pod
// mounts.
const benchVolumeObjects = `apiVersion: v1
kind: ConfigMap
metadata: {name: bench-config}
data: {app.conf: "listen 80\n", level: info}
---
apiVersion: v1
kind: Secret
metadata: {name: bench-secret}
stringData: {password: bench-s3cr3t}
`

// benchVolumes is the volumes and mounts of a bench pod's container, with
// claim (when not empty) mounted as volume "data".
func benchVolumes(claim string) (mounts, volumes string) {
	mounts = `    volumeMounts:
    - {name: config, mountPath: /etc/app}
    - {name: secret, mountPath: /etc/app-secret}
`
	volumes = `  volumes:
  - {name: config, configMap: {name: bench-config}}
  - {name: secret, secret: {secretName: bench-secret}}
`
	if claim != "" {
		mounts += "    - {name: data, mountPath: /data}\n"
		volumes += "  - {name: data, persistentVolumeClaim: {claimName: " + claim + "}}\n"
	}
	return mounts, volumes
}

// churnPod is a pod of a churn round: faultPod's shape (a 1 s init
// container, an exec readiness probe every second) with benchVolumes and
// the service account's token; with pull, its app is benchPullImage,
// pulled at each start, and has no probe (the pause image has no command
// to run).
func churnPod(name, claim string, pull bool) string {
	app := `  - name: app
    image: ` + localImage + `
    imagePullPolicy: Never
    command: ["sleep", "3600"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`
	if pull {
		app = "  - name: app\n    image: " + benchPullImage + "\n    imagePullPolicy: Always\n"
	}
	mounts, volumes := benchVolumes(claim)
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 0
  initContainers:
  - {name: init, image: %s, imagePullPolicy: Never, command: ["sleep", "1"]}
  containers:
%s%s%s`, name, localImage, app, mounts, volumes)
}

// benchClaims are the CSI claims of a round (or of the steady state).
type benchClaims struct {
	names []string // the claims in the namespace, data-0 ...
	pvs   []string // their volumes, deleted after the namespace
}

// make creates n claims in ns, each bound to a volume of benchDriverName.
func (c *benchClaims) make(b *testing.B, ctx context.Context, ns string, n int) {
	b.Helper()
	for i := range n {
		claim := fmt.Sprintf("data-%d", i)
		pv, err := makeClaim(ctx, benchDriverName, ns, claim, nil)
		if pv != "" {
			c.pvs = append(c.pvs, pv)
		}
		if err != nil {
			b.Fatal(err)
		}
		c.names = append(c.names, claim)
	}
}

// claim is the claim of pod i of n: the last len(c.names) pods have one.
func (c *benchClaims) claim(i, n int) string {
	if j := i - (n - len(c.names)); j >= 0 {
		return c.names[j]
	}
	return ""
}

// delete waits, once their namespace is gone, until the kubelet no longer
// has the volumes in use (unstaged: the driver may stop then), up to a
// minute, and deletes them.
func (c *benchClaims) delete(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := env.Client.CoreV1().Nodes().Get(ctx, env.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, v := range node.Status.VolumesInUse {
			for _, pv := range c.pvs {
				if strings.HasSuffix(string(v), "^"+volumeHandle(pv)) {
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		b.Logf("the kubelet still has volumes of %v in use a minute after their pods: %v", c.pvs, err)
	}
	for _, pv := range c.pvs {
		if err := env.Client.CoreV1().PersistentVolumes().Delete(ctx, pv, metav1.DeleteOptions{}); err != nil {
			b.Errorf("deleting volume %s: %v", pv, err)
		}
	}
}

// watchPulls asks the daemon about pods in turn, one question every 250
// ms (four users' `readyline explain --watch` on the starts that pull),
// each until its start is over (or stop is called, which returns how
// many it asked): a question that finds a PullImage in flight on the node
// has the content store read.
func watchPulls(ctx context.Context, d *Daemon, ns string, pods []string) (stop func() int) {
	ctx, cancel := context.WithCancel(ctx)
	asked := make(chan int, 1)
	left := slices.Clone(pods)
	go func() {
		n := 0
		defer func() { asked <- n }()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for i := 0; len(left) > 0; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// A pod not known yet, or the API busy: asked again in turn.
			pod := left[i%len(left)]
			tl, err := apiclient.FetchTimeline(ctx, d.APIURL, ns, pod)
			n++
			if err == nil && tl.Outcome != correlator.OutcomeStarting {
				left = slices.DeleteFunc(left, func(p string) bool { return p == pod })
			}
		}
	}()
	return func() int { cancel(); return <-asked }
}

// startBenchDriver serves benchDriverName for the benchmark.
func startBenchDriver(b *testing.B, ctx context.Context) {
	b.Helper()
	startDriver(b, ctx, benchDriverName, driverNeeds{})
}

// applyBenchVolumeObjects creates benchVolumeObjects in ns.
func applyBenchVolumeObjects(b *testing.B, ctx context.Context, ns string) {
	b.Helper()
	if _, err := env.Apply(ctx, ns, []byte(benchVolumeObjects)); err != nil {
		b.Fatal(err)
	}
}

// podNames are prefix-000 ... for n pods.
func podNames(prefix string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return names
}
