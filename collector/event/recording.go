package event

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/readyline/readyline/collector/redact"
)

// Writer writes events as JSON lines: a recording. A recording leaves the
// node's memory for a disk, so pods are written as redact.Pod makes them:
// literal env values replaced by Redacted (names and valueFrom references
// kept), commands, args and probe and hook commands redacted. Not safe for
// concurrent use; call Flush (or Close on the underlying file after Flush)
// to persist.
type Writer struct {
	w *bufio.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10)}
}

// Write appends one event line. It does not modify e.
func (w *Writer) Write(e Event) error {
	if u, ok := e.(*PodUpdate); ok && u.Pod != nil {
		red := *u
		red.Pod = redact.Pod(u.Pod)
		e = &red
	}
	line, err := Marshal(e)
	if err != nil {
		return err
	}
	if _, err := w.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("writing recording: %w", err)
	}
	return nil
}

// Flush writes buffered lines through.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("writing recording: %w", err)
	}
	return nil
}

// Reader reads a recording written by Writer (or `readyline events`).
type Reader struct {
	r    *bufio.Reader
	line int
}

// NewReader returns a Reader on r. Lines of any length are accepted.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, 256<<10)}
}

// Next returns the next event, or io.EOF at the end. Blank lines are
// skipped; a bad line is an error naming its line number.
func (r *Reader) Next() (Event, error) {
	for {
		b, err := r.r.ReadBytes('\n')
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("reading recording: %w", err)
		}
		r.line++
		if len(trimSpace(b)) == 0 {
			continue
		}
		e, uerr := Unmarshal(b)
		if uerr != nil {
			return nil, fmt.Errorf("recording line %d: %w", r.line, uerr)
		}
		return e, nil
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
