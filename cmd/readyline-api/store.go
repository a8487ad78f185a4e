package main

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/google/btree"

	"github.com/readyline/readyline/exporter/podstartapi"
)

// podKey is a pod start's name: its pod's namespace and name.
type podKey struct{ namespace, name string }

func keyOf(ps *podstartapi.PodStart) podKey { return podKey{ps.Namespace, ps.Name} }

// compareKeys orders keys by namespace, then name: a list's order.
func compareKeys(a, b podKey) int {
	if c := compareStrings(a.namespace, b.namespace); c != 0 {
		return c
	}
	return compareStrings(a.name, b.name)
}

// entry is a merged start in the index.
type entry struct {
	key podKey
	ps  *podstartapi.PodStart
}

func lessEntries(a, b entry) bool { return compareKeys(a.key, b.key) < 0 }

// summaries holds the pod starts' summaries every node reported last
// (without timelines), merged into one per pod: the newest start of its
// name, when two nodes report one (a pod deleted and made again elsewhere).
// It serves the list and the watch of podstarts. Its resource versions are
// the microseconds of the wall clock (or one more than the last, when the
// clock is behind): a watch that comes back to the other replica with a
// version of this one still resumes about where it left. It is safe for
// concurrent use.
//
// A replica learns of a change up to a poll after the other one: a watch
// resumed here with the other's version replays the changes of resumeSkew
// before it (seen twice at worst, which a watch's client takes as the
// updates they are), as far as its own start; it is refused as expired
// (the client lists again) for a version from before it started, or
// before its oldest change kept.
type summaries struct {
	now        func() time.Time
	maxHistory int
	resumeSkew time.Duration // set before use; 0 in tests of one replica
	since      uint64        // the version of the store's creation

	mu       sync.Mutex
	rv       uint64
	reported map[string]map[podKey]*podstartapi.PodStart // by node
	owners   map[podKey][]string                         // the nodes that report each, sorted
	merged   map[podKey]*podstartapi.PodStart            // never changed once in: replaced
	sorted   *btree.BTreeG[entry]                        // merged, in a list's order
	perNS    map[string]int                              // merged's starts by namespace
	history  []change                                    // oldest first, at most maxHistory
	expired  uint64                                      // the newest version no longer in history
	watchers map[*watcher]struct{}
}

// formatRV and parseRV write and read a resource version.
func formatRV(rv uint64) string { return strconv.FormatUint(rv, 10) }

func parseRV(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	rv, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("resourceVersion %q: not a pod starts' version", s))
	}
	return rv, nil
}

// change is one watch event, at its resource version.
type change struct {
	typ watch.EventType
	obj *podstartapi.PodStart
	rv  uint64
}

// watchBuffer is how many events a watcher may fall behind before it is
// closed (its client lists again).
const watchBuffer = 1024

func newSummaries(maxHistory int, now func() time.Time) *summaries {
	if now == nil {
		now = time.Now
	}
	return &summaries{
		now: now, maxHistory: maxHistory, since: uint64(now().UnixMicro()),
		reported: map[string]map[podKey]*podstartapi.PodStart{},
		owners:   map[podKey][]string{},
		merged:   map[podKey]*podstartapi.PodStart{},
		sorted:   btree.NewG(32, lessEntries),
		perNS:    map[string]int{},
		watchers: map[*watcher]struct{}{},
	}
}

// nextRV is the next resource version; s.mu is held.
func (s *summaries) nextRV() uint64 {
	s.rv = max(s.rv+1, uint64(s.now().UnixMicro()))
	return s.rv
}

// ReplaceNode makes starts what node reports (nil: forget the node), and
// tells the watchers what that changed.
func (s *summaries) ReplaceNode(node string, starts []*podstartapi.PodStart) {
	next := make(map[podKey]*podstartapi.PodStart, len(starts))
	for _, ps := range starts {
		k := keyOf(ps)
		if old, ok := next[k]; !ok || ps.Status.StartTime.After(old.Status.StartTime.Time) {
			next[k] = ps
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	prev := s.reported[node]
	if starts == nil {
		delete(s.reported, node)
	} else {
		s.reported[node] = next
	}
	touched := make(map[podKey]struct{}, len(prev)+len(next))
	for k := range prev {
		touched[k] = struct{}{}
		if _, still := next[k]; !still {
			if i, ok := slices.BinarySearch(s.owners[k], node); ok {
				s.owners[k] = slices.Delete(s.owners[k], i, i+1)
			}
			if len(s.owners[k]) == 0 {
				delete(s.owners, k)
			}
		}
	}
	for k := range next {
		touched[k] = struct{}{}
		if i, ok := slices.BinarySearch(s.owners[k], node); !ok {
			s.owners[k] = slices.Insert(s.owners[k], i, node)
		}
	}
	for _, k := range slices.SortedFunc(maps.Keys(touched), compareKeys) {
		s.remerge(k)
	}
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Nodes lists the nodes that reported.
func (s *summaries) Nodes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.reported))
}

