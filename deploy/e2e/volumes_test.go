//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/deploy/csi"
	"github.com/readyline/readyline/deploy/e2e/jaeger"
	"github.com/readyline/readyline/exporter"
)

// csiDriverName is the test CSI driver's name (deploy/csi).
const csiDriverName = "csi.readyline.test"

// The test CSI drivers, each shared by the tests that run at once: one
// socket per driver name on the node.
var (
	csiMu      sync.Mutex
	csiRunning = map[string]*sharedDriver{}
)

// sharedDriver is a driver served and the tests that use it.
type sharedDriver struct {
	d            *csi.Driver
	users        int
	provisioning bool               // its provisioner runs
	stop         context.CancelFunc // its attacher's and its provisioner's
	ctx          context.Context    // theirs
}

// attachDriverName is the test driver whose volumes need attaching.
const attachDriverName = "attach.csi.readyline.test"

// provisionDriverName is the test driver whose provisioner the
// provisioning tests use (a name of their own: no other test's process
// serves it).
const provisionDriverName = "provision.csi.readyline.test"

// driverNeeds is what a test needs of a test driver besides its node
// plugin. The tests that share a driver name agree on attach.
type driverNeeds struct {
	// attach: its volumes need attaching (a CSIDriver with
	// attachRequired, and the driver's attacher).
	attach bool
	// provision: the driver's provisioner makes the volumes of its
	// StorageClasses' claims.
	provision bool
}

// startDriver serves deploy/csi's driver name to the node's kubelet from
// this process while a test uses it (the first user starts it, the last
// stops it): it is registered through the kubelet's plugin registration
// socket (it waits for the kubelet to say it registered it), with a
// CSIDriver object that needs an attach when needs.attach is set (the
// driver then runs its attacher); its provisioner runs from the first
// user that needs it. Cleanups registered after this one run first: a
// test deletes its pods, which the kubelet cannot finish without the
// driver, before the driver stops.
func startDriver(t testing.TB, ctx context.Context, name string, needs driverNeeds) *csi.Driver {
	t.Helper()
	csiMu.Lock()
	defer csiMu.Unlock()
	sd := csiRunning[name]
	if sd == nil {
		_, err := env.Client.StorageV1().CSIDrivers().Create(ctx, &storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       storagev1.CSIDriverSpec{AttachRequired: &needs.attach},
		}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		d := &csi.Driver{Name: name, NodeID: env.NodeName}
		if err := d.Serve(filepath.Join(env.NodeDir, "kubelet")); err != nil {
			t.Fatal(err)
		}
		select {
		case <-d.Registered():
		case <-time.After(time.Minute):
			d.Stop()
			t.Fatalf("the kubelet did not register %s within a minute", name)
		}
		actx, stop := context.WithCancel(context.Background())
		if needs.attach {
			go d.Attach(actx, env.Client)
		}
		sd = &sharedDriver{d: d, stop: stop, ctx: actx}
		csiRunning[name] = sd
	}
	if needs.provision && !sd.provisioning {
		sd.provisioning = true
		go sd.d.Provision(sd.ctx, env.Client)
	}
	sd.users++
	t.Cleanup(func() {
		csiMu.Lock()
		defer csiMu.Unlock()
		if sd.users--; sd.users == 0 {
			sd.stop()
			sd.d.Stop()
			delete(csiRunning, name)
		}
	})
	return sd.d
}

// claimOf creates a PersistentVolume of the test driver with attrs and a
// claim in ns bound to it; the volume is deleted after the test's pods.
func claimOf(t *testing.T, ctx context.Context, driver, ns, claim string, attrs map[string]string) string {
	t.Helper()
	pv, err := makeClaim(ctx, driver, ns, claim, attrs)
	if pv != "" {
		t.Cleanup(func() {
			cctx, cancel := suiteContext(time.Minute)
			defer cancel()
			if err := env.Client.CoreV1().PersistentVolumes().Delete(cctx, pv, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting volume %s: %v", pv, err)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

// makeClaim creates a PersistentVolume of driver with attrs, named
// ns-claim, and a claim in ns bound to it; it returns the volume's name
// once the volume is made, for its caller to delete (the claim goes with
// ns).
func makeClaim(ctx context.Context, driver, ns, claim string, attrs map[string]string) (string, error) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + claim},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: volumeHandle(ns + "-" + claim), VolumeAttributes: attrs}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("creating volume %s: %w", pv.Name, err)
	}
	empty := ""
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claim},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &empty,
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := env.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		return pv.Name, fmt.Errorf("creating claim %s/%s: %w", ns, claim, err)
	}
	return pv.Name, nil
}

