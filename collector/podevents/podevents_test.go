package podevents

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/redact"
)

// eventList lists the same Events every time and counts the lists.
type eventList struct {
	items []corev1.Event
	lists int
}

func (l *eventList) List(context.Context, metav1.ListOptions) (*corev1.EventList, error) {
	l.lists++
	return &corev1.EventList{Items: l.items}, nil
}

// TestPodEventsKeepTheLatest64: the README's "bounded (64 a pod)": of 70
// Events of a pod the latest 64 are kept, 6 counted as left out.
func TestPodEventsKeepTheLatest64(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	list := &corev1.EventList{}
	for i := range 70 {
		list.Items = append(list.Items, corev1.Event{
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", UID: types.UID("u")},
			Type:           "Normal", Reason: "Pulled", Message: fmt.Sprintf("event %d", i),
			LastTimestamp: metav1.NewTime(t0.Add(time.Duration(i) * time.Second)),
		})
	}
	got := Of(list, "default", "p", "u", t0, redact.Redacted)
	if len(got) != 1 || len(got[0].Events) != 64 || got[0].Omitted != 6 || event.MaxPodEvents != 64 {
		t.Fatalf("got %d PodEvents, %d Events, %d omitted: want 64 kept, 6 omitted", len(got), len(got[0].Events), got[0].Omitted)
	}
	if first := got[0].Events[0].Message; first != "event 6" {
		t.Errorf("the oldest kept is %q, want event 6: the latest are kept", first)
	}
}

