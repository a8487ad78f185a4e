package correlator

import (
	"errors"
	"io"

	"github.com/readyline/readyline/collector/event"
)

// Replay hands c every event of the recording r (event.Reader's JSON
// lines, as readyline run --record writes them) in order, then flushes c,
// and calls each with every timeline that ends, as Handle and Flush return
// them. It stops at the first error of r or of each and returns it; nil
// means r was read to its end and flushed. c's Stats count the replay.
func (c *Correlator) Replay(r io.Reader, each func(*Timeline) error) error {
	rd := event.NewReader(r)
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		for _, tl := range c.Handle(ev) {
			if err := each(tl); err != nil {
				return err
			}
		}
	}
	for _, tl := range c.Flush() {
		if err := each(tl); err != nil {
			return err
		}
	}
	return nil
}
