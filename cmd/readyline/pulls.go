package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/readyline/readyline/collector"
	"github.com/readyline/readyline/collector/event"
)

// pullProgress reads how far pulls in flight have come from the content
// store of the runtime the CRI source is connected to (containerd's; a
// runtime without it answers an error, and the pull is drawn without
// bytes). Its reader follows the CRI source to another endpoint.
type pullProgress struct {
	endpoint func() string

	mu     sync.Mutex
	at     string
	reader *collector.PullProgressReader
}

var errNoRuntime = errors.New("no runtime answers")

// pullProgressWait bounds what a question waits for the content store.
const pullProgressWait = 300 * time.Millisecond

func (p *pullProgress) Progress(ctx context.Context, image string, since time.Time) (*event.PullProgress, error) {
	ep := p.endpoint()
	if !strings.HasPrefix(ep, "unix://") {
		return nil, errNoRuntime
	}
	p.mu.Lock()
	if p.at != ep {
		if p.reader != nil {
			p.reader.Close()
		}
		r, err := collector.NewPullProgressReader(ep)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.at, p.reader = ep, r
	}
	r := p.reader
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, pullProgressWait)
	defer cancel()
	return r.Progress(ctx, image, since)
}

// withProgress returns calls with each PullImage in flight given its
// progress (a copy: calls are the kernel map's, read for this question).
func withProgress(ctx context.Context, calls []*event.CRICall, progress func(context.Context, string, time.Time) (*event.PullProgress, error)) []*event.CRICall {
	if progress == nil {
		return calls
	}
	var out []*event.CRICall
	for i, c := range calls {
		if c == nil || c.Method != event.CRIPullImage || c.Image == "" || c.Time.IsZero() || !c.End.IsZero() {
			continue
		}
		p, err := progress(ctx, c.Image, c.Time)
		if err != nil {
			continue
		}
		if out == nil {
			out = append([]*event.CRICall(nil), calls...)
		}
		withP := *c
		withP.Progress = p
		out[i] = &withP
	}
	if out == nil {
		return calls
	}
	return out
}
