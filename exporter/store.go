package exporter

import (
	"bytes"
	"compress/flate"
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// DefaultStoreSize is how many timelines a Store keeps when asked for <= 0.
const DefaultStoreSize = 500

// DefaultStoreBytes is the byte budget of a Store asked for <= 0.
const DefaultStoreBytes = 32 << 20

// StoreLimits bound what a Store keeps.
type StoreLimits struct {
	// Timelines is how many timelines it keeps (DefaultStoreSize when <= 0).
	Timelines int
	// Bytes bounds the memory the timelines it keeps hold, each counted as
	// it is held: its JSON, deflated (a fifth to a third of it),
	// DefaultStoreBytes when <= 0. The latest timeline is kept even when
	// it alone is larger.
	Bytes int64
}

// Store keeps the last timelines in memory, within its StoreLimits, by UID
// and by namespace/name, for 'readyline explain'. When a pod name has
// several starts stored (a pod deleted and created again), the one that
// started last wins. Store is safe for concurrent use; the timelines it
// holds must not be modified.
//
// A timeline is held as its JSON, deflated, beside the few fields the
// lists show (decoded, the 256 timelines of a burst of pod starts took
// 1.2 MiB of heap, and the daemon's heap grows by half of what stays live
// (GOGC=50)). Get decodes it again: the timeline as the API writes it,
// with invalid UTF-8 as U+FFFD but in the pod's name and UID.
type Store struct {
	mu     sync.RWMutex
	limits StoreLimits
	bytes  int64                    // sum of the stored entries' sizes
	order  *list.List               // of *storeEntry, oldest first
	byUID  map[string]*list.Element // pod UID -> element
	byName map[string]string        // namespace/name -> UID of the latest start
	live   LiveStarts               // the starts in progress (SetLive); nil: none
}

// storeEntry is a stored timeline: head, its fields the lists and the
// name index use (Pod, Start, End, Outcome, Reason, Partial), and data,
// all of it as deflated JSON; or, when it cannot be written as JSON (a
// time past year 9999, which no clock of the node gives), head is all of
// it and data is nil. size is what it counts in StoreLimits.Bytes.
type storeEntry struct {
	head *correlator.Timeline
	data []byte
	size int64
}

// unknownTimelineSize is the size counted for a timeline held as it is.
const unknownTimelineSize = 1 << 20

// NewStore returns a Store that keeps timelines within l.
func NewStore(l StoreLimits) *Store {
	if l.Timelines <= 0 {
		l.Timelines = DefaultStoreSize
	}
	if l.Bytes <= 0 {
		l.Bytes = DefaultStoreBytes
	}
	return &Store{limits: l, order: list.New(), byUID: map[string]*list.Element{}, byName: map[string]string{}}
}

// deflaters are the flate writers of Add (each ~0.5 MiB): reused through
// a burst of pod starts, collected on a quiet node.
var deflaters sync.Pool

// newStoreEntry writes tl as it is stored.
func newStoreEntry(tl *correlator.Timeline) *storeEntry {
	head := &correlator.Timeline{Pod: tl.Pod, Start: tl.Start, End: tl.End, Outcome: tl.Outcome, Reason: tl.Reason, Partial: tl.Partial}
	var b bytes.Buffer
	zw, _ := deflaters.Get().(*flate.Writer)
	if zw == nil {
		zw, _ = flate.NewWriter(&b, flate.BestSpeed) // a valid level: no error
	} else {
		zw.Reset(&b)
	}
	defer func() {
		zw.Reset(io.Discard) // the pooled writer must not keep b alive
		deflaters.Put(zw)
	}()
	if err := json.NewEncoder(zw).Encode(tl); err != nil || zw.Close() != nil {
		return &storeEntry{head: tl, size: unknownTimelineSize}
	}
	data := bytes.Clone(b.Bytes()) // not the buffer's spare capacity
	return &storeEntry{head: head, data: data, size: int64(len(data))}
}

// timeline decodes the stored timeline.
func (e *storeEntry) timeline() (*correlator.Timeline, error) {
	if e.data == nil {
		return e.head, nil
	}
	zr := flate.NewReader(bytes.NewReader(e.data))
	defer zr.Close()
	var tl correlator.Timeline
	if err := json.NewDecoder(zr).Decode(&tl); err != nil {
		return nil, fmt.Errorf("decoding the stored timeline of %s: %w", e.head.Pod, err)
	}
	// The pod as it was named: JSON makes invalid UTF-8 U+FFFD, and the
	// pages and the API find a pod by its name and UID.
	tl.Pod = e.head.Pod
	return &tl, nil
}

// Add stores tl, replacing a timeline of the same pod UID (late data), and
// evicts the oldest timelines beyond the limits. The store takes tl over:
// the caller must not modify it afterwards. Add writes tl as it is stored
// before it takes the lock.
func (s *Store) Add(tl *correlator.Timeline) {
	e := newStoreEntry(tl)
	tl = e.head
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytes += e.size
	if el, ok := s.byUID[tl.Pod.UID]; ok {
		old := el.Value.(*storeEntry)
		s.bytes -= old.size
		el.Value = e
		s.order.MoveToBack(el)
		if old.head.Pod.String() != tl.Pod.String() {
			s.forgetName(old.head)
		}
	} else {
		s.byUID[tl.Pod.UID] = s.order.PushBack(e)
	}
	key := tl.Pod.String()
	if cur, ok := s.byUID[s.byName[key]]; !ok || cur.Value == e || !timelineAt(cur).Start.After(tl.Start) {
		s.byName[key] = tl.Pod.UID
	}
	for s.order.Len() > 1 && (s.order.Len() > s.limits.Timelines || s.bytes > s.limits.Bytes) {
		old := s.order.Remove(s.order.Front()).(*storeEntry)
		s.bytes -= old.size
		delete(s.byUID, old.head.Pod.UID)
		s.forgetName(old.head)
	}
}

// timelineAt is the head of the timeline of an element of s.order: its
// Pod, Start, End, Outcome, Reason and Partial (storeEntry).
func timelineAt(el *list.Element) *correlator.Timeline { return el.Value.(*storeEntry).head }

// forgetName points old's name at another stored start of the same pod
// name, or removes it, when it pointed at old. s.mu must be held.
func (s *Store) forgetName(old *correlator.Timeline) {
	key := old.Pod.String()
	if s.byName[key] != old.Pod.UID {
		return
	}
	delete(s.byName, key)
	var best *correlator.Timeline
	for el := s.order.Front(); el != nil; el = el.Next() {
		tl := timelineAt(el)
		if tl != old && tl.Pod.String() == key && (best == nil || !tl.Start.Before(best.Start)) {
			best = tl
		}
	}
	if best != nil {
		s.byName[key] = best.Pod.UID
	}
}

// Get returns the latest start of the pod namespace/name.
func (s *Store) Get(namespace, name string) (*correlator.Timeline, bool) {
	return s.decode(func() *list.Element { return s.byUID[s.byName[namespace+"/"+name]] })
}

// GetUID returns the timeline of the pod with this UID.
func (s *Store) GetUID(uid string) (*correlator.Timeline, bool) {
	return s.decode(func() *list.Element { return s.byUID[uid] })
}

// decode decodes, outside the lock, the timeline of the element find
// returns under it (nil: none). A stored timeline that does not decode
// (which only a bug in this file could make) is not found, not half read.
func (s *Store) decode(find func() *list.Element) (*correlator.Timeline, bool) {
	s.mu.RLock()
	el := find()
	var e *storeEntry
	if el != nil {
		e = el.Value.(*storeEntry)
	}
	s.mu.RUnlock()
	if e == nil {
		return nil, false
	}
	tl, err := e.timeline()
	return tl, err == nil
}

// Len is the number of timelines stored.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.order.Len()
}

