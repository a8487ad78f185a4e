package collector

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

// DefaultTCPMaxConnections is how many open connections a TCPSource follows
// at once when TCPConfig.MaxConnections is zero.
const DefaultTCPMaxConnections = 8192

// ErrSourceClosed is returned by TCPSource.Watch and Unwatch once Run has
// returned.
var ErrSourceClosed = errors.New("source closed")

// TCPConfig configures a TCPSource. The zero value is usable.
type TCPConfig struct {
	// RingBufferBytes sizes the kernel ring buffer (power of two); 0 = DefaultTCPRingBytes.
	RingBufferBytes uint32
	// MaxConnections bounds the connections followed at once, in the kernel
	// and in the source; 0 = DefaultTCPMaxConnections.
	MaxConnections int
}

func (c TCPConfig) withDefaults() TCPConfig {
	if c.RingBufferBytes == 0 {
		c.RingBufferBytes = DefaultTCPRingBytes
	}
	if c.MaxConnections <= 0 {
		c.MaxConnections = DefaultTCPMaxConnections
	}
	return c
}

// TCPStats counts what a TCPSource saw. Safe to read while it runs.
type TCPStats struct {
	Records      uint64 // ring-buffer records read
	DecodeErrors uint64 // records that could not be decoded
	KernelDrops  uint64 // records the kernel lost: ring buffer full
	Connections  uint64 // connections emitted
	// Evicted counts connections forgotten before their CLOSE because
	// MaxConnections were open; their CLOSE, if it comes, is still
	// reported, without the times of the earlier states.
	Evicted uint64
	Ring    RingUsage // the kernel ring buffer's size and peak fill
}

// TCPSource reports the TCP connections that watched processes (the
// kubelet, whose httpGet and tcpSocket probes are TCP connections to the
// pod) open, one event.TCPConnection per connection once it closes.
// Watch and Unwatch are safe for concurrent use, also with Run.
type TCPSource struct {
	logger *slog.Logger
	table  *tcpConnTable // owned by Run
	ring   ringSource

	mu   sync.Mutex // guards prog against use after close
	prog *bpf.TCPProgram

	records, decodeErrors, connections, evicted atomic.Uint64
}

// NewTCPSource loads and attaches the TCP tracer, watching no process yet.
// Records are buffered in the kernel until Run reads them. A nil logger
// discards logs.
func NewTCPSource(cfg TCPConfig, logger *slog.Logger) (*TCPSource, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg = cfg.withDefaults()
	prog, err := bpf.LoadTCPProgram(bpf.TCPOptions{
		RingBufferBytes: cfg.RingBufferBytes,
		MaxConnections:  uint32(cfg.MaxConnections),
	})
	if err != nil {
		return nil, err
	}
	s := &TCPSource{logger: logger, table: newTCPConnTable(cfg.MaxConnections), prog: prog}
	s.ring = ringSource{name: event.SourceTCP, lost: "tcp connection records", logger: logger,
		events: prog.Events(), poll: bpf.TCPPollInterval, attached: time.Now().UTC(), readDrops: s.readDrops}
	s.ring.sampleClock()
	logger.Info("tcp tracer attached")
	return s, nil
}

// Watch reports the TCP connections that process pid (a thread group id
// in the host's PID namespace) opens from now on.
func (s *TCPSource) Watch(pid uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil {
		return ErrSourceClosed
	}
	return s.prog.Watch(pid)
}

// Unwatch stops reporting new connections of process pid; those already
// open are reported when they close.
func (s *TCPSource) Unwatch(pid uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil {
		return ErrSourceClosed
	}
	return s.prog.Unwatch(pid)
}

// Stats returns the counters so far.
func (s *TCPSource) Stats() TCPStats {
	return TCPStats{
		Records:      s.records.Load(),
		DecodeErrors: s.decodeErrors.Load(),
		KernelDrops:  s.ring.kernelDrops.Load(),
		Connections:  s.connections.Load(),
		Evicted:      s.evicted.Load(),
		Ring:         s.ring.fill.usage(),
	}
}

func (s *TCPSource) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog != nil {
		s.prog.Close()
		s.prog = nil
	}
}

// Run reads state changes until ctx is done and hands each finished
// connection to emit, in the order they closed, from one goroutine. A
// connection is emitted at most about bpf.TCPPollInterval after its CLOSE.
// A slow emit backs up into the kernel ring buffer, which then drops and
// counts. The source's statuses come in the same stream: Up first, then
// for each second in which the kernel dropped records a Down (reason
// ring_full, Since the previous second, Lost the records) and at once an
// Up. Run detaches the tracer on return and returns nil on cancellation.
// Call it once.
func (s *TCPSource) Run(ctx context.Context, emit func(event.Event)) error {
	defer s.close()
	return s.ring.run(ctx, emit, func(b []byte) {
		s.records.Add(1)
		ch, err := DecodeTCPStateChange(b, s.ring.clock())
		if err != nil {
			s.decodeErrors.Add(1)
			s.logger.Debug("dropping undecodable tcp record", "error", err)
			return
		}
		conn := s.table.add(&ch)
		s.evicted.Store(s.table.evicted)
		if conn != nil {
			s.connections.Add(1)
			emit(conn)
		}
	})
}

// readDrops reads the kernel's drop counter, ErrSourceClosed once the
// tracer is closed.
func (s *TCPSource) readDrops() (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prog == nil {
		return 0, ErrSourceClosed
	}
	return s.prog.Drops()
}
