package correlator

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/readyline/readyline/collector/event"
)

// The clock moves times two ways: a Timeline's by reflection (present,
// mapTimes), an event's field by field (normalize). Either misses a
// time.Time added where it does not reach: mapTimes skips maps, unexported
// fields and interfaces, and normalize's type switch knows the fields it
// was written with. The tests below give every time.Time reachable in the
// types (through struct fields, exported or not, pointers, slices, arrays,
// maps, keys too) a value, shift, and require each one moved, so a new
// field the shift does not reach fails here, named by its path.

// fillTimes sets every time.Time reachable from v (addressable) to t,
// allocating each pointer and giving each slice and map one element, and
// appends the path of each to sites. A type met again beneath itself is
// left empty. An interface field cannot be filled: its path is appended
// to opaque.
func fillTimes(v reflect.Value, t time.Time, path string, onPath map[reflect.Type]bool, sites, opaque *[]string) {
	v = settable(v)
	typ := v.Type()
	if typ == timeType {
		v.Set(reflect.ValueOf(t))
		*sites = append(*sites, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			fillTimes(v.Field(i), t, path+"."+typ.Field(i).Name, onPath, sites, opaque)
		}
	case reflect.Array:
		for i := range v.Len() {
			fillTimes(v.Index(i), t, fmt.Sprintf("%s[%d]", path, i), onPath, sites, opaque)
		}
	case reflect.Pointer, reflect.Slice, reflect.Map:
		if onPath[typ] || !holdsTime(typ, map[reflect.Type]bool{}) {
			return
		}
		onPath[typ] = true
		defer delete(onPath, typ)
		switch v.Kind() {
		case reflect.Pointer:
			v.Set(reflect.New(typ.Elem()))
			fillTimes(v.Elem(), t, path, onPath, sites, opaque)
		case reflect.Slice:
			v.Set(reflect.MakeSlice(typ, 1, 1))
			fillTimes(v.Index(0), t, path+"[0]", onPath, sites, opaque)
		case reflect.Map:
			key, val := reflect.New(typ.Key()).Elem(), reflect.New(typ.Elem()).Elem()
			fillTimes(key, t, path+"{key}", onPath, sites, opaque)
			fillTimes(val, t, path+"[key]", onPath, sites, opaque)
			v.Set(reflect.MakeMap(typ))
			v.SetMapIndex(key, val)
		}
	case reflect.Interface:
		*opaque = append(*opaque, path)
	}
}

// holdsTime reports whether a value of typ can hold a time.Time (an
// interface may).
func holdsTime(typ reflect.Type, seen map[reflect.Type]bool) bool {
	if typ == timeType || typ.Kind() == reflect.Interface {
		return true
	}
	if seen[typ] {
		return false
	}
	seen[typ] = true
	switch typ.Kind() {
	case reflect.Struct:
		for i := range typ.NumField() {
			if holdsTime(typ.Field(i).Type, seen) {
				return true
			}
		}
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsTime(typ.Elem(), seen)
	case reflect.Map:
		return holdsTime(typ.Key(), seen) || holdsTime(typ.Elem(), seen)
	}
	return false
}