// remerge picks the newest start of k among the nodes' and records the
// change; s.mu is held.
func (s *summaries) remerge(k podKey) {
	var win *podstartapi.PodStart
	winNode := ""
	for _, node := range s.owners[k] {
		ps := s.reported[node][k]
		if win == nil || ps.Status.StartTime.After(win.Status.StartTime.Time) {
			win, winNode = ps, node
		}
	}
	cur, had := s.merged[k]
	switch {
	case win == nil && !had:
		return
	case win == nil:
		delete(s.merged, k)
		s.sorted.Delete(entry{key: k})
		if s.perNS[k.namespace]--; s.perNS[k.namespace] == 0 {
			delete(s.perNS, k.namespace)
		}
		gone := cur.DeepCopy()
		gone.ResourceVersion = formatRV(s.nextRV())
		s.record(watch.Deleted, gone)
		return
	case had && sameStart(cur, win):
		s.reported[winNode][k] = cur // one copy of what the node says again
		return
	}
	// A node's report is kept once: the merged start is the report itself,
	// given its version before anyone sees it (an earlier report that wins
	// again has been seen: a copy then).
	obj := win
	if obj.ResourceVersion != "" {
		obj = win.DeepCopy()
	}
	obj.ResourceVersion = formatRV(s.nextRV())
	s.merged[k] = obj
	s.sorted.ReplaceOrInsert(entry{k, obj})
	if !had {
		s.perNS[k.namespace]++
	}
	typ := watch.Added
	if had {
		typ = watch.Modified
	}
	s.record(typ, obj)
}

// sameStart says whether a and b say the same (their versions aside).
func sameStart(a, b *podstartapi.PodStart) bool {
	return a.UID == b.UID && reflect.DeepEqual(a.Spec, b.Spec) && reflect.DeepEqual(a.Status, b.Status)
}

// record keeps a change in the history and sends it to the watchers; s.mu
// is held.
func (s *summaries) record(typ watch.EventType, obj *podstartapi.PodStart) {
	c := change{typ: typ, obj: obj, rv: s.rv}
	s.history = append(s.history, c)
	if over := len(s.history) - s.maxHistory; over > 0 {
		s.expired = s.history[over-1].rv
		s.history = slices.Delete(s.history, 0, over)
	}
	for w := range s.watchers {
		if !w.send(c) {
			delete(s.watchers, w)
		}
	}
}

// List returns the merged starts of namespace (every namespace's when
// "") that match, by namespace and name, and the version they are as of.
// The items share their maps and timeline with the store: the store never
// changes a start once it holds it, and the caller must not either.
func (s *summaries) List(namespace string, match func(*podstartapi.PodStart) bool) ([]podstartapi.PodStart, uint64) {
	p := s.Page(namespace, nil, 0, match, false)
	return p.Items, p.RV
}

// page is one page of a list.
type page struct {
	Items []podstartapi.PodStart
	RV    uint64
	// More is set when a start that matches follows the page; Remaining
	// counts those that follow it (-1: not counted).
	More      bool
	Remaining int64
}

// Page is List's page of at most limit starts (0: every one) after the
// key after when not nil. The index is in a list's order: a page costs its
// own starts (and, with a selector, the starts it skips), not a sort of
// the cluster's. With every start matching (countRest), Remaining counts
// what follows from the starts of each namespace; otherwise it is -1, as
// the API server leaves it unset for a list with a selector.
func (s *summaries) Page(namespace string, after *podKey, limit int, match func(*podstartapi.PodStart) bool, countRest bool) page {
	from := entry{key: podKey{namespace: namespace}}
	if after != nil && compareKeys(*after, from.key) >= 0 {
		from.key = *after
	}
	p := page{Remaining: -1}
	s.mu.Lock()
	defer s.mu.Unlock()
	p.RV = s.rv
	size := len(s.merged)
	if namespace != "" {
		size = s.perNS[namespace]
	}
	if limit > 0 {
		size = min(size, limit)
	}
	p.Items = make([]podstartapi.PodStart, 0, size)
	var last podKey
	s.sorted.AscendGreaterOrEqual(from, func(e entry) bool {
		switch {
		case namespace != "" && e.key.namespace != namespace:
			return false
		case after != nil && e.key == *after:
			return true
		case !match(e.ps):
			return true
		case limit > 0 && len(p.Items) == limit:
			p.More = true
			return false
		}
		p.Items = append(p.Items, *e.ps)
		last = e.key
		return true
	})
	if p.More && countRest {
		p.Remaining = s.countAfter(namespace, last)
	}
	return p
}

