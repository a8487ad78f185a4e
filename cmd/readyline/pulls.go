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
// store of the runtime that RuntimeSource is connected to (containerd's; a
// runtime without it answers an error, and the pull is drawn without
// bytes). Its reader follows RuntimeSource to another endpoint.
type pullProgress struct {
	endpoint func() string

	// open connects to the runtime at an endpoint: collector's
	// PullProgressReader, but in tests.
	open func(endpoint string) (progressReader, error)

	mu     sync.Mutex
	at     string
	reader progressReader
	// recent are the answers of the last second, by pull: a page, explain
	// --watch and readyline-api's polls of several starts ask about the
	// same pulls within it, and each answer costs the content store RPCs.
	recent map[pullKey]recentProgress
	now    func() time.Time // time.Now, but in tests
	// read is told of each read of the content store, answered or not,
	// and how long it took (nil: no one is told); answers given again
	// within progressFresh are not reads.
	read func(took time.Duration)
}

// progressReader is what pullProgress asks: a content store.
type progressReader interface {
	Progress(ctx context.Context, image string, since time.Time) (*event.PullProgress, error)
	Close() error
}

type pullKey struct {
	image string
	since time.Time
}

type recentProgress struct {
	p  *event.PullProgress
	at time.Time
}

// progressFresh is how long an answer of the content store is given again.
const progressFresh = time.Second

var errNoRuntime = errors.New("no runtime answers")

// pullProgressWait bounds what a question waits for the content store.
const pullProgressWait = 300 * time.Millisecond

func (p *pullProgress) Progress(ctx context.Context, image string, since time.Time) (*event.PullProgress, error) {
	ep := p.endpoint()
	if !strings.HasPrefix(ep, "unix://") {
		return nil, errNoRuntime
	}
	key, now := pullKey{image, since}, p.clock()
	p.mu.Lock()
	if r, ok := p.recent[key]; ok && now.Sub(r.at) < progressFresh && p.at == ep {
		p.mu.Unlock()
		return r.p, nil
	}
	if p.at != ep {
		if p.reader != nil {
			p.reader.Close()
		}
		open := p.open
		if open == nil {
			open = func(ep string) (progressReader, error) { return collector.NewPullProgressReader(ep) }
		}
		r, err := open(ep)
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
	began := p.clock()
	pp, err := r.Progress(ctx, image, since)
	if p.read != nil {
		p.read(p.clock().Sub(began))
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.recent == nil {
		p.recent = make(map[pullKey]recentProgress)
	}
	for k, old := range p.recent {
		if now.Sub(old.at) >= progressFresh {
			delete(p.recent, k) // the pulls of a second ago: a handful
		}
	}
	p.recent[key] = recentProgress{pp, now}
	return pp, nil
}

func (p *pullProgress) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
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