// collectTimes returns every time.Time reachable from v by the paths
// fillTimes gives them (a map's entries, whatever their key, as {key} and
// [key]).
func collectTimes(v reflect.Value, path string, out map[string]time.Time) {
	if v.CanAddr() {
		v = settable(v)
	}
	typ := v.Type()
	if typ == timeType {
		out[path] = v.Interface().(time.Time)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		if !v.CanAddr() { // a map's value: copy it somewhere addressable
			c := reflect.New(typ).Elem()
			c.Set(v)
			v = c
		}
		for i := range v.NumField() {
			collectTimes(v.Field(i), path+"."+typ.Field(i).Name, out)
		}
	case reflect.Array:
		for i := range v.Len() {
			collectTimes(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Slice:
		for i := range v.Len() {
			collectTimes(v.Index(i), fmt.Sprintf("%s[%d]", path, i), out)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collectTimes(v.Elem(), path, out)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			collectTimes(it.Key(), path+"{key}", out)
			collectTimes(it.Value(), path+"[key]", out)
		}
	}
}

// settable is v, made settable when it is an unexported field.
func settable(v reflect.Value) reflect.Value {
	if v.CanSet() || !v.CanAddr() {
		return v
	}
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}

// unmoved lists the paths of sites whose time is not want after the
// shift. A time that is gone (zero, or its path no longer there: a field
// the correlator drops as it reads the event) was not missed by the shift.
func unmoved(got map[string]time.Time, sites []string, want time.Time) []string {
	var out []string
	for _, p := range sites {
		if at, ok := got[p]; ok && !at.IsZero() && !at.Equal(want) {
			out = append(out, p)
		}
	}
	return out
}

// shiftedClock is a clock whose current frame is d ahead of the base frame, with
// no step to mark: present moves a timeline's times by d, normalize an
// event's by -d.
func shiftedClock(now time.Time, d time.Duration) *clock {
	return &clock{mono: true, now: now, lastTick: now, frames: []clockFrame{{off: int64(d)}}}
}

// TestPresentMovesEveryTime: every time.Time a Timeline can hold, now and
// after fields are added to it, is moved when present writes the timeline
// in the frame of a stepped wall clock.
func TestPresentMovesEveryTime(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	const d = time.Hour
	tl := new(Timeline)
	var sites, opaque []string
	fillTimes(reflect.ValueOf(tl).Elem(), t0, "Timeline", map[reflect.Type]bool{}, &sites, &opaque)
	if len(sites) < 10 {
		t.Fatalf("only %d time.Time found in a Timeline: %v", len(sites), sites)
	}
	for _, p := range opaque {
		t.Errorf("%s is an interface: whether a time.Time behind it moves cannot be told; give it a concrete type", p)
	}
	shiftedClock(t0, d).present(tl, t0.Add(24*time.Hour))
	got := map[string]time.Time{}
	collectTimes(reflect.ValueOf(tl).Elem(), "Timeline", got)
	for _, p := range unmoved(got, sites, t0.Add(d)) {
		t.Errorf("%s = %v after present, want %v: the shift (mapTimes) does not reach it (a map, an unexported field?)", p, got[p], t0.Add(d))
	}
}

// unreadPodTimes are the times of a pod object the correlator never reads,
// so basePod leaves them: a time added to the Pod type fails the test until
// it is either moved by basePod or listed here.
var unreadPodTimes = []string{
	".Pod.ObjectMeta.ManagedFields[0].",                                // dropped by the pod watch
	".Pod.Spec.Volumes[0].VolumeSource.Ephemeral.VolumeClaimTemplate.", // a template's, not the pod's
	".Pod.Status.VolumeHealth[0].",                                     // read by nothing of readyline
}

// eventsWithTimes are the events normalize moves, one of each type the
// correlator handles but Tick (the clock itself).
var eventsWithTimes = []event.Event{
	&event.ProcessExec{}, &event.ProcessExit{}, &event.ProcessFork{}, &event.CRICall{}, &event.TCPConnection{},
	&event.ContainerInfo{}, &event.SourceStatus{}, &event.Drained{}, &event.PodEvents{}, &event.PodUpdate{},
	&event.PullSample{},
}

// TestNormalizeMovesEveryTime: every time.Time of each event is put on the
// base frame by normalize once the wall clock stepped.
func TestNormalizeMovesEveryTime(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	const d = time.Hour
	for _, ev := range eventsWithTimes {
		name := reflect.TypeOf(ev).Elem().Name()
		t.Run(name, func(t *testing.T) {
			v := reflect.New(reflect.TypeOf(ev).Elem())
			var sites, opaque []string
			fillTimes(v.Elem(), t0, "", map[reflect.Type]bool{}, &sites, &opaque)
			if len(sites) == 0 {
				t.Fatalf("no time.Time in %s", name)
			}
			for _, p := range opaque {
				t.Errorf("%s%s is an interface: whether a time.Time behind it moves cannot be told", name, p)
			}
			out := shiftedClock(t0, d).normalize(v.Interface().(event.Event))
			got := map[string]time.Time{}
			collectTimes(reflect.ValueOf(out).Elem(), "", got)
			for _, p := range unmoved(got, sites, t0.Add(-d)) {
				if slices.ContainsFunc(unreadPodTimes, func(u string) bool { return strings.HasPrefix(p, u) }) {
					continue
				}
				t.Errorf("%s%s = %v after normalize, want %v: normalize (or basePod) does not move it", name, p, got[p], t0.Add(-d))
			}
		})
	}
}

// TestReachCheckFails: the check above fails for what mapTimes does not
// reach, a time in a map and one in an unexported field, and only those.
func TestReachCheckFails(t *testing.T) {
	type inner struct{ At time.Time }
	type shape struct {
		At     time.Time
		Ptr    *inner
		List   []inner
		ByName map[string]inner
		hidden time.Time
	}
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	v := reflect.New(reflect.TypeFor[shape]()).Elem()
	var sites, opaque []string
	fillTimes(v, t0, "shape", map[reflect.Type]bool{}, &sites, &opaque)
	mapTimes(v, func(t time.Time) time.Time { return t.Add(time.Hour) }, map[uintptr]reflect.Value{})
	got := map[string]time.Time{}
	collectTimes(v, "shape", got)
	missed := unmoved(got, sites, t0.Add(time.Hour))
	if want := []string{"shape.ByName[key].At", "shape.hidden"}; !slices.Equal(missed, want) || len(sites) != 5 {
		t.Errorf("unmoved %v of %v, want %v", missed, sites, want)
	}
}