// Bytes is the estimated size of the timelines stored (see StoreLimits).
func (s *Store) Bytes() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.bytes
}

// List summarises the stored timelines, most recently added first.
func (s *Store) List() []apiclient.TimelineSummary {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]apiclient.TimelineSummary, 0, s.order.Len())
	for el := s.order.Back(); el != nil; el = el.Prev() {
		tl := timelineAt(el)
		d, _ := between(tl.Start, tl.End)
		out = append(out, apiclient.TimelineSummary{
			Namespace: tl.Pod.Namespace, Name: tl.Pod.Name, UID: tl.Pod.UID,
			Outcome: tl.Outcome, Reason: tl.Reason, Waiting: tl.Waiting, Start: tl.Start, End: tl.End,
			DurationSeconds: d.Seconds(),
		})
	}
	return out
}

// listAll is List with the starts in progress first, newest first (a
// start reported at its deadline and still in progress is listed once, as
// in progress).
func (s *Store) listAll(ctx context.Context, waiting bool) []apiclient.TimelineSummary {
	out, live := s.inProgress(ctx, waiting)
	for _, st := range s.List() {
		if !live[st.UID] {
			out = append(out, st)
		}
	}
	return out
}

// Handler serves the explain API:
//
//	GET /api/v1/timelines                     {"timelines": [apiclient.TimelineSummary...]}, newest first
//	GET /api/v1/timelines?namespace=NS        the same, of the pods of namespace NS
//	GET /api/v1/timelines?waiting=1           with what each start in progress waits on (derived: at
//	                                          most MaxWaitingDerived of them)
//	GET /api/v1/timelines/{namespace}/{name}  the latest start of that pod: in progress (a snapshot as of
//	                                          now, AsOf set), else kept (After added for a pod still
//	                                          there), or 404; ?uid=: of the pod with that UID;
//	                                          ?kept=1: the kept timeline as it was exported
//
// Each answers with the starts the request's PodReader may read only (403
// for a pod it may not), in compact JSON, indented for curl (pretty). An
// answer about a pod says in its Server-Timing (apiclient.ServerTimingHeader)
// how long the daemon took to find it.
// logger (may be nil) gets a Debug line per request that fails.
func (s *Store) Handler(logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/timelines", func(w http.ResponseWriter, r *http.Request) {
		list := s.listAll(r.Context(), r.URL.Query().Get("waiting") != "")
		if ns := r.URL.Query().Get("namespace"); ns != "" {
			list = slices.DeleteFunc(list, func(s apiclient.TimelineSummary) bool { return s.Namespace != ns })
		}
		list, err := readable(podReaderOf(r), list, func(s apiclient.TimelineSummary) (string, string) { return s.Namespace, s.Name })
		if err != nil {
			http.Error(w, err.Error(), accessStatus(err))
			return
		}
		writeJSONTagged(w, r, logger, apiclient.TimelineList{Timelines: list})
	})
	mux.HandleFunc("GET /api/v1/timelines/{namespace}/{name}", func(w http.ResponseWriter, r *http.Request) {
		ns, name := r.PathValue("namespace"), r.PathValue("name")
		if !mayRead(w, r, logger, ns, name) {
			return
		}
		// With uid: the pod of that name now, not an earlier one. With
		// kept: the timeline as it was exported, not the start in
		// progress (a start reported at its deadline goes on).
		q := r.URL.Query()
		asked := time.Now()
		tl, err := s.Find(r.Context(), ns, name, q.Get("uid"))
		if q.Get("kept") != "" {
			var ok bool
			if tl, ok = s.kept(ns, name, q.Get("uid")); !ok {
				err = apiclient.ErrNotFound
			} else {
				err = nil
			}
		}
		w.Header().Set(apiclient.ServerTimingHeader, apiclient.ServerTiming(time.Since(asked)))
		switch {
		case errors.Is(err, apiclient.ErrNotFound):
			logger.Debug("no timeline for pod", "namespace", ns, "pod", name)
			http.Error(w, fmt.Sprintf("no start of pod %s/%s in progress or kept (this daemon keeps the last %d pod starts on its node, at most %d MiB of them)",
				ns, name, s.limits.Timelines, s.limits.Bytes>>20), http.StatusNotFound)
			return
		case err != nil:
			logger.Debug("no timeline for pod", "namespace", ns, "pod", name, "error", err)
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeJSON(w, r, logger, ReaderView(podReaderOf(r), tl))
	})
	return mux
}

