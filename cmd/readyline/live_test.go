package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/apiclient"
)

// TestLiveQuestionReadsOnlyThisNodesEvents: a question about a pod with no
// start in progress here (another node's, as on kind, where each node's
// readyline was asked about the other's pod) reads no Events and records
// nothing of it; a start in progress here has its Events read by its own
// UID and handed to the loop before the answer.
func TestLiveQuestionReadsOnlyThisNodesEvents(t *testing.T) {
	var asked []correlator.Query
	l := newLiveStarts(nil, func(_ context.Context, q correlator.Query) []*event.PodEvents {
		asked = append(asked, q)
		return []*event.PodEvents{{PodUID: q.UID, Namespace: q.Namespace, Name: q.Name}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	taken := make(chan liveRequest, 8)
	go func() { // the loop: one start in progress, default/here
		for {
			select {
			case <-ctx.Done():
				return
			case req := <-l.pending():
				taken <- req
				var r liveReply
				if req.q.Name == "here" || req.q.UID == "uid-here" {
					r.tl = &correlator.Timeline{Pod: correlator.PodRef{UID: "uid-here", Namespace: "default", Name: "here"}}
				}
				req.reply <- r
			}
		}
	}()
	if _, err := l.Snapshot(ctx, correlator.Query{Namespace: "default", Name: "elsewhere"}); !errors.Is(err, apiclient.ErrNotFound) {
		t.Fatalf("another node's pod: %v, want not found", err)
	}
	if len(asked) != 0 {
		t.Errorf("another node's pod had its Events read: %+v", asked)
	}
	<-taken
	tl, err := l.Snapshot(ctx, correlator.Query{Namespace: "default", Name: "here"})
	if err != nil || tl.Pod.UID != "uid-here" {
		t.Fatalf("this node's start: %+v, %v", tl, err)
	}
	if len(asked) != 1 || asked[0].UID != "uid-here" {
		t.Errorf("Events read for %+v, want once by the pod's UID", asked)
	}
	<-taken // the question
	if req := <-taken; len(req.events) != 1 || req.q.UID != "uid-here" {
		t.Errorf("the loop was handed %d Events for %+v, want the pod's, by UID", len(req.events), req.q)
	}
}

// TestLiveQuestionsRate: the README's "20 a second at most". Twenty
// questions at once are answered; the next, had it to be answered within
// 10 ms, is refused busy (the next room is 50 ms away); one that may wait
// 100 ms is answered.
func TestLiveQuestionsRate(t *testing.T) {
	l := newLiveStarts(nil, nil)
	if l.limit.Limit() != 20 || l.limit.Burst() != 20 {
		t.Errorf("questions limited to %v a second, burst %d: want 20 and 20", l.limit.Limit(), l.limit.Burst())
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // the loop
		for {
			select {
			case <-ctx.Done():
				return
			case req := <-l.pending():
				req.reply <- liveReply{}
			}
		}
	}()
	ask := func(wait time.Duration) error {
		qctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		_, err := l.InProgress(qctx)
		return err
	}
	begin := time.Now()
	for i := range 20 {
		if err := ask(10 * time.Millisecond); err != nil {
			t.Fatalf("question %d of 20 at once: %v", i+1, err)
		}
	}
	if err := ask(10 * time.Millisecond); !errors.Is(err, exporter.ErrBusy) {
		if took := time.Since(begin); took < 30*time.Millisecond {
			t.Errorf("the 21st question at once: %v, want busy", err)
		} else {
			t.Logf("the 20 questions took %v, room for another: the 21st is not checked", took)
		}
	}
	if err := ask(100 * time.Millisecond); err != nil {
		t.Errorf("a question that may wait 100 ms: %v", err)
	}
}
