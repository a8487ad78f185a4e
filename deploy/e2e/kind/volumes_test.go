//go:build e2e

package kind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/readyline/readyline/deploy/e2e"
)

// TestVolumeStageOnKind: the worker's kubelet calls a CSI driver (deploy/csi,
// run in the worker's container, registered through the kubelet's plugin
// registration socket) that stages a claim's volume for 5 s: while the
// pod waits, the worker's readyline says so in explain; once Ready, its
// waterfall has the stage and the wait given to volumes, and its trace
// the volume's span with the call.
func TestVolumeStageOnKind(t *testing.T) {
	ctx := context.Background()
	const driver, pod, bin, log = "csi.readyline.test", "staged", "/usr/local/bin/readyline-test-csi", "/tmp/readyline-test-csi.log"
	ns := fmt.Sprintf("readyline-csi-%d", time.Now().Unix()%100000)
	dir := t.TempDir()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "readyline-test-csi"), "./deploy/csi/readyline-test-csi")
	build.Dir, build.Env = repoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the CSI driver: %v\n%s", err, out)
	}
	if _, err := kindSh(ctx, nil, "docker", "cp", filepath.Join(dir, "readyline-test-csi"), worker+":"+bin); err != nil {
		t.Fatal(err)
	}
	if _, err := kindSh(ctx, nil, "docker", "exec", "-d", worker, "sh", "-c", "echo $$ >"+log+".pid; exec "+bin+" --node-id "+worker+" --log "+log); err != nil {
		t.Fatal(err)
	}
	// Last: the driver stops after the namespace is gone (the kubelet
	// unpublishes through it) and its volume.
	t.Cleanup(func() {
		if out, err := kindSh(ctx, nil, "docker", "exec", worker, "sh", "-c", "kill -INT $(cat "+log+".pid); sleep 1; cat "+log+"; rm -f "+bin+" "+log+" "+log+".pid"); err != nil {
			t.Errorf("stopping the CSI driver: %v", err)
		} else {
			t.Logf("the driver's calls:\n%s", out)
		}
	})
	eventually(t, time.Minute, "the worker's kubelet registering "+driver, func() error {
		out, err := kindSh(ctx, nil, "docker", "exec", worker, "cat", log)
		if err != nil || !strings.Contains(out, "registered") {
			return fmt.Errorf("not yet (%v): %s", err, out)
		}
		return nil
	})
	manifest := fmt.Sprintf(`apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: %[4]s}
spec: {attachRequired: false}
---
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: %[1]s-data}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: ""
  csi: {driver: %[4]s, volumeHandle: vol-%[1]s, volumeAttributes: {stageDelay: 5s, publishDelay: 1s}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data-claim, namespace: %[1]s}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: %[1]s-data
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  nodeName: %[3]s
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: localhost/busybox:local
      imagePullPolicy: Never
      command: ["sh", "-c", "sleep 3600"]
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: data-claim}
`, ns, pod, worker, driver)
	t.Cleanup(func() {
		kindSh(ctx, nil, "kubectl", "delete", "namespace", ns, "--wait=true", "--timeout=120s")
		kindSh(ctx, nil, "kubectl", "delete", "pv", ns+"-data", "--wait=true", "--timeout=60s")
	})
	if _, err := kindSh(ctx, []byte(manifest), "kubectl", "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	inFlight := regexp.MustCompile(`volume data: NodeStageVolume \d+(\.\d+)?m?s so far \(` + regexp.QuoteMeta(driver) + `\)`)
	var out string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && !inFlight.MatchString(out); time.Sleep(500 * time.Millisecond) {
		out, _ = explain(ctx, t, worker, ns+"/"+pod)
	}
	if !inFlight.MatchString(out) {
		t.Errorf("while the volume was staged, the worker's explain did not say %s:\n%s", inFlight, out)
	}
	waitReady(t, ns, pod)
	eventually(t, 30*time.Second, "the worker's timeline of "+pod+" with its stage", func() error {
		out, err := explain(ctx, t, worker, ns+"/"+pod)
		if err != nil {
			return err
		}
		for _, want := range []string{"Ready in", "volume data NodeStageVolume", "waiting for volumes"} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("no %q in\n%s", want, out)
			}
		}
		return nil
	})
	id := e2e.TraceIDFromPodUID(podUID(t, ns, pod))
	eventually(t, 60*time.Second, "the trace of "+pod+" with its volume.setup span", func() error {
		tr, err := clusterJaeger.Trace(ctx, id)
		if err != nil {
			return err
		}
		if _, ok := tr.SpanByName("volume.setup"); !ok {
			return fmt.Errorf("trace %s has no volume.setup span", id)
		}
		if _, ok := tr.SpanByName("csi.v1.Node/NodeStageVolume"); !ok {
			return fmt.Errorf("trace %s has no NodeStageVolume span", id)
		}
		return nil
	})
}
