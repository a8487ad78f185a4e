package event

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// deploymentPod is a Deployment's pod as the API server serves it (an init
// container, env, resources, volumes, managedFields, a Helm chart's labels).
func deploymentPod(t testing.TB) *corev1.Pod {
	t.Helper()
	b, err := os.ReadFile("testdata/pod-deployment.json")
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	if err := json.Unmarshal(b, &pod); err != nil {
		t.Fatal(err)
	}
	return &pod
}

func jsonSize(t testing.TB, pod *corev1.Pod) int {
	t.Helper()
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func TestStripPodDeploymentPod(t *testing.T) {
	pod := deploymentPod(t)
	s := StripPod(pod)
	full, stripped := jsonSize(t, pod), jsonSize(t, s)
	t.Logf("a Deployment's pod: %d bytes of JSON, %d stripped (protobuf %d -> %d)", full, stripped, pod.Size(), s.Size())
	if stripped*3 > full {
		t.Errorf("stripped to %d of %d bytes", stripped, full)
	}

	// What the correlator reads stays.
	if s.Name != pod.Name || s.Namespace != "shop" || s.UID != pod.UID || s.ResourceVersion != "918273" ||
		!s.CreationTimestamp.Equal(&pod.CreationTimestamp) || s.Spec.NodeName != "node-7" {
		t.Errorf("metadata or node: %+v %q", s.ObjectMeta, s.Spec.NodeName)
	}
	if want := map[string]string{"tracing.k8s.io/traceparent": pod.Annotations["tracing.k8s.io/traceparent"]}; !reflect.DeepEqual(s.Annotations, want) {
		t.Errorf("annotations %v, want %v", s.Annotations, want)
	}
	nginx := s.Spec.Containers[0]
	if nginx.Name != "nginx" || nginx.Image != "registry.example.com/shop/web:1.27.3" || len(nginx.Ports) != 2 || nginx.Ports[0].Name != "http" ||
		nginx.ReadinessProbe.HTTPGet.Port != intstr.FromString("http") || nginx.ReadinessProbe.InitialDelaySeconds != 2 ||
		nginx.ReadinessProbe.PeriodSeconds != 5 || nginx.LivenessProbe.FailureThreshold != 3 {
		t.Errorf("container %+v", nginx)
	}
	if len(s.Status.Conditions) != 5 || s.Status.Conditions[2].Type != corev1.PodReady || s.Status.Conditions[2].LastTransitionTime.IsZero() {
		t.Errorf("conditions %+v", s.Status.Conditions)
	}
	cs := s.Status.ContainerStatuses[0]
	if cs.Name != "nginx" || !cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil || cs.ContainerID == "" {
		t.Errorf("container status %+v", cs)
	}
	if ts := s.Status.InitContainerStatuses[0].State.Terminated; ts == nil || ts.Reason != "Completed" || ts.FinishedAt.IsZero() {
		t.Errorf("init container status %+v", s.Status.InitContainerStatuses[0])
	}
	if s.Status.PodIP != "10.244.1.23" || len(s.Status.PodIPs) != 1 || s.Status.HostIP == "" || s.Status.StartTime == nil {
		t.Errorf("addresses or start time: %+v", s.Status)
	}

	// What it does not read goes.
	if s.ManagedFields != nil || s.Labels != nil || s.OwnerReferences != nil || s.GenerateName != "" {
		t.Errorf("metadata kept: %+v", s.ObjectMeta)
	}
	if s.Spec.Tolerations != nil || s.Spec.ServiceAccountName != "" || s.Spec.SecurityContext != nil {
		t.Errorf("spec kept: %+v", s.Spec)
	}
	// The projected service account volume: what it writes from where
	// (package secrets reads the token, not the namespace or the CA).
	if len(s.Spec.Volumes) != 1 || s.Spec.Volumes[0].Projected == nil || len(s.Spec.Volumes[0].Projected.Sources) != 3 ||
		s.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken.Path != "token" ||
		s.Spec.Volumes[0].Projected.Sources[2].DownwardAPI.Items[0].Path != "namespace" ||
		s.Spec.Volumes[0].Projected.Sources[2].DownwardAPI.Items[0].FieldRef != nil {
		t.Errorf("volumes kept: %+v", s.Spec.Volumes)
	}
	for _, c := range append(s.Spec.InitContainers, s.Spec.Containers...) {
		if c.VolumeMounts != nil || c.Resources.Requests != nil || c.SecurityContext != nil || c.TerminationMessagePath != "" {
			t.Errorf("container %s kept %+v", c.Name, c)
		}
		for _, e := range c.Env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("container %s kept the variable %+v (only Secret references, never a value)", c.Name, e)
			}
		}
	}
	if migrate := s.Spec.InitContainers[0]; !reflect.DeepEqual(migrate.Command, pod.Spec.InitContainers[0].Command) ||
		!reflect.DeepEqual(migrate.Args, pod.Spec.InitContainers[0].Args) {
		t.Errorf("the init container's command line %q %q, want the spec's", migrate.Command, migrate.Args)
	}
	if env := nginx.Env; len(env) != 1 || env[0].Name != "API_TOKEN" || env[0].ValueFrom.SecretKeyRef.Name != "web-secrets" ||
		env[0].ValueFrom.SecretKeyRef.Key != "api-token" {
		t.Errorf("the Secret references of nginx: %+v", env)
	}
	if p := nginx.ReadinessProbe.HTTPGet; p.Path != "" || p.Scheme != "" {
		t.Errorf("probe kept %+v", nginx.ReadinessProbe)
	}
	if cs.Image != "" || cs.ImageID != "" || cs.Resources != nil || cs.AllocatedResources != nil || cs.VolumeMounts != nil || cs.User != nil {
		t.Errorf("container status kept %+v", cs)
	}
	if s.Status.QOSClass != "" || s.Status.Conditions[0].LastProbeTime != (metav1.Time{}) {
		t.Errorf("status kept %+v", s.Status)
	}
}

