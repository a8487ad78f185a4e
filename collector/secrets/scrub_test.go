package secrets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// fakeEnv is a runtime's answer by container id (pure unit tests: the real
// one is collector.RuntimeSource.ContainerEnv, tested against containerd).
type fakeEnv struct {
	env   map[string][]string
	err   error
	calls int
}

func (f *fakeEnv) ContainerEnv(_ context.Context, id string) ([]string, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return f.env[id], nil
}

type fakeFiles struct {
	files map[string]map[string][]byte // by volume name
	err   error
	calls int
}

func (f *fakeFiles) VolumeFiles(_, _, volume string) (map[string][]byte, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return f.files[volume], nil
}

const (
	uid      = "8e37d4a1-b960-4647-838f-4e2c60dfe0e0"
	appID    = "c0ffee0000000000000000000000000000000000000000000000000000000001"
	password = "Tr0ub4dor&3-horse"
	apiKey   = "k-1f2e3d4c5b6a7988"
	fileKey  = "-----BEGIN SECRET-----\nbm90IGEgcmVhbCBrZXk=\n-----END SECRET-----\n"
)

// secretPod takes DB_PASSWORD by secretKeyRef, every key of a Secret by
// envFrom with a prefix, and a Secret volume, besides the service account
// token every pod has.
func secretPod() *corev1.Pod {
	pod := &corev1.Pod{}
	pod.UID, pod.Name, pod.Namespace = uid, "db-client", "shop"
	pod.Spec.Containers = []corev1.Container{{
		Name: "app",
		Env: []corev1.EnvVar{
			{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "db"}, Key: "password"}}},
			{Name: "LOG_LEVEL", Value: "debug-verbose"},
		},
		EnvFrom: []corev1.EnvFromSource{{Prefix: "VENDOR_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vendor"}}}},
	}}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
		{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace"}}}},
		}}}},
	}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", ContainerID: "containerd://" + appID}}
	return event.StripPod(pod)
}

