package exporter

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/readyline/readyline/collector/redact"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/waterfall"
)

const dbPassword = "Tr0ub4dor&3-horse"

// startWithSecrets is a start whose container ran with $(DB_PASSWORD)
// expanded by the kubelet, and whose pull waited behind another
// namespace's pod's pull of a private image.
func startWithSecrets() *correlator.Timeline {
	tl := startOf("shop", "client")
	tl.Containers = []correlator.Container{{Name: "app", Attempts: []correlator.ContainerAttempt{{
		Process: &correlator.Process{PID: 7, Argv: []string{"/app/migrate", "--db=postgres://app:" + dbPassword + "@db"},
			SpecArgv: []string{"/app/migrate", "--db=postgres://app:$(DB_PASSWORD)@db"}},
	}, {
		Process: &correlator.Process{PID: 9, Argv: []string{"/entrypoint.sh", "--token", "abc"}}, // no spec view
	}}}}
	tl.ImagePulls = []correlator.ImagePull{{Image: "shop/app:1", Wait: &correlator.PullWait{Behind: []correlator.PullBehind{
		{PodUID: "uid-bank", Namespace: "bank", Name: "ledger", Image: "registry.bank.example/ledger:7"},
		{PodUID: "uid-shop", Namespace: "shop", Name: "web", Image: "shop/web:2"},
	}}}}
	return tl
}

func TestReaderViewGetOnly(t *testing.T) {
	tl := startWithSecrets()
	before, _ := json.Marshal(tl)
	v := ReaderView(&fakeReader{may: []string{"shop"}}, tl)
	after, _ := json.Marshal(tl)
	if string(before) != string(after) {
		t.Fatal("ReaderView changed its argument")
	}
	got, _ := json.Marshal(v)
	for _, leak := range []string{dbPassword, "abc", "bank", "ledger", "registry.bank.example"} {
		if strings.Contains(string(got), leak) {
			t.Errorf("a view-only reader reads %q: %s", leak, got)
		}
	}
	a := v.Containers[0].Attempts
	if want := []string{"/app/migrate", "--db=postgres://app:$(DB_PASSWORD)@db"}; !slices.Equal(a[0].Process.Argv, want) || a[0].Process.SpecArgv != nil {
		t.Errorf("first process %+v, want the spec's view %q", a[0].Process, want)
	}
	if want := []string{"entrypoint.sh", redact.Marker}; !slices.Equal(a[1].Process.Argv, want) {
		t.Errorf("process without a spec view: %q, want %q", a[1].Process.Argv, want)
	}
	b := v.ImagePulls[0].Wait.Behind
	if !b[0].Hidden || b[0].Image != "" || b[0].PodUID != "" || b[1].Hidden || b[1].Image != "shop/web:2" {
		t.Errorf("behind %+v: the other namespace's pull hidden, this one's kept", b)
	}
	if waterfall.BehindName(b[0]) != waterfall.AnotherPodsPull {
		t.Errorf("a hidden pull is named %q", waterfall.BehindName(b[0]))
	}
}

func TestReaderViewExecAndAdmin(t *testing.T) {
	tl := startWithSecrets()
	// Who may exec into the pod reads the kernel's argv (as by exec); the
	// other namespace's pull still only if they may get that pod.
	v := ReaderView(&fakeReader{may: []string{"shop"}, exec: []string{"shop"}}, tl)
	if !slices.Equal(v.Containers[0].Attempts[0].Process.Argv, tl.Containers[0].Attempts[0].Process.Argv) {
		t.Errorf("exec reader's argv %q", v.Containers[0].Attempts[0].Process.Argv)
	}
	if !v.ImagePulls[0].Wait.Behind[0].Hidden {
		t.Errorf("an exec reader of shop reads bank's pull")
	}
	admin := ReaderView(&fakeReader{may: []string{"shop", "bank"}, exec: []string{"shop"}}, tl)
	if !reflect.DeepEqual(admin.ImagePulls, tl.ImagePulls) || !reflect.DeepEqual(admin.Containers, tl.Containers) {
		t.Errorf("an admin's view differs from the start")
	}
	if ReaderView(EveryPod, tl) != tl {
		t.Errorf("EveryPod's view is not the start itself")
	}
}

// TestStoreHandlerServesTheReadersView: the JSON API and the page both
// answer with ReaderView.
func TestStoreHandlerServesTheReadersView(t *testing.T) {
	s := NewStore(StoreLimits{})
	s.Add(startWithSecrets())
	reader := &fakeReader{may: []string{"shop"}}
	served := 0
	for _, h := range []http.Handler{s.Handler(nil), s.UIHandler(nil)} {
		for _, path := range []string{"/api/v1/timelines/shop/client", "/ui/pods/shop/client"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil).WithContext(WithPodReader(t.Context(), reader)))
			if rec.Code == http.StatusNotFound && strings.HasPrefix(rec.Body.String(), "404 page not found") {
				continue // the other handler's path
			}
			if rec.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
			}
			served++
			for _, leak := range []string{dbPassword, "registry.bank.example"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Errorf("%s serves %q to a view-only reader", path, leak)
				}
			}
		}
	}
	if served != 2 {
		t.Errorf("%d of the 2 paths served", served)
	}
}