// TestStripPodLargeFields: what a pod's author can make large is dropped
// or bounded.
func TestStripPodLargeFields(t *testing.T) {
	pod := deploymentPod(t)
	big := strings.Repeat("x", 256<<10)
	pod.ManagedFields = append(pod.ManagedFields, metav1.ManagedFieldsEntry{Manager: "big", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:x":"` + big + `"}`)}})
	pod.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = big
	pod.Annotations["tracing.k8s.io/traceparent"] = big
	pod.Annotations["kubernetes.io/config.mirror"] = "891468ad7b25b12fc6c24020a16a3d4a"
	for i := range 1000 {
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "V" + strings.Repeat("x", i%50), Value: strings.Repeat("v", 200)})
	}
	pod.Spec.Containers[0].Args = []string{big}
	long := []string{"sh", "-c", big, "and", "more"}
	pod.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: long}}}
	pod.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{
		PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: long}},
		PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: long}},
	}
	pod.Spec.Containers[0].Image = big
	pod.Status.ContainerStatuses[0].State.Terminated = &corev1.ContainerStateTerminated{Message: big, ExitCode: 1}

	s := StripPod(pod)
	full, stripped := jsonSize(t, pod), jsonSize(t, s)
	t.Logf("a pod made large: %d bytes of JSON, %d stripped", full, stripped)
	if stripped > 12<<10 {
		t.Errorf("stripped pod has %d bytes of JSON", stripped)
	}
	if m := s.Status.ContainerStatuses[0].State.Terminated.Message; len(m) != MaxTerminationMessageBytes {
		t.Errorf("termination message of %d bytes kept", len(m))
	}
	if v := s.Annotations["tracing.k8s.io/traceparent"]; len(v) != MaxAnnotationBytes {
		t.Errorf("traceparent of %d bytes kept", len(v))
	}
	if s.Annotations["kubernetes.io/config.mirror"] != "891468ad7b25b12fc6c24020a16a3d4a" {
		t.Errorf("mirror annotation %q", s.Annotations["kubernetes.io/config.mirror"])
	}
	c := s.Spec.Containers[0]
	for _, cmd := range [][]string{c.StartupProbe.Exec.Command, c.Lifecycle.PostStart.Exec.Command} {
		if len(cmd) != 3 || cmd[0] != "sh" || cmd[1] != "-c" || len(cmd[2]) != MaxCommandBytes-len("sh\x00-c\x00") {
			t.Errorf("command cut to %d arguments, the last of %d bytes", len(cmd), len(cmd[len(cmd)-1]))
		}
	}
	if c.Lifecycle.PreStop != nil || len(c.Image) != MaxImageBytes {
		t.Errorf("preStop %v, image of %d bytes", c.Lifecycle.PreStop, len(c.Image))
	}
}

