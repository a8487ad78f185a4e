package collector

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
)

// One round of the sampler: the pulls that ran long enough, at most
// MaxPulls of them (the oldest), each read under Wait; a reading the cache
// gives again, a failed read, another method and a short call give no
// sample.
func TestPullSamplerRound(t *testing.T) {
	now := time.Date(2026, 12, 6, 6, 0, 10, 0, time.UTC)
	pull := func(uid, image string, ranFor time.Duration) *event.CRICall {
		return &event.CRICall{Time: now.Add(-ranFor), Method: event.CRIPullImage, PodUID: uid, Image: image}
	}
	calls := []*event.CRICall{
		pull("a", "big:1", 9*time.Second),
		{Time: now.Add(-8 * time.Second), Method: event.CRIStartContainer, PodUID: "a"},
		pull("b", "broken:1", 7*time.Second),
		pull("c", "mid:1", 5*time.Second),
		pull("d", "late:1", 3*time.Second), // past MaxPulls
		pull("e", "new:1", 500*time.Millisecond),
	}
	asOf := now
	var asked []string
	s := NewPullSampler(PullSamplerConfig{
		InFlight: func() ([]*event.CRICall, error) { return calls, nil },
		Progress: func(ctx context.Context, image string, since time.Time) (*event.PullProgress, error) {
			asked = append(asked, image)
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("read of %s without a deadline", image)
			}
			if image == "broken:1" {
				return nil, errors.New("no content store")
			}
			return &event.PullProgress{AsOf: asOf, Bytes: int64(now.Sub(since) / time.Millisecond), Total: 1 << 30, Layers: 3}, nil
		},
		MaxPulls: 3,
	}, nil)
	s.now = func() time.Time { return now }
	var got []*event.PullSample
	emit := func(ev event.Event) { got = append(got, ev.(*event.PullSample)) }

	s.sample(context.Background(), emit)
	if want := []string{"big:1", "broken:1", "mid:1"}; len(asked) != len(want) || asked[0] != want[0] || asked[2] != want[2] {
		t.Errorf("asked about %v, want %v", asked, want)
	}
	if len(got) != 2 || got[0].Image != "big:1" || got[1].Image != "mid:1" {
		t.Fatalf("samples %+v, want big:1's and mid:1's", got)
	}
	if g := got[0]; g.PodUID != "a" || !g.CallStart.Equal(calls[0].Time) || !g.Time.Equal(asOf) || g.Progress.Bytes != 9000 {
		t.Errorf("sample %+v: want pod a, the call's start, the reading's time and bytes", g)
	}

	// The cache's answer again (same AsOf): nothing new.
	s.sample(context.Background(), emit)
	if len(got) != 2 {
		t.Errorf("%d samples after a round of cached answers, want still 2", len(got))
	}
	// A fresh reading; big:1 has returned meanwhile and is forgotten.
	asOf = asOf.Add(2 * time.Second)
	calls = calls[1:]
	s.sample(context.Background(), emit)
	if len(got) != 4 || got[2].Image != "mid:1" || got[3].Image != "late:1" {
		t.Errorf("samples %+v, want mid:1's and late:1's added", got)
	}
	if _, ok := s.last[sampledCall{"a", "big:1", now.Add(-9 * time.Second)}]; ok {
		t.Error("a returned call is still remembered")
	}
}

// Without the calls in flight or a content store the sampler does nothing
// and returns when asked to.
func TestPullSamplerWithoutSources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := NewPullSampler(PullSamplerConfig{}, nil).Run(ctx, func(event.Event) { t.Error("emitted") }); err != nil {
		t.Error(err)
	}
}

// A paced sampler reads the calls in flight only while a pod start is open.
func TestPullSamplerPaced(t *testing.T) {
	pace := NewPace()
	var looks atomic.Int32
	s := NewPullSampler(PullSamplerConfig{
		InFlight: func() ([]*event.CRICall, error) { looks.Add(1); return nil, nil },
		Progress: func(context.Context, string, time.Time) (*event.PullProgress, error) { return nil, nil },
		Every:    10 * time.Millisecond,
		Pace:     pace,
	}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, func(event.Event) {}) }()
	time.Sleep(200 * time.Millisecond) // 20 ticks
	if n := looks.Load(); n != 0 {
		t.Errorf("%d looks at the calls in flight with no start open", n)
	}
	pace.SetFast(true)
	waitFor(t, 5*time.Second, "looks with a start open", func() bool { return looks.Load() >= 3 })
	cancel()
	if err := <-done; err != nil {
		t.Error(err)
	}
}