func newTestScrubber(now *time.Time) (*Scrubber, *fakeEnv, *fakeFiles) {
	env := &fakeEnv{env: map[string][]string{appID: {
		"DB_PASSWORD=" + password, "LOG_LEVEL=debug-verbose", "VENDOR_API_KEY=" + apiKey,
		"SHOP_SERVICE_HOST=10.96.12.34", "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1", "OTHER_UNNAMED=not-a-secret-1",
	}}}
	files := &fakeFiles{files: map[string]map[string][]byte{
		"creds":           {"tls.key": []byte(fileKey), "user": []byte("svc-backup-operator\n")},
		"kube-api-access": {"token": []byte("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl"), "namespace": []byte("shop-frontend"), "ca.crt": []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----")},
	}}
	return New(Config{Env: env, Files: files, Now: func() time.Time { return *now }}, nil), env, files
}

func exec(argv ...string) *event.ProcessExec {
	return &event.ProcessExec{Process: event.Process{PodUID: uid, ContainerID: appID, Scope: event.ScopePod}, Filename: "/bin/sh", Argv: argv}
}

func TestScrubberRemovesThePodsSecrets(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, env, files := newTestScrubber(&now)
	s.Scrub(&event.PodUpdate{Action: event.PodAdded, Pod: secretPod()})

	// $(DB_PASSWORD) expanded by the kubelet, a sh -c script's $VAR in a
	// child, a file read by $(cat ...): shapes redact's table may not know.
	cases := []struct{ argv, want []string }{
		{[]string{"/app/migrate", "--db=postgres://app:" + password + "@db/shop"}, []string{"/app/migrate", "--db=postgres://app:" + redact.Marker + "@db/shop"}},
		{[]string{"curl", "-H", "X-Vendor: " + apiKey}, []string{"curl", "-H", "X-Vendor: " + redact.Marker}},
		{[]string{"backup", "svc-backup-operator", "bm90IGEgcmVhbCBrZXk="}, []string{"backup", redact.Marker, redact.Marker}},
		{[]string{"login", "--as", "shop-frontend", "debug-verbose", "not-a-secret-1"}, nil}, // not Secrets'
	}
	for _, c := range cases {
		e := exec(c.argv...)
		s.Scrub(e)
		want := c.want
		if want == nil {
			want = c.argv
		}
		if !slices.Equal(e.Argv, want) {
			t.Errorf("argv %q -> %q, want %q", c.argv, e.Argv, want)
		}
	}
	if env.calls != 1 || files.calls != 2 {
		t.Errorf("read the environment %d times and volumes %d times, want once and once each", env.calls, files.calls)
	}

	// The kubelet's ExecSync of the container: known by its id.
	// Its argument cut at 63 bytes within the value.
	arg := "mysql --user=app --host=db.shop.svc.cluster.local -p" + password
	call := &event.CRICall{Method: event.CRIExecSync, ContainerID: appID, Cmd: []string{"sh", "-c", arg[:event.MaxExecSyncArg]}}
	s.Scrub(call)
	if want := arg[:strings.Index(arg, password)] + redact.Marker; call.Cmd[2] != want {
		t.Errorf("ExecSync cmd %q, want %q", call.Cmd[2], want)
	}

	// Its Events and its status, the informer's pod left as it was.
	evs := &event.PodEvents{PodUID: uid, Events: []event.PodEvent{{Reason: "FailedPostStartHook",
		Message: "Exec lifecycle hook ([sh -c echo " + password + "]) failed: " + password + "\n"}}}
	s.Scrub(evs)
	if strings.Contains(evs.Events[0].Message, password) {
		t.Errorf("Event message %q", evs.Events[0].Message)
	}
	// Cut at its bound within the value (event.CutMessage).
	long := strings.Repeat("x", event.MaxEventMessage-5) + " " + password
	evs = &event.PodEvents{PodUID: uid, Events: []event.PodEvent{{Message: event.CutMessage(long, event.MaxEventMessage)}}}
	s.Scrub(evs)
	if want := strings.Repeat("x", event.MaxEventMessage-5) + " " + redact.Marker + event.CutMarker; evs.Events[0].Message != want {
		t.Errorf("cut Event message ends %q", evs.Events[0].Message[len(evs.Events[0].Message)-20:])
	}
	pod := secretPod()
	pod.Status.ContainerStatuses[0].State.Waiting = &corev1.ContainerStateWaiting{Reason: "PostStartHookError", Message: "command 'sh -c echo $X' exited with 1: " + password}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.ContainersReady, Message: "containers with unready status: [app] " + apiKey}}
	update := &event.PodUpdate{Action: event.PodUpdated, Pod: pod}
	s.Scrub(update)
	if update.Pod == pod || strings.Contains(update.Pod.Status.ContainerStatuses[0].State.Waiting.Message, password) ||
		strings.Contains(update.Pod.Status.Conditions[0].Message, apiKey) {
		t.Errorf("status kept a value, or was changed in place: %+v", update.Pod.Status)
	}
	if !strings.Contains(pod.Status.ContainerStatuses[0].State.Waiting.Message, password) {
		t.Errorf("the informer's pod was changed")
	}

	st := s.Stats()
	if st.Pods != 1 || st.Values < 5 || st.Removed < 6 || st.Hidden != 0 || st.ReadErrors != 0 {
		t.Errorf("stats %+v", st)
	}

	// Deleted: the values go KeepAfterDelete later, not before.
	s.Scrub(&event.PodUpdate{Action: event.PodDeleted, Pod: secretPod()})
	now = now.Add(KeepAfterDelete - time.Second)
	s.Scrub(&event.Tick{Time: now})
	if s.Stats().Pods != 1 {
		t.Fatalf("values dropped before KeepAfterDelete")
	}
	now = now.Add(2 * time.Second)
	s.Scrub(&event.Tick{Time: now})
	if st := s.Stats(); st.Pods != 0 || st.Bytes != 0 || len(s.owners) != 0 {
		t.Errorf("after the deletion: %+v, %d ids", st, len(s.owners))
	}
}

// TestScrubberUnknownOwner: a CRI call on an id no event tied to a pod yet
// loses every pod's values.
func TestScrubberUnknownOwner(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, _, _ := newTestScrubber(&now)
	s.Scrub(&event.PodUpdate{Action: event.PodAdded, Pod: secretPod()})
	s.Scrub(exec("true")) // reads the values
	call := &event.CRICall{Method: event.CRIExecSync, ContainerID: "unknown", Cmd: []string{"psql", password}}
	s.Scrub(call)
	if call.Cmd[1] != redact.Marker {
		t.Errorf("cmd %q", call.Cmd)
	}
}

