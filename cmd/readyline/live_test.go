package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/correlator"
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