// TestPodEventReaderRate: the README's "at most 2 a second for the node"
// (burst 5), with the defaults: five reads at once go through; the sixth
// waits about half a second, so one that may wait 0.2 s is refused.
func TestPodEventReaderRate(t *testing.T) {
	lister := &eventList{}
	r, err := NewReader(Config{Events: func(string) EventLister { return lister }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(wait time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := r.Read(ctx, "default", "p", "u", Background)
		return err
	}
	begin := time.Now()
	for i := range 5 {
		if err := read(50 * time.Millisecond); err != nil {
			t.Fatalf("read %d of 5 at once: %v", i+1, err)
		}
	}
	if err := read(200 * time.Millisecond); err == nil {
		if took := time.Since(begin); took < 250*time.Millisecond {
			t.Errorf("a sixth read at once went through within 0.2 s, want it to wait for the rate of 2 a second")
		}
	}
	if err := read(2 * time.Second); err != nil {
		t.Errorf("a read that may wait 2 s: %v", err)
	}
	if took := time.Since(begin); took < 400*time.Millisecond {
		t.Errorf("six reads took %v: want the sixth half a second after the burst", took)
	}
}

// TestPodEventReaderShare: a share under the node's own rate bounds the
// background reads, one at a time; a reader's question keeps the node's
// own limit; a share over the own rate, or none, gives the own back.
func TestPodEventReaderShare(t *testing.T) {
	lister := &eventList{}
	r, err := NewReader(Config{Events: func(string) EventLister { return lister }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func(why bool, wait time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_, err := r.Read(ctx, "default", "p", "u", why)
		return err
	}
	r.SetShare(0.1) // one read in 10 s
	if got := r.Share(); got != 0.1 {
		t.Fatalf("share %v after SetShare(0.1)", got)
	}
	if err := read(Background, 50*time.Millisecond); err != nil {
		t.Fatalf("the first background read under a share: %v", err)
	}
	if err := read(Background, time.Second); err == nil {
		t.Errorf("a second background read within a second went through: the share of 0.1/s is not kept")
	}
	for i := range 5 {
		if err := read(Asked, 50*time.Millisecond); err != nil {
			t.Fatalf("asked read %d of 5 at once, under a background share: %v", i+1, err)
		}
	}
	for _, share := range []float64{10, 0} {
		r.SetShare(share)
		if got := r.Share(); got != 2 {
			t.Errorf("SetShare(%v): rate %v, want the node's own 2", share, got)
		}
	}
}

// selectedList answers each list with the Events its field selector
// names (involvedObject.kind and name, or uid), failing for a claim
// named in fail.
type selectedList struct {
	items []corev1.Event
	fail  string
	sels  []string
}

func (l *selectedList) List(_ context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	l.sels = append(l.sels, opts.FieldSelector)
	sel, err := fields.ParseSelector(opts.FieldSelector)
	if err != nil {
		return nil, err
	}
	out := &corev1.EventList{}
	for _, ev := range l.items {
		o := ev.InvolvedObject
		if sel.Matches(fields.Set{"involvedObject.kind": o.Kind, "involvedObject.name": o.Name, "involvedObject.uid": string(o.UID)}) {
			if o.Kind == "PersistentVolumeClaim" && o.Name == l.fail {
				return nil, fmt.Errorf("boom")
			}
			out.Items = append(out.Items, ev)
		}
	}
	return out, nil
}

// TestPodEventReaderClaims: a read with the pod's claims lists each
// claim's Events by kind and name into Claims, each named, oldest first;
// one claim failing leaves none read (ClaimsRead false), the pod's own
// Events read all the same.
func TestPodEventReaderClaims(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ev := func(kind, name, uid, reason string, s int) corev1.Event {
		return corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, UID: types.UID(uid)}, Type: "Normal", Reason: reason,
			Source: corev1.EventSource{Component: "csi.example.dev_node-1_abc"}, FirstTimestamp: metav1.NewTime(t0.Add(time.Duration(s) * time.Second)),
			LastTimestamp: metav1.NewTime(t0.Add(time.Duration(s) * time.Second))}
	}
	lister := &selectedList{items: []corev1.Event{
		ev("Pod", "p", "u", "Scheduled", 5),
		ev("PersistentVolumeClaim", "data", "c1", "ProvisioningSucceeded", 4),
		ev("PersistentVolumeClaim", "data", "c1", "Provisioning", 1),
		ev("PersistentVolumeClaim", "logs", "c2", "Provisioning", 2),
		ev("PersistentVolumeClaim", "other", "c3", "Provisioning", 2), // not the pod's
	}}
	r, err := NewReader(Config{Events: func(string) EventLister { return lister }, Burst: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.Read(context.Background(), "default", "p", "u", Background, "data", "logs")
	if err != nil || len(got) != 1 {
		t.Fatalf("read: %v, %d PodEvents", err, len(got))
	}
	pe := got[0]
	if len(pe.Events) != 1 || pe.Events[0].Reason != "Scheduled" || pe.Events[0].Claim != "" {
		t.Errorf("the pod's own Events %+v", pe.Events)
	}
	var said []string
	for _, c := range pe.Claims {
		said = append(said, c.Claim+" "+c.Reason)
	}
	if want := "data Provisioning, logs Provisioning, data ProvisioningSucceeded"; !pe.ClaimsRead || strings.Join(said, ", ") != want {
		t.Errorf("claims' Events %q (read %v), want %q", said, pe.ClaimsRead, want)
	}
	if len(lister.sels) != 3 || !strings.Contains(lister.sels[1], "involvedObject.kind=PersistentVolumeClaim") {
		t.Errorf("lists %q: want the pod's, then one a claim", lister.sels)
	}
	lister.fail = "logs"
	got, err = r.Read(context.Background(), "default", "p", "u", Background, "data", "logs")
	if err != nil || got[0].ClaimsRead || len(got[0].Claims) != 0 || len(got[0].Events) != 1 {
		t.Errorf("a claim's list failing: %v, %+v", err, got[0])
	}
}

// TestConfigDefaults: a zero field of Config takes the default its doc
// comment gives when the reader is made, and a set one is kept.
func TestConfigDefaults(t *testing.T) {
	r, err := NewReader(Config{Events: func(string) EventLister { return nil }}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.cfg.Events = nil
	if want := (Config{QPS: 2, Burst: 5, Timeout: 5 * time.Second}); !reflect.DeepEqual(r.cfg, want) {
		t.Errorf("Config %+v, want %+v", r.cfg, want)
	}
	if set := (Config{QPS: 0.5, Burst: 1, Timeout: time.Second}); !reflect.DeepEqual(set.withDefaults(), set) {
		t.Errorf("Config %+v, want %+v kept", set.withDefaults(), set)
	}
}