func TestCutCommand(t *testing.T) {
	long := strings.Repeat("a", MaxCommandBytes)
	for _, tc := range []struct {
		cmd  []string
		want []string
	}{
		{nil, nil},
		{[]string{}, []string{}},
		{[]string{"true"}, []string{"true"}},
		{[]string{"sh", "-c", long, "x"}, []string{"sh", "-c", long[:MaxCommandBytes-6]}},
		{[]string{long[:MaxCommandBytes-1], "next"}, []string{long[:MaxCommandBytes-1]}},
		{[]string{long[:MaxCommandBytes-2], "next"}, []string{long[:MaxCommandBytes-2], "n"}},
		{[]string{"é" + long}, []string{"é" + long[:MaxCommandBytes-2]}},
		{[]string{"a" + strings.Repeat("é", MaxCommandBytes)}, []string{"a" + strings.Repeat("é", (MaxCommandBytes-1)/2)}},
	} {
		if got := cutCommand(tc.cmd); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("cutCommand(%.20q...) = %d args %.40q, want %d %.40q", tc.cmd, len(got), got, len(tc.want), tc.want)
		}
	}
}

func TestStripPodIdempotent(t *testing.T) {
	s := StripPod(deploymentPod(t))
	if again := StripPod(s); !reflect.DeepEqual(again, s) {
		t.Errorf("stripping a stripped pod changed it:\n%+v\n%+v", again, s)
	}
	if StripPod(nil) != nil {
		t.Error("StripPod(nil) != nil")
	}
}

// TestStripPodSharesNothing: the copy may be changed (the correlator moves
// its times onto its clock) while pod sits in an informer's cache.
func TestStripPodSharesNothing(t *testing.T) {
	pod := deploymentPod(t)
	now := metav1.NewTime(time.Unix(1e9, 0))
	pod.DeletionTimestamp = &now
	pod.Annotations["kubernetes.io/config.mirror"] = "h"
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "x"}}
	always := corev1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers[0].RestartPolicy = &always
	pod.Spec.InitContainers[0].Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 1}}}
	pod.Spec.Containers[0].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"true"}}, GRPC: &corev1.GRPCAction{Port: 1}, TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt(1)}}}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "r"}}})
	pod.Status.ContainerStatuses[0].LastTerminationState.Waiting = &corev1.ContainerStateWaiting{Reason: "r"}
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "r"}

	inPod := addresses(reflect.ValueOf(pod), map[uintptr]bool{})
	for a := range addresses(reflect.ValueOf(StripPod(pod)), map[uintptr]bool{}) {
		if inPod[a] {
			t.Fatalf("the stripped pod shares memory at %#x with pod", a)
		}
	}
}

// addresses collects what v points to (pointers, slices' and maps' memory),
// strings excepted, into seen.
func addresses(v reflect.Value, seen map[uintptr]bool) map[uintptr]bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return seen
		}
		seen[v.Pointer()] = true
		addresses(v.Elem(), seen)
	case reflect.Slice:
		if v.IsNil() {
			return seen
		}
		if v.Cap() > 0 {
			seen[v.Pointer()] = true
		}
		for i := range v.Len() {
			addresses(v.Index(i), seen)
		}
	case reflect.Map:
		if v.IsNil() {
			return seen
		}
		seen[v.Pointer()] = true
		for it := v.MapRange(); it.Next(); {
			addresses(it.Value(), seen)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				addresses(v.Field(i), seen)
			}
		}
	}
	return seen
}

// BenchmarkStripPod reports the heap a Deployment's pod takes as decoded
// and stripped (what an informer's cache and the correlator hold of it).
func BenchmarkStripPod(b *testing.B) {
	raw, err := os.ReadFile("testdata/pod-deployment.json")
	if err != nil {
		b.Fatal(err)
	}
	const n = 1000
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var full, stripped float64
	for b.Loop() {
		base := heap()
		pods := make([]*corev1.Pod, n)
		for i := range pods {
			pods[i] = new(corev1.Pod)
			if err := json.Unmarshal(raw, pods[i]); err != nil {
				b.Fatal(err)
			}
		}
		full = float64(heap()-base) / n
		for i := range pods {
			pods[i] = StripPod(pods[i])
		}
		stripped = float64(heap()-base) / n
		runtime.KeepAlive(pods)
	}
	b.ReportMetric(full, "full-B/pod")
	b.ReportMetric(stripped, "stripped-B/pod")
}