// writeJSONTagged is writeJSON with an ETag, the hash of the answer: a
// request whose If-None-Match has it gets 304 and no body. readyline-api
// asks every node each poll; a node whose starts did not change costs it
// no transfer and no decoding.
func writeJSONTagged(w http.ResponseWriter, r *http.Request, logger *slog.Logger, v any) {
	var buf bytes.Buffer
	if err := newEncoder(&buf, r).Encode(v); err != nil {
		logger.Debug("writing API response", "error", err)
		http.Error(w, "encoding the answer", http.StatusInternalServerError)
		return
	}
	h := fnv.New64a()
	_, _ = h.Write(buf.Bytes())
	tag := `"` + strconv.FormatUint(h.Sum64(), 36) + `"`
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(buf.Bytes()); err != nil {
		logger.Debug("writing API response", "error", err)
	}
}

// pretty reports whether r's answer is indented, as the Kubernetes API
// server decides it: ?pretty= when given (strconv.ParseBool), else for curl
// and wget, whose users read it. Programs (kubectl readyline, readyline-api)
// get it compact, and so do browsers, unlike from the API server: the
// daemon's page asks every second while it watches a start, and indenting
// made an answer cost three times as much to write (BenchmarkAnswerTimeline).
func pretty(r *http.Request) bool {
	if q := r.URL.Query().Get("pretty"); q != "" {
		p, _ := strconv.ParseBool(q)
		return p
	}
	ua := strings.ToLower(r.UserAgent())
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "wget")
}

// newEncoder encodes r's answer into w, indented when pretty.
func newEncoder(w io.Writer, r *http.Request) *json.Encoder {
	enc := json.NewEncoder(w)
	if pretty(r) {
		enc.SetIndent("", "  ")
	}
	return enc
}

func writeJSON(w http.ResponseWriter, r *http.Request, logger *slog.Logger, v any) {
	w.Header().Set("Content-Type", "application/json")
	if err := newEncoder(w, r).Encode(v); err != nil {
		logger.Debug("writing API response", "error", err)
	}
}
