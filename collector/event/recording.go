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
// kept), commands, args and probe and hook commands redacted; each pod's
// commands once, not at each of its updates (redact.PodCache). Not safe
// for concurrent use; call Flush (or Close on the underlying file after
// Flush) to persist.
type Writer struct {
	w    *bufio.Writer
	pods *redact.PodCache
}

// recordedCommandBytes bounds the redacted commands a Writer remembers.
const recordedCommandBytes = 4 << 20

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 256<<10), pods: redact.NewPodCache(recordedCommandBytes)}
}

// Write appends one event line. It does not modify e.
func (w *Writer) Write(e Event) error {
	if u, ok := e.(*PodUpdate); ok && u.Pod != nil {
		red := *u
		red.Pod = w.pods.Pod(u.Pod)
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

// MaxLineBytes bounds one line of a recording. The longest line is a
// PodUpdate holding a pod object, which the API server stores in at most
// 1.5 MiB (etcd's default request limit) and which JSON may make twice
// that; a longer line is a corrupt or foreign file, not a recording.
const MaxLineBytes = 4 << 20

// ErrLineTooLong is wrapped by Reader.Next for a line over MaxLineBytes.
var ErrLineTooLong = errors.New("line longer than 4 MiB")

// Reader reads a recording written by Writer (or `readyline events`).
// Not safe for concurrent use.
type Reader struct {
	s    *bufio.Scanner
	line int
	err  error // sticky: the scanner's, once it failed
}

// NewReader returns a Reader on r. It holds at most one line of
// MaxLineBytes in memory.
func NewReader(r io.Reader) *Reader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 0, 256<<10), MaxLineBytes+1) // +1: the newline
	return &Reader{s: s}
}

// Next returns the next event, or io.EOF at the end. Blank lines are
// skipped; a bad line, or one over MaxLineBytes (ErrLineTooLong), is an
// error naming its line number; after ErrLineTooLong or a read error, Next
// returns the same error again.
func (r *Reader) Next() (Event, error) {
	if r.err != nil {
		return nil, r.err
	}
	for r.s.Scan() {
		r.line++
		b := r.s.Bytes()
		if len(trimSpace(b)) == 0 {
			continue
		}
		e, err := Unmarshal(b)
		if err != nil {
			return nil, fmt.Errorf("recording line %d: %w", r.line, err)
		}
		return e, nil
	}
	switch err := r.s.Err(); {
	case err == nil:
		r.err = io.EOF
	case errors.Is(err, bufio.ErrTooLong):
		r.err = fmt.Errorf("recording line %d: %w", r.line+1, ErrLineTooLong)
	default:
		r.err = fmt.Errorf("reading recording: %w", err)
	}
	return nil, r.err
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}