// TestStripPodBoundsLists: a pod's author (a tenant) can fill the 1.5 MiB
// the API server takes with ports, containers, variables, volumes and
// conditions; a stripped pod keeps a bounded number of each and counts the
// rest in CutAnnotation, once (stripping it again counts nothing more).
func TestStripPodBoundsLists(t *testing.T) {
	pod := deploymentPod(t)
	c := &pod.Spec.Containers[0]
	for i := range 70000 {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: "p", ContainerPort: int32(i%65535 + 1)})
	}
	c.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}}
	for i := range 1000 {
		c.Env = append(c.Env, corev1.EnvVar{Name: "V" + strconvItoa(i), Value: "v"})
	}
	for i := range 500 {
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "c" + strconvItoa(i), Image: "busybox"})
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: "s" + strconvItoa(i),
			VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}})
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodConditionType("x" + strconvItoa(i))})
	}
	s := StripPod(pod)
	if n := jsonSize(t, s); n > 256<<10 {
		t.Errorf("the stripped pod has %d bytes of JSON, want at most 256 KiB", n)
	}
	if len(s.Spec.Containers) != MaxContainers || len(s.Spec.Containers[0].Ports) != MaxPorts ||
		len(s.Spec.Containers[0].Env) != MaxEnv || len(s.Spec.Volumes) != MaxVolumes || len(s.Status.Conditions) != MaxConditions {
		t.Errorf("kept %d containers, %d ports, %d variables, %d volumes, %d conditions", len(s.Spec.Containers),
			len(s.Spec.Containers[0].Ports), len(s.Spec.Containers[0].Env), len(s.Spec.Volumes), len(s.Status.Conditions))
	}
	want := "containers=437,ports=69938,env=749,volumes=437,conditions=473"
	if got := CutOf(s); got != want {
		t.Errorf("CutOf = %q, want %q", got, want)
	}
	if got := CutOf(StripPod(s)); got != want {
		t.Errorf("stripped twice: CutOf = %q, want %q", got, want)
	}
	if CutOf(StripPod(deploymentPod(t))) != "" {
		t.Errorf("a pod within the bounds is marked cut: %q", CutOf(StripPod(deploymentPod(t))))
	}
}

func strconvItoa(i int) string { return fmt.Sprint(i) }

// TestStripPodFitsMaxStrippedBytes: within the lists' bounds a pod can
// still be large; it loses detail, in the documented order, until it fits.
func TestStripPodFitsMaxStrippedBytes(t *testing.T) {
	pod := deploymentPod(t)
	long := strings.Repeat("c", 1000)
	cmd := []string{"sh", "-c", long}
	var containers []corev1.Container
	for i := range MaxContainers {
		c := corev1.Container{Name: fmt.Sprintf("c%d", i), Image: "busybox", Command: cmd, Args: cmd,
			EnvFrom:        []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}}},
			StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}}},
			Lifecycle:      &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: cmd}}}}
		for j := range MaxPorts {
			c.Ports = append(c.Ports, corev1.ContainerPort{Name: strings.Repeat("p", 200), ContainerPort: int32(j + 1)})
		}
		for j := range 20 {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("%s%d", strings.Repeat("E", 100), j)})
		}
		c.Env = append(c.Env, corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}})
		containers = append(containers, c)
	}
	pod.Spec.Containers = containers
	s := StripPod(pod)
	if n := s.Size(); n > MaxStrippedBytes {
		t.Errorf("stripped to %d bytes, want at most %d", n, MaxStrippedBytes)
	}
	cut := CutOf(s)
	for _, kind := range []string{"env=", "commands=", "ports=", "containers="} {
		if !strings.Contains(cut, kind) {
			t.Errorf("CutOf = %q: no %s", cut, kind)
		}
	}
	// The Secret references stay while containers do.
	for _, c := range s.Spec.Containers {
		if len(c.Env) != 1 || c.Env[0].Name != "DB_PASSWORD" || len(c.EnvFrom) != 1 {
			t.Errorf("container %s lost its Secret references: %+v %+v", c.Name, c.Env, c.EnvFrom)
		}
	}
	if got := CutOf(StripPod(s)); got != cut {
		t.Errorf("stripped twice: %q, want %q", got, cut)
	}
}
