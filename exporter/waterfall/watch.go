package waterfall

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/readyline/readyline/correlator"
)

// How a Watch asks and draws: every WatchEvery, a start in progress drawn
// again when it took new facts (correlator.Timeline.Facts) or its pulls in
// flight new bytes, or after watchRedraw without; a daemon that does not answer is asked again for
// at most watchPatience.
const (
	WatchEvery    = time.Second
	watchRedraw   = 10 * time.Second
	watchPatience = time.Minute
)

// Watch follows a pod start: it asks fetch for it every WatchEvery and has
// draw draw it, then again each time it took new facts (at least every
// 10 s), until it ends (its timeline, no longer a snapshot with AsOf:
// drawn once more) or
// ctx does (nil). again is false for the first drawing. A fetch that fails
// before the first drawing is the error; later ones are retried for a
// minute.
func Watch(ctx context.Context, fetch func(context.Context) (*correlator.Timeline, error),
	draw func(tl *correlator.Timeline, again bool) error) error {
	var last *correlator.Timeline
	var drawn, failing time.Time
	t := time.NewTicker(WatchEvery)
	defer t.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		tl, err := fetch(actx)
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return nil // Ctrl-C
		case err != nil && last == nil:
			return err
		case err != nil:
			if failing.IsZero() {
				failing = time.Now()
			}
			if time.Since(failing) > watchPatience {
				return err
			}
		default:
			failing = time.Time{}
			done := tl.AsOf.IsZero() // the start as it ended, not a snapshot
			if last == nil || done || tl.Facts != last.Facts || tl.Pod.UID != last.Pod.UID || pullBytes(tl) != pullBytes(last) || time.Since(drawn) >= watchRedraw {
				if err := draw(tl, last != nil); err != nil {
					return err
				}
				last, drawn = tl, time.Now()
			}
			if done {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// pullBytes is what tl's pulls in flight have written so far, all
// together: a pull's bytes rising are not facts of the start, but they are
// what a watcher of a slow pull waits to see move.
func pullBytes(tl *correlator.Timeline) int64 {
	var n int64
	for _, f := range tl.InFlight {
		if f.Progress != nil {
			n += f.Progress.Bytes
		}
	}
	return n
}

// Redraw starts a drawing after an earlier one on w: a cleared screen on a
// terminal, else a blank line.
func Redraw(w io.Writer) error {
	s := "\n"
	if IsTerminal(w) {
		s = "\x1b[H\x1b[2J"
	}
	_, err := io.WriteString(w, s)
	return err
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