// volumeHandle is the CSI volume handle of claimOf's PersistentVolume pv.
func volumeHandle(pv string) string { return "vol-" + pv }

// waitUnstaged waits, in a cleanup that runs after the ones registered
// later (the pod's deletion), for the kubelet to unstage the volume of
// PersistentVolume pv (its handle is claimOf's): a driver stopped before
// leaves the kubelet retrying it.
func waitUnstaged(t *testing.T, d *csi.Driver, pv string) {
	t.Cleanup(func() {
		handle := volumeHandle(pv)
		deadline := time.Now().Add(time.Minute)
		for !slices.ContainsFunc(d.Calls(), func(c csi.Call) bool { return c.Method == "NodeUnstageVolume" && c.VolumeID == handle }) {
			if time.Now().After(deadline) {
				t.Errorf("the kubelet did not unstage %s within a minute of its pod's deletion", handle)
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// deletePodAndWait deletes ns/name in a cleanup, before the ones
// registered earlier run (the CSI driver's stop), and waits for it to be
// gone: the kubelet removes a pod only once its volumes are unpublished.
func deletePodAndWait(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		ctx, cancel := suiteContext(2 * time.Minute)
		defer cancel()
		grace := int64(0)
		err := env.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		if apierrors.IsNotFound(err) {
			return
		}
		err = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			_, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Errorf("pod %s/%s not gone within 2 minutes of its deletion: %v", ns, name, err)
		}
	})
}

// volumeNamed is the setup of tl's volume name.
func volumeNamed(t *testing.T, tl *correlator.Timeline, name string) correlator.VolumeSetup {
	t.Helper()
	for _, v := range tl.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("no volume %s in %+v", name, tl.Volumes)
	return correlator.VolumeSetup{}
}

// waitPhase is tl's wait before the sandbox.
func waitPhase(t *testing.T, tl *correlator.Timeline) correlator.Phase {
	t.Helper()
	i := slices.IndexFunc(tl.Phases, func(p correlator.Phase) bool { return p.Name == correlator.PhaseWaitSandbox })
	if i < 0 {
		t.Fatalf("no %s in %+v", correlator.PhaseWaitSandbox, tl.Phases)
	}
	return tl.Phases[i]
}

// claimPodManifest is onePodManifest's pod with claim mounted as volume
// "data".
func claimPodManifest(name, claim string) string {
	return onePodManifest(name, localImage, corev1.PullNever) + `    volumeMounts: [{name: data, mountPath: /data}]
  volumes:
  - name: data
    persistentVolumeClaim: {claimName: ` + claim + `}
`
}

// claimPod is a test's pod with a claim ("data-claim", mounted as volume
// "data") of a test driver's volume.
type claimPod struct {
	d        *Daemon
	ctx      context.Context
	driver   *csi.Driver
	ns, name string
	pv       string // the claim's PersistentVolume
	rec      *PodRecorder
}

// startClaimPod serves the test driver (attach: the one whose volumes need
// attaching), makes its volume with attrs and the claim in a new
// namespace, and applies pod name; its cleanups delete the pod, wait for
// the volume's unstage (unless it never attaches) and stop the driver.
func startClaimPod(t *testing.T, timeout time.Duration, attach bool, name string, attrs map[string]string) *claimPod {
	t.Helper()
	c := &claimPod{d: readyline(t), ctx: testContext(t, timeout), name: name}
	driverName := csiDriverName
	if attach {
		driverName = attachDriverName
	}
	c.driver = startDriver(t, c.ctx, driverName, driverNeeds{attach: attach})
	c.ns = newNamespace(t)
	c.pv = claimOf(t, c.ctx, driverName, c.ns, "data-claim", attrs)
	c.rec = recordPod(t, c.ns, name)
	if attrs[csi.AttrAttachDelay] != "never" {
		waitUnstaged(t, c.driver, c.pv)
	}
	deletePodAndWait(t, c.ns, name)
	if _, err := env.Apply(c.ctx, c.ns, []byte(claimPodManifest(name, "data-claim"))); err != nil {
		t.Fatal(err)
	}
	return c
}

// readyTimeline waits for the pod to be Ready and returns its timeline.
func (c *claimPod) readyTimeline(t *testing.T) *correlator.Timeline {
	t.Helper()
	if _, err := c.rec.WaitFor(c.ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl, err := c.d.Timeline(c.ctx, c.ns, c.name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// TestVolumeStageInFlight: a pod whose claim's CSI driver stages the
// volume for 5 s and publishes it in 1 s is told, while it waits, by the
// volume and the step in flight ("volume data: NodeStageVolume 2.1s so far
// (csi.readyline.test)"), in the API and in explain; once Ready, its
// timeline has the two calls as the kubelet made them (bounding the
// driver's own stamps), the critical path and the breakdown give the wait
// to them, and the trace has the volume's span with its calls.
func TestVolumeStageInFlight(t *testing.T) {
	t.Parallel()
	const name = "staged"
	c := startClaimPod(t, 4*time.Minute, false, name, map[string]string{csi.AttrStageDelay: "5s", csi.AttrPublishDelay: "1s"})
	d, ctx, driver, ns, pvName, rec := c.d, c.ctx, c.driver, c.ns, c.pv, c.rec
	ev, err := rec.WaitFor(ctx, func(*corev1.Pod) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ev.Pod.UID)

	// While the driver stages: the daemon says so.
	inFlight := regexp.MustCompile(`volume data: NodeStageVolume \d+(\.\d+)?m?s so far \(` + regexp.QuoteMeta(csiDriverName) + `\)`)
	var waiting, text string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
		var tl *correlator.Timeline
		tl, text = askWhileStarting(t, ctx, d, ns, name, uid)
		waiting = tl.Waiting
		if inFlight.MatchString(waiting) {
			break
		}
	}
	if !inFlight.MatchString(waiting) || !inFlight.MatchString(text) {
		t.Errorf("while the volume was staged, waiting %q and explain\n%s\nwant %q in both", waiting, text, inFlight)
	}
	if !strings.Contains(text, "volume data NodeStageVolume (in") { // the label may be cut
		t.Errorf("explain's waterfall has no open bar of the stage:\n%s", text)
	}

	tl := c.readyTimeline(t)
	data := volumeNamed(t, tl, "data")
	if data.Source != pvName || data.Driver != csiDriverName {
		t.Fatalf("volume data %+v, want %s's of %s", data, pvName, csiDriverName)
	}
	calls := data.Calls
	served := driver.Calls()
	methods := []event.CRIMethod{event.CSINodeStageVolume, event.CSINodePublishVolume}
	if len(calls) != 2 || calls[0].Method != methods[0] || calls[1].Method != methods[1] {
		t.Fatalf("the volume's calls %+v, want NodeStageVolume then NodePublishVolume", calls)
	}
	// The kubelet's call (the uprobe's stamps, at its client's entry and
	// return) encloses the driver's handling of it (the driver's stamps).
	const slack = 5 * time.Millisecond
	handle := volumeHandle(pvName)
	for i, c := range calls {
		j := slices.IndexFunc(served, func(s csi.Call) bool { return s.Method == c.Method.Short() && s.VolumeID == handle })
		if j < 0 {
			t.Errorf("the driver served no %s: %+v", c.Method.Short(), served)
			continue
		}
		s := served[j]
		t.Logf("%s: readyline %v (kubelet's call), driver %v; began %v before the driver, ended %v after",
			c.Method.Short(), c.End.Sub(c.Start).Round(time.Millisecond), s.End.Sub(s.Start).Round(time.Millisecond),
			s.Start.Sub(c.Start).Round(10*time.Microsecond), c.End.Sub(s.End).Round(10*time.Microsecond))
		if c.Start.After(s.Start.Add(slack)) || c.End.Before(s.End.Add(-slack)) {
			t.Errorf("call %d %s [%v, %v] does not enclose the driver's [%v, %v]", i, c.Method, c.Start, c.End, s.Start, s.End)
		}
	}
	stage := regexp.MustCompile(`^volume data: NodeStageVolume 5\.\ds \(` + regexp.QuoteMeta(csiDriverName) + `\)$`)
	var steps []string
	found := false
	for _, st := range tl.CriticalPath {
		if st.Kind == correlator.ShareWaitVolumes {
			steps = append(steps, st.What)
			found = found || stage.MatchString(st.What)
		}
	}
	if !found {
		t.Errorf("the critical path's volume steps %q: want one matching %s", steps, stage)
	}
	var volumes time.Duration
	for _, s := range tl.Breakdown {
		if s.Kind == correlator.ShareWaitVolumes {
			volumes = s.Duration
		}
	}
	// Bounded by the stamps it is made of: at least the two calls (the
	// kubelet's, which enclose the driver's), at most the wait they lie in.
	wait := waitPhase(t, tl)
	var callsTook time.Duration
	for _, c := range calls {
		callsTook += c.End.Sub(c.Start)
	}
	if volumes < callsTook || volumes > wait.End.Sub(wait.Start) {
		t.Errorf("where the time went: %v waiting for volumes, want the calls' %v at least and the wait's %v at most: %+v",
			volumes, callsTook, wait.End.Sub(wait.Start), tl.Breakdown)
	}

	tr, err := env.Jaeger.WaitForTrace(ctx, TraceIDFromPodUID(uid), 5, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tr.Spans, func(s jaeger.Span) bool {
		return s.OperationName == exporter.SpanVolumeSetup && tagString(s, "k8s.volume.name") == "data"
	})
	if i < 0 || tagString(tr.Spans[i], string(exporter.AttrVolumeCSIDriver)) != csiDriverName {
		t.Errorf("trace %s: no volume.setup span of data by %s", tr.TraceID, csiDriverName)
	}
	if _, ok := tr.SpanByName(string(event.CSINodeStageVolume)); !ok {
		t.Errorf("trace %s has no %s span", tr.TraceID, event.CSINodeStageVolume)
	}
}

// TestVolumePublishFailsTwice: a driver whose publish fails twice: the
// timeline has the stage, the two failed publishes (the kubelet's retries
// on back-off) and the one that worked; the critical path gives each its
// time, the back-off between them to the kubelet's FailedMount words, and
// explain draws the failed ones.
func TestVolumePublishFailsTwice(t *testing.T) {
	t.Parallel()
	const name = "republished"
	c := startClaimPod(t, 4*time.Minute, false, name, map[string]string{csi.AttrPublishDelay: "200ms", csi.AttrPublishFailures: "2"})
	d, ctx, ns := c.d, c.ctx, c.ns
	tl := c.readyTimeline(t)
	var got []string
	for _, c := range volumeNamed(t, tl, "data").Calls {
		got = append(got, fmt.Sprintf("%s err=%v", c.Method.Short(), c.Err))
	}
	want := "NodeStageVolume err=false, NodePublishVolume err=true, NodePublishVolume err=true, NodePublishVolume err=false"
	if strings.Join(got, ", ") != want {
		t.Errorf("the volume's calls %q, want %q", got, want)
	}
	failed := regexp.MustCompile(`^volume data: NodePublishVolume \d+ms failed \(` + regexp.QuoteMeta(csiDriverName) + `\)$`)
	n := 0
	for _, st := range tl.CriticalPath {
		if failed.MatchString(st.What) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d failed publishes on the critical path, want 2: %+v", n, tl.CriticalPath)
	}
	out, err := exec.CommandContext(ctx, d.Bin, "explain", "--api-addr", strings.TrimPrefix(d.APIURL, "http://"), ns+"/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("readyline explain: %v\n%s", err, out)
	}
	if c := strings.Count(string(out), "volume data NodePublishVolume ✗"); c != 2 {
		t.Errorf("explain draws %d failed publishes, want 2:\n%s", c, out)
	}
}

// TestVolumesInTree: a pod with ten configMap, Secret and projected
// volumes, one of whose Secrets is created only after the pod: while it
// waits, the start says so in the kubelet's words; once Ready, each volume
// is in its timeline by its name and plugin, the Secret's with the failed
// setups before the one that worked.
func TestVolumesInTree(t *testing.T) {
	t.Parallel()
	d := readyline(t)
	ctx := testContext(t, 4*time.Minute)
	ns := newNamespace(t)
	const name = "ten-volumes"
	var objects, mounts, volumes strings.Builder
	for i := range 4 {
		fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {key: value-%d}\n", i, i)
		fmt.Fprintf(&volumes, "  - {name: cm-%d, configMap: {name: cm-%d}}\n", i, i)
	}
	for i := range 3 {
		if i > 0 { // secret-0 comes later
			fmt.Fprintf(&objects, "---\napiVersion: v1\nkind: Secret\nmetadata: {name: secret-%d}\nstringData: {key: s3cr3t-%d}\n", i, i)
		}
		fmt.Fprintf(&volumes, "  - {name: secret-%d, secret: {secretName: secret-%d}}\n", i, i)
		fmt.Fprintf(&volumes, "  - {name: proj-%d, projected: {sources: [{configMap: {name: cm-%d}}, {downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}}]}}\n", i, i)
	}
	for i := range 4 {
		fmt.Fprintf(&mounts, "    - {name: cm-%d, mountPath: /cm/%d}\n", i, i)
	}
	for i := range 3 {
		fmt.Fprintf(&mounts, "    - {name: secret-%d, mountPath: /secret/%d}\n    - {name: proj-%d, mountPath: /proj/%d}\n", i, i, i, i)
	}
	rec := recordPod(t, ns, name)
	if _, err := env.Apply(ctx, ns, []byte(objects.String())); err != nil {
		t.Fatal(err)
	}
	manifest := onePodManifest(name, localImage, corev1.PullNever) + "    volumeMounts:\n" + mounts.String() + "  volumes:\n" + volumes.String()
	if _, err := env.Apply(ctx, ns, []byte(manifest)); err != nil {
		t.Fatal(err)
	}
	ev, err := rec.WaitFor(ctx, func(*corev1.Pod) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ev.Pod.UID)
	// While secret-0 is missing, the kubelet's FailedMount says so.
	var waiting string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		tl, _ := askWhileStarting(t, ctx, d, ns, name, uid)
		if waiting = tl.Waiting; strings.Contains(waiting, `volume secret-0: secret "secret-0" not found`) {
			break
		}
	}
	if !strings.Contains(waiting, `volume secret-0: secret "secret-0" not found`) {
		t.Errorf("while secret-0 was missing, waiting %q", waiting)
	}
	if _, err := env.Apply(ctx, ns, []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: secret-0}\nstringData: {key: s3cr3t-0}\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := rec.WaitFor(ctx, ConditionTrue(corev1.PodReady)); err != nil {
		t.Fatal(err)
	}
	tl, err := d.Timeline(ctx, ns, name, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	plugins := map[string]string{}
	var secret0 []correlator.CRICall
	for _, v := range tl.Volumes {
		plugins[v.Name] = v.Driver
		if v.Name == "secret-0" {
			secret0 = v.Calls
		}
	}
	for i := range 4 {
		if p := plugins[fmt.Sprintf("cm-%d", i)]; p != "kubernetes.io/configmap" {
			t.Errorf("cm-%d: plugin %q, want kubernetes.io/configmap", i, p)
		}
	}
	for i := range 3 {
		if p := plugins[fmt.Sprintf("secret-%d", i)]; p != "kubernetes.io/secret" {
			t.Errorf("secret-%d: plugin %q, want kubernetes.io/secret", i, p)
		}
		if p := plugins[fmt.Sprintf("proj-%d", i)]; p != "kubernetes.io/projected" {
			t.Errorf("proj-%d: plugin %q, want kubernetes.io/projected", i, p)
		}
	}
	if len(secret0) < 2 || !secret0[0].Err || secret0[len(secret0)-1].Err {
		t.Errorf("secret-0's setups %+v, want failed ones, then one that worked", secret0)
	}
	t.Logf("%d volumes set up; secret-0 in %d steps", len(tl.Volumes), len(secret0))
}

// TestVolumeAttach: a volume whose driver needs it attached (its attacher
// takes 3 s): the timeline's attach runs from the pod's arrival on the
// node to the kubelet's WaitForAttach, after the driver's attacher marked
// the VolumeAttachment attached, and is a step of the critical path.
func TestVolumeAttach(t *testing.T) {
	t.Parallel()
	c := startClaimPod(t, 4*time.Minute, true, "attached", map[string]string{csi.AttrAttachDelay: "3s", csi.AttrStageDelay: "500ms"})
	driver, pvName := c.driver, c.pv
	tl := c.readyTimeline(t)
	v := volumeNamed(t, tl, "data")
	if v.Attach == nil || v.Driver != attachDriverName {
		t.Fatalf("volume data %+v: want its attach, of %s", v, attachDriverName)
	}
	handle := volumeHandle(pvName)
	i := slices.IndexFunc(driver.Calls(), func(c csi.Call) bool { return c.Method == "ControllerPublishVolume" && c.VolumeID == handle })
	if i < 0 {
		t.Fatalf("the driver's attacher did not attach %s: %+v", handle, driver.Calls())
	}
	attached := driver.Calls()[i]
	took := v.Attach.End.Sub(v.Attach.Start)
	t.Logf("attach: readyline %v (the pod's arrival to WaitForAttach), the driver's attacher %v (the VolumeAttachment seen to attached); WaitForAttach returned %v after the attacher's update",
		took.Round(time.Millisecond), attached.End.Sub(attached.Start).Round(time.Millisecond), v.Attach.End.Sub(attached.End).Round(time.Millisecond))
	// The attach runs from the wait's start (the pod's arrival) to the
	// kubelet's WaitForAttach, which returns only after the attacher's
	// update: bounded by those stamps, not by the attacher's delay.
	wait := waitPhase(t, tl)
	if !v.Attach.Start.Equal(wait.Start) || v.Attach.End.Before(attached.End) {
		t.Errorf("attach [%v, %v] (%v), want it from the wait's start %v to after the attacher's update at %v",
			v.Attach.Start, v.Attach.End, took, wait.Start, attached.End)
	}
	want := regexp.MustCompile(`^volume data: attached after \d+\.\ds \(` + regexp.QuoteMeta(attachDriverName) + `\)$`)
	if !slices.ContainsFunc(tl.CriticalPath, func(st correlator.Step) bool { return want.MatchString(st.What) }) {
		t.Errorf("critical path %+v: no step matching %s", tl.CriticalPath, want)
	}
}

// TestVolumeNeverAttaches: a volume whose attacher never attaches it: the
// pod waits before its sandbox; 5 s in, the start says the volume has not
// been set up (no call to its driver), and once the attach/detach
// controller gives up (2 minutes) it says so in the controller's words.
func TestVolumeNeverAttaches(t *testing.T) {
	t.Parallel()
	const name = "unattached"
	c := startClaimPod(t, 6*time.Minute, true, name, map[string]string{csi.AttrAttachDelay: "never"})
	d, ctx, ns, rec := c.d, c.ctx, c.ns, c.rec
	ev, err := rec.WaitFor(ctx, func(*corev1.Pod) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	uid := string(ev.Pod.UID)
	// The waits the start tells, in order.
	for _, w := range []struct {
		within time.Duration
		says   *regexp.Regexp
	}{
		{30 * time.Second, regexp.MustCompile(`volume data: not set up after \S+ \(the kubelet has made no call to its driver`)},
		{3 * time.Minute, regexp.MustCompile(`volume \S+: timed out waiting for external-attacher of ` + regexp.QuoteMeta(attachDriverName) + `|unattached volumes=\[data\]`)},
	} {
		var waiting string
		for deadline := time.Now().Add(w.within); time.Now().Before(deadline) && !w.says.MatchString(waiting); time.Sleep(2 * time.Second) {
			tl, _ := askWhileStarting(t, ctx, d, ns, name, uid)
			if waiting = tl.Waiting; tl.Sandbox != nil {
				t.Fatalf("a sandbox %+v for a pod whose volume never attached", tl.Sandbox)
			}
		}
		if !w.says.MatchString(waiting) {
			t.Errorf("waiting %q %v in: want %s", waiting, w.within, w.says)
		}
	}
}