// TestScrubberFailsClosed: when the values that may be in a command line
// cannot be read, it keeps its program only, and tries again later.
func TestScrubberFailsClosed(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, env, _ := newTestScrubber(&now)
	env.err = errors.New("runtime down")
	s.Scrub(&event.PodUpdate{Action: event.PodAdded, Pod: secretPod()})
	e := exec("/app/migrate", "--db=postgres://app:"+password+"@db/shop")
	s.Scrub(e)
	if !slices.Equal(e.Argv, []string{"/app/migrate", redact.Marker}) {
		t.Errorf("argv %q, want the program only", e.Argv)
	}
	s.Scrub(exec("ls"))
	if env.calls != 1 {
		t.Errorf("asked the runtime %d times within RetryAfter", env.calls)
	}
	env.err = nil
	now = now.Add(RetryAfter)
	e = exec("/app/migrate", "--db=postgres://app:"+password+"@db/shop")
	s.Scrub(e)
	if env.calls != 2 || e.Argv[1] != "--db=postgres://app:"+redact.Marker+"@db/shop" {
		t.Errorf("after the runtime came back: %d calls, argv %q", env.calls, e.Argv)
	}
	if st := s.Stats(); st.Hidden != 1 || st.ReadErrors != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestScrubberIgnoresPodsWithoutSecrets: nothing is read or held for them.
func TestScrubberIgnoresPodsWithoutSecrets(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, env, files := newTestScrubber(&now)
	pod := secretPod()
	pod.Spec.Containers[0].Env, pod.Spec.Containers[0].EnvFrom, pod.Spec.Volumes = nil, nil, nil
	s.Scrub(&event.PodUpdate{Action: event.PodAdded, Pod: pod})
	e := exec("echo", password)
	s.Scrub(e)
	if env.calls+files.calls != 0 || len(s.pods) != 0 || len(s.owners) != 0 || e.Argv[1] != password {
		t.Errorf("%d reads, %d pods, %d ids, argv %q", env.calls+files.calls, len(s.pods), len(s.owners), e.Argv)
	}
}

func TestEnvRefsSecretEnv(t *testing.T) {
	refs := RefsOf(secretPod())
	got := refs.Env["app"].SecretEnv([]string{"DB_PASSWORD=a", "LOG_LEVEL=b", "VENDOR_X=c", "OTHER=d", "SHOP_PORT_80_TCP_ADDR=e", "PATH=f"})
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("SecretEnv = %q", got)
	}
	// envFrom with no prefix: every name the spec does not set otherwise.
	e := EnvRefs{FromSecret: true, Prefixes: []string{""}, Declared: []string{"LOG_LEVEL"}}
	got = e.SecretEnv([]string{"LOG_LEVEL=b", "X=c", "KUBERNETES_SERVICE_HOST=10.96.0.1", "HOME=/root"})
	if !slices.Equal(got, []string{"c"}) {
		t.Errorf("SecretEnv (no prefix) = %q", got)
	}
}

func TestVolumeRefsSecret(t *testing.T) {
	refs := RefsOf(secretPod())
	if len(refs.Volumes) != 2 {
		t.Fatalf("volumes %+v", refs.Volumes)
	}
	creds, api := refs.Volumes[0], refs.Volumes[1]
	if creds.Kind != KindSecret || !creds.Secret("tls.key") || creds.TokenOnly() {
		t.Errorf("creds %+v", creds)
	}
	if api.Kind != KindProjected || !api.Secret("token") || api.Secret("namespace") || api.Secret("ca.crt") || !api.TokenOnly() {
		t.Errorf("kube-api-access %+v", api)
	}
}

// BenchmarkScrubProbeRun: what one exec probe run costs the scrubber on a
// node of 110 pods, each with its service account token read: the
// ExecSync call and the probe's exec.
func BenchmarkScrubProbeRun(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	files := &fakeFiles{files: map[string]map[string][]byte{}}
	s := New(Config{Env: &fakeEnv{}, Files: files, Now: func() time.Time { return now }}, nil)
	var execs []*event.ProcessExec
	for i := range 110 {
		pod := secretPod()
		pod.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))
		pod.Spec.Containers[0].Env, pod.Spec.Containers[0].EnvFrom = nil, nil
		pod.Spec.Volumes = pod.Spec.Volumes[1:] // the token's only
		files.files["kube-api-access"] = map[string][]byte{"token": []byte(fmt.Sprintf("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ%04d.c2lnbmF0dXJl", i))}
		s.Scrub(&event.PodUpdate{Action: event.PodAdded, Pod: pod})
		e := &event.ProcessExec{Process: event.Process{PodUID: string(pod.UID), ContainerID: fmt.Sprintf("%064d", i), Scope: event.ScopePod},
			Filename: "/bin/sh", Argv: []string{"sh", "-c", "wget -q -O- http://127.0.0.1:8080/healthz"}}
		s.Scrub(e)
		execs = append(execs, e)
	}
	call := &event.CRICall{Method: event.CRIExecSync, ContainerID: fmt.Sprintf("%064d", 7), Cmd: []string{"sh", "-c", "wget -q -O- http://127.0.0.1:8080/healthz"}}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e := *execs[i%len(execs)]
		s.Scrub(&e)
		c := *call
		s.Scrub(&c)
	}
}