// countAfter counts the starts of namespace ("": every one) after k; s.mu
// is held. It reads k's own namespace's starts and every other's count.
func (s *summaries) countAfter(namespace string, k podKey) int64 {
	var n int64
	s.sorted.AscendGreaterOrEqual(entry{key: k}, func(e entry) bool {
		if e.key.namespace != k.namespace {
			return false
		}
		if e.key != k {
			n++
		}
		return true
	})
	if namespace == "" {
		for ns, c := range s.perNS {
			if ns > k.namespace {
				n += int64(c)
			}
		}
	}
	return n
}

// Get returns the merged start of namespace/name.
func (s *summaries) Get(namespace, name string) (*podstartapi.PodStart, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.merged[podKey{namespace, name}]
	if !ok {
		return nil, false
	}
	return ps.DeepCopy(), true
}

// Watch streams the changes that match after version from; from 0 starts
// with every matching start as added. A version older than the history
// kept is refused as expired (410: the client lists again).
//
// initialEnd (a watch of sendInitialEvents, as client-go's informers ask
// for a list by default) ends the starts sent as added with a bookmark
// that says so, at the version they are as of.
func (s *summaries) Watch(ctx context.Context, from uint64, initialEnd bool, match func(*podstartapi.PodStart) bool) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var initial []*podstartapi.PodStart
	if from == 0 || initialEnd {
		from = 0
		for _, ps := range s.merged {
			if match(ps) {
				initial = append(initial, ps)
			}
		}
	}
	// Room for the initial events (and their bookmark) besides the
	// buffer: they never make a watcher too far behind, and a namespace's
	// watch holds that namespace's, not the cluster's.
	w := &watcher{match: match, ch: make(chan watch.Event, len(initial)+watchBuffer), done: make(chan struct{})}
	if from == 0 {
		for _, ps := range initial {
			w.send(change{typ: watch.Added, obj: ps})
		}
		if initialEnd {
			w.ch <- watch.Event{Type: watch.Bookmark, Object: &podstartapi.PodStart{ObjectMeta: metav1.ObjectMeta{
				ResourceVersion: formatRV(s.rv), Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}}
		}
	} else {
		// From before this replica started, the client may hold what
		// it never knew (a start since gone): list again. Else the
		// replay reaches resumeSkew back, or to this replica's start,
		// before which it knew nothing.
		back := max(from-min(from, uint64(s.resumeSkew.Microseconds())), s.since)
		if from < s.since || back < s.expired {
			return nil, apierrors.NewResourceExpired("too old resource version: the pod starts' history begins later; list again")
		}
		for _, c := range s.history {
			if c.rv > back {
				w.send(c)
			}
		}
	}
	s.watchers[w] = struct{}{}
	go func() {
		select {
		case <-ctx.Done():
		case <-w.done:
		}
		w.stop()
		s.mu.Lock()
		delete(s.watchers, w)
		if !w.closed {
			w.closed = true
			close(w.ch)
		}
		s.mu.Unlock()
	}()
	return w, nil
}

// watcher is one watch of Watch.
type watcher struct {
	match    func(*podstartapi.PodStart) bool
	ch       chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
	closed   bool // ch closed; under summaries.mu
}

// send queues c when it matches; false when the watcher is too far behind
// (it is then stopped) or stopped. summaries.mu is held.
func (w *watcher) send(c change) bool {
	if w.closed {
		return false
	}
	if !w.match(c.obj) {
		return true
	}
	select {
	case w.ch <- watch.Event{Type: c.typ, Object: c.obj.DeepCopy()}:
		return true
	default:
		w.closed = true
		close(w.ch)
		w.stop()
		return false
	}
}

func (w *watcher) stop() { w.stopOnce.Do(func() { close(w.done) }) }

func (w *watcher) Stop()                          { w.stop() }
func (w *watcher) ResultChan() <-chan watch.Event { return w.ch }
