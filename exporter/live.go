package exporter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter/apiclient"
)

// LiveStarts is what a daemon knows beyond the timelines a Store keeps: the
// starts still in progress, derived on request. It is the correlator's,
// reached through the daemon's loop, so a call may have to wait for it:
// each is bounded by its ctx, and ErrBusy says the loop did not answer in
// time. Implementations are safe for concurrent use.
type LiveStarts interface {
	// Snapshot returns the start of the pod q names as of now, when it is
	// in progress (correlator.Correlator.Snapshot); apiclient.ErrNotFound
	// when none is.
	Snapshot(ctx context.Context, q correlator.Query) (*correlator.Timeline, error)
	// InProgress lists the starts in progress, oldest first.
	InProgress(ctx context.Context) ([]correlator.StartSummary, error)
	// After returns what happened to the pod with this UID after its start
	// ended Ready (correlator.Correlator.After); apiclient.ErrNotFound
	// when nothing is known of it.
	After(ctx context.Context, uid string) (*correlator.After, error)
}

// ErrBusy is returned by a LiveStarts that could not answer within its
// context: the daemon's loop was busy with the node's events, which come
// first.
var ErrBusy = errors.New("the daemon is busy with the node's events; ask again")

// liveTimeout bounds what a request to the API waits for the daemon's
// loop: an answer within 2 s, or a clear error.
const liveTimeout = 1500 * time.Millisecond

// SetLive makes the Store's handlers answer for the starts in progress too,
// from l (nil: only the stored timelines). Call it before serving.
func (s *Store) SetLive(l LiveStarts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = l
}

func (s *Store) liveStarts() LiveStarts {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.live
}

// Find returns the start of pod namespace/name (with uid, when not empty:
// that pod's, not an earlier one's of the same name): the one in progress,
// as of now, when there is one and it is the newest of that name, else the
// stored one. It returns an error wrapping apiclient.ErrNotFound when
// there is neither, ErrBusy when the start in progress could not be derived in time
// and none is stored.
func (s *Store) Find(ctx context.Context, namespace, name, uid string) (*correlator.Timeline, error) {
	stored, ok := s.kept(namespace, name, uid)
	var liveErr error
	if l := s.liveStarts(); l != nil {
		lctx, cancel := context.WithTimeout(ctx, liveTimeout)
		tl, err := l.Snapshot(lctx, correlator.Query{UID: uid, Namespace: namespace, Name: name})
		cancel()
		switch {
		case err == nil && uid == "" && tl.Pod.Namespace == namespace && tl.Pod.Name == name:
			if !ok || !stored.Start.After(tl.Start) || stored.Pod.UID == tl.Pod.UID {
				return tl, nil
			}
		case err == nil && tl.Pod.UID == uid && tl.Pod.Namespace == namespace && tl.Pod.Name == name:
			return tl, nil
		case err != nil && !errors.Is(err, apiclient.ErrNotFound):
			liveErr = err
		}
	}
	if ok {
		if l := s.liveStarts(); l != nil && stored.Outcome == correlator.OutcomeReady {
			lctx, cancel := context.WithTimeout(ctx, liveTimeout)
			stored.After, _ = l.After(lctx, stored.Pod.UID) // busy: the start alone
			cancel()
		}
		return stored, nil
	}
	if liveErr != nil {
		return nil, fmt.Errorf("the start of %s/%s in progress: %w", namespace, name, liveErr)
	}
	return nil, apiclient.ErrNotFound
}

// kept returns the kept start of pod namespace/name (with uid, when not
// empty: that pod's): the timeline as it was exported, a start reported at
// its deadline included.
func (s *Store) kept(namespace, name, uid string) (*correlator.Timeline, bool) {
	tl, ok := s.Get(namespace, name)
	if uid != "" && (!ok || tl.Pod.UID != uid) {
		tl, ok = s.GetUID(uid)
		ok = ok && tl.Pod.Namespace == namespace && tl.Pod.Name == name
	}
	return tl, ok
}

// MaxWaitingDerived bounds the starts in progress whose waiting a list
// derives (newest first): each is a snapshot of the daemon's loop.
const MaxWaitingDerived = 32

// inProgress lists the starts in progress as the list shows them, newest
// first, and the UIDs it names; none when there is no LiveStarts or it did
// not answer in time (the list then shows the stored starts alone).
func (s *Store) inProgress(ctx context.Context, waiting bool) ([]apiclient.TimelineSummary, map[string]bool) {
	l := s.liveStarts()
	if l == nil {
		return nil, nil
	}
	lctx, cancel := context.WithTimeout(ctx, liveTimeout)
	defer cancel()
	starts, err := l.InProgress(lctx)
	if err != nil {
		return nil, nil
	}
	out := make([]apiclient.TimelineSummary, 0, len(starts))
	uids := make(map[string]bool, len(starts))
	for i := len(starts) - 1; i >= 0; i-- {
		st := starts[i]
		d, _ := between(st.Start, st.AsOf)
		out = append(out, apiclient.TimelineSummary{
			Namespace: st.Pod.Namespace, Name: st.Pod.Name, UID: st.Pod.UID,
			Outcome: st.Outcome, Start: st.Start, End: st.AsOf, DurationSeconds: d.Seconds(),
		})
		if waiting && len(out) <= MaxWaitingDerived {
			if tl, err := l.Snapshot(lctx, correlator.Query{UID: st.Pod.UID}); err == nil {
				out[len(out)-1].Waiting = tl.Waiting
			}
		}
		uids[st.Pod.UID] = true
	}
	return out, uids
}
