package collector

import (
	"errors"
	"net/netip"
	"reflect"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

const (
	tcpTestStart = 7_000_000_000 // boot ns of the connect
	tcpTestPID   = 900           // the kubelet
	tcpTestTID   = 913
)

// tcpRecord builds a state-change record as tcp.bpf.c writes it: the
// connection of cookie, started at tcpTestStart, from 10.244.0.1:sport to
// 10.244.0.17:8080, changing from old to new at boot ns at.
func tcpRecord(t testing.TB, cookie uint64, at uint64, old, new TCPState, sport uint16, skErr int32) []byte {
	e := bpf.TcpStateEvent{
		Hdr:      bpf.TcpEventHeader{Type: bpf.EventTCPState, Pid: tcpTestTID, Tgid: tcpTestPID, BootNs: at},
		Cookie:   cookie,
		StartNs:  tcpTestStart,
		CurPid:   42,
		CurTgid:  41,
		Family:   unix.AF_INET,
		Sport:    sport,
		Dport:    8080,
		Oldstate: uint8(old),
		Newstate: uint8(new),
		SkErr:    skErr,
	}
	copy(e.Saddr[:], []byte{10, 244, 0, 1})
	copy(e.Daddr[:], []byte{10, 244, 0, 17})
	return encode(t, e)
}

func tcpRecord6(t testing.TB, saddr, daddr netip.Addr) []byte {
	e := bpf.TcpStateEvent{
		Hdr:      bpf.TcpEventHeader{Type: bpf.EventTCPState, Pid: tcpTestTID, Tgid: tcpTestPID, BootNs: tcpTestStart},
		Cookie:   5,
		StartNs:  tcpTestStart,
		Family:   unix.AF_INET6,
		Dport:    80,
		Oldstate: uint8(TCPStateClose),
		Newstate: uint8(TCPStateSynSent),
	}
	e.Saddr, e.Daddr = saddr.As16(), daddr.As16()
	return encode(t, e)
}

func TestDecodeTCPStateChange(t *testing.T) {
	start := testClock.Time(tcpTestStart)
	v4 := func(s string) netip.Addr { return netip.MustParseAddr(s) }
	tests := []struct {
		name string
		rec  []byte
		want TCPStateChange
	}{{
		name: "connect, port not yet picked",
		rec:  tcpRecord(t, 4107, tcpTestStart, TCPStateClose, TCPStateSynSent, 0, 0),
		want: TCPStateChange{Time: start, Start: start, Cookie: 4107, PID: tcpTestPID, TID: tcpTestTID,
			CurrentPID: 41, CurrentTID: 42, Saddr: v4("10.244.0.1"), Daddr: v4("10.244.0.17"), Dport: 8080,
			Old: TCPStateClose, New: TCPStateSynSent},
	}, {
		name: "refused",
		rec:  tcpRecord(t, 4107, tcpTestStart+90_000, TCPStateSynSent, TCPStateClose, 40312, int32(syscall.ECONNREFUSED)),
		want: TCPStateChange{Time: start.Add(90 * time.Microsecond), Start: start, Cookie: 4107, PID: tcpTestPID, TID: tcpTestTID,
			CurrentPID: 41, CurrentTID: 42, Saddr: v4("10.244.0.1"), Daddr: v4("10.244.0.17"), Sport: 40312, Dport: 8080,
			Old: TCPStateSynSent, New: TCPStateClose, Err: syscall.ECONNREFUSED},
	}, {
		name: "IPv6",
		rec:  tcpRecord6(t, netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::17")),
		want: TCPStateChange{Time: start, Start: start, Cookie: 5, PID: tcpTestPID, TID: tcpTestTID,
			Saddr: netip.MustParseAddr("fd00::1"), Daddr: netip.MustParseAddr("fd00::17"), Dport: 80,
			Old: TCPStateClose, New: TCPStateSynSent},
	}, {
		name: "IPv4-mapped on an IPv6 socket",
		rec:  tcpRecord6(t, netip.MustParseAddr("::ffff:10.244.0.1"), netip.MustParseAddr("::ffff:10.244.0.17")),
		want: TCPStateChange{Time: start, Start: start, Cookie: 5, PID: tcpTestPID, TID: tcpTestTID,
			Saddr: v4("10.244.0.1"), Daddr: v4("10.244.0.17"), Dport: 80,
			Old: TCPStateClose, New: TCPStateSynSent},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeTCPStateChange(tt.rec, testClock)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeTCPStateChangeErrors(t *testing.T) {
	good := tcpRecord(t, 1, tcpTestStart, TCPStateClose, TCPStateSynSent, 0, 0)
	with := func(off int, b ...byte) []byte {
		r := append([]byte(nil), good...)
		copy(r[off:], b)
		return r
	}
	tests := []struct {
		name string
		rec  []byte
		want error
	}{
		{"empty", nil, ErrShortRecord},
		{"short header", good[:tcpHdrSize-1], ErrShortRecord},
		{"short record", good[:len(good)-1], ErrShortRecord},
		{"a process record", encode(t, header(bpf.EventExec)), ErrUnknownRecord},
		{"unknown family", with(offTCPFamily, 1, 0), ErrBadRecord},
		{"state 0", with(offTCPOldstate, 0), ErrBadRecord},
		{"state past the last", with(offTCPNewstate, byte(tcpStateEnd)), ErrBadRecord},
		{"negative sk_err", with(offTCPSkErr, 0xff, 0xff, 0xff, 0xff), ErrBadRecord},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := DecodeTCPStateChange(tt.rec, testClock); !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
		})
	}
}

func TestTCPStateString(t *testing.T) {
	for s, want := range map[TCPState]string{TCPStateEstablished: "ESTABLISHED", TCPStateSynSent: "SYN_SENT",
		TCPStateClose: "CLOSE", TCPStateNewSynRecv: "NEW_SYN_RECV", 0: "TCPState(0)", 200: "TCPState(200)"} {
		if got := s.String(); got != want {
			t.Errorf("TCPState(%d).String() = %q, want %q", s, got, want)
		}
	}
}

func FuzzDecodeTCPStateChange(f *testing.F) {
	f.Add(tcpRecord(f, 1, tcpTestStart, TCPStateClose, TCPStateSynSent, 0, 0))
	f.Add(tcpRecord(f, 1, tcpTestStart, TCPStateSynSent, TCPStateClose, 1, 111))
	f.Add(tcpRecord6(f, netip.MustParseAddr("::1"), netip.MustParseAddr("::ffff:1.2.3.4")))
	f.Add([]byte{})
	f.Add(make([]byte, tcpHdrSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := DecodeTCPStateChange(b, testClock)
		if err != nil {
			return
		}
		if !ch.Saddr.IsValid() || !ch.Daddr.IsValid() || ch.Old.String() == "" || ch.New.String() == "" {
			t.Fatalf("decoded an incomplete change: %+v", ch)
		}
		// Whatever decodes must pair and encode.
		if ev := newTCPConnTable(4).add(&ch); ev != nil {
			if _, err := event.Marshal(ev); err != nil {
				t.Fatalf("connection does not encode: %v", err)
			}
		}
	})
}

// tcpStep is one state change fed to a tcpConnTable: cookie, µs after the
// connect, the states, the port and sk_err.
type tcpStep struct {
	cookie   uint64
	us       uint64
	old, new TCPState
	sport    uint16
	err      syscall.Errno
}

func feedTCP(t testing.TB, table *tcpConnTable, steps []tcpStep) []*event.TCPConnection {
	t.Helper()
	var out []*event.TCPConnection
	for _, s := range steps {
		ch, err := DecodeTCPStateChange(tcpRecord(t, s.cookie, tcpTestStart+s.us*1000, s.old, s.new, s.sport, int32(s.err)), testClock)
		if err != nil {
			t.Fatal(err)
		}
		if ev := table.add(&ch); ev != nil {
			out = append(out, ev)
		}
	}
	return out
}

func TestTCPConnTable(t *testing.T) {
	start := testClock.Time(tcpTestStart)
	us := func(n int) time.Time { return start.Add(time.Duration(n) * time.Microsecond) }
	conn := func(cookie uint64, est, end int, result event.TCPResult, errno string) *event.TCPConnection {
		c := &event.TCPConnection{Time: start, PID: tcpTestPID, TID: tcpTestTID, Saddr: "10.244.0.1", Sport: 40312,
			Daddr: "10.244.0.17", Dport: 8080, End: us(end), Result: result, Error: errno, Cookie: cookie}
		if est >= 0 {
			c.Established = us(est)
		}
		return c
	}
	const (
		est = TCPStateEstablished
		syn = TCPStateSynSent
		cls = TCPStateClose
		fw1 = TCPStateFinWait1
		fw2 = TCPStateFinWait2
		cw  = TCPStateCloseWait
		la  = TCPStateLastAck
	)
	tests := []struct {
		name  string
		steps []tcpStep
		want  []*event.TCPConnection
	}{{
		name: "httpGet: the server closes first",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 80, syn, est, 40312, 0}, {1, 2000, est, cw, 40312, 0},
			{1, 2100, cw, la, 40312, 0}, {1, 2150, la, cls, 40312, 0}},
		want: []*event.TCPConnection{conn(1, 80, 2150, event.TCPEstablished, "")},
	}, {
		name: "tcpSocket: the prober closes first",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 80, syn, est, 40312, 0}, {1, 300, est, fw1, 40312, 0},
			{1, 350, fw1, fw2, 40312, 0}, {1, 400, fw2, cls, 40312, 0}},
		want: []*event.TCPConnection{conn(1, 80, 400, event.TCPEstablished, "")},
	}, {
		name:  "refused",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 60, syn, cls, 40312, syscall.ECONNREFUSED}},
		want:  []*event.TCPConnection{conn(1, -1, 60, event.TCPRefused, "ECONNREFUSED")},
	}, {
		name:  "SYN retransmissions gave up",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 127e6, syn, cls, 40312, syscall.ETIMEDOUT}},
		want:  []*event.TCPConnection{conn(1, -1, 127e6, event.TCPTimedOut, "ETIMEDOUT")},
	}, {
		name:  "host unreachable",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 3e6, syn, cls, 40312, syscall.EHOSTUNREACH}},
		want:  []*event.TCPConnection{conn(1, -1, 3e6, event.TCPFailed, "EHOSTUNREACH")},
	}, {
		name:  "closed by the prober's timeout before the handshake",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 1e6, syn, cls, 40312, 0}},
		want:  []*event.TCPConnection{conn(1, -1, 1e6, event.TCPAborted, "")},
	}, {
		name:  "reset by the peer",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 80, syn, est, 40312, 0}, {1, 500, est, cls, 40312, syscall.ECONNRESET}},
		want:  []*event.TCPConnection{conn(1, 80, 500, event.TCPReset, "ECONNRESET")},
	}, {
		name:  "the ESTABLISHED record lost: the state left says it was",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 300, est, fw1, 40312, 0}, {1, 400, fw2, cls, 40312, 0}},
		want:  []*event.TCPConnection{conn(1, -1, 400, event.TCPEstablished, "")},
	}, {
		name:  "only the CLOSE record",
		steps: []tcpStep{{1, 60, syn, cls, 40312, syscall.ECONNREFUSED}},
		want:  []*event.TCPConnection{conn(1, -1, 60, event.TCPRefused, "ECONNREFUSED")},
	}, {
		name: "interleaved connections close in their own order",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {2, 0, cls, syn, 0, 0}, {2, 50, syn, cls, 40312, syscall.ECONNREFUSED},
			{1, 80, syn, est, 40312, 0}, {1, 90, est, cls, 40312, 0}},
		want: []*event.TCPConnection{conn(2, -1, 50, event.TCPRefused, "ECONNREFUSED"), conn(1, 80, 90, event.TCPEstablished, "")},
	}, {
		name:  "still open: nothing yet",
		steps: []tcpStep{{1, 0, cls, syn, 0, 0}, {1, 80, syn, est, 40312, 0}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := newTCPConnTable(16)
			got := feedTCP(t, table, tt.steps)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:")
				for _, c := range got {
					t.Errorf("  %+v", c)
				}
				t.Errorf("want:")
				for _, c := range tt.want {
					t.Errorf("  %+v", c)
				}
			}
			open := 0
			for _, s := range tt.steps {
				if s.new == cls {
					open--
				} else if s.old == cls {
					open++
				}
			}
			if len(table.conns) != max(open, 0) {
				t.Errorf("%d connections left open in the table, want %d", len(table.conns), max(open, 0))
			}
		})
	}
}

func TestTCPConnTableEvictsTheOldest(t *testing.T) {
	table := newTCPConnTable(3)
	var steps []tcpStep
	for c := uint64(1); c <= 5; c++ {
		steps = append(steps, tcpStep{c, c, TCPStateClose, TCPStateSynSent, 0, 0})
	}
	feedTCP(t, table, steps)
	if table.evicted != 2 || len(table.conns) != 3 {
		t.Fatalf("evicted %d, %d open; want 2 evicted, 3 open", table.evicted, len(table.conns))
	}
	for c := uint64(1); c <= 5; c++ {
		if _, ok := table.conns[c]; ok != (c > 2) {
			t.Errorf("connection %d in the table: %v", c, ok)
		}
	}
	// The evicted connection's CLOSE is still reported; an open one's
	// CLOSE frees its place without evicting.
	got := feedTCP(t, table, []tcpStep{{1, 100, TCPStateFinWait2, TCPStateClose, 40312, 0},
		{4, 100, TCPStateSynSent, TCPStateClose, 40312, syscall.ECONNREFUSED}, {6, 0, TCPStateClose, TCPStateSynSent, 0, 0}})
	if len(got) != 2 || got[0].Cookie != 1 || got[0].Result != event.TCPEstablished || got[1].Cookie != 4 {
		t.Errorf("got %+v", got)
	}
	if table.evicted != 2 || len(table.conns) != 3 {
		t.Errorf("evicted %d, %d open; want 2 evicted, 3 open", table.evicted, len(table.conns))
	}
	// The list order survives removals in the middle: 3 is the oldest now.
	feedTCP(t, table, []tcpStep{{7, 0, TCPStateClose, TCPStateSynSent, 0, 0}})
	if _, ok := table.conns[3]; ok || table.evicted != 3 {
		t.Errorf("connection 3 not evicted (evicted %d)", table.evicted)
	}
}

// BenchmarkTCPRecordPath measures what the reader does per record after
// reading it: decode and pairing. One connection of five records per
// iteration (connect, established, close_wait, last_ack, close), the last
// emitting the event: ns/record is a fifth.
func BenchmarkTCPRecordPath(b *testing.B) {
	recs := make([][]byte, 0, 5)
	for _, s := range []tcpStep{{1, 0, TCPStateClose, TCPStateSynSent, 0, 0}, {1, 80, TCPStateSynSent, TCPStateEstablished, 40312, 0},
		{1, 2000, TCPStateEstablished, TCPStateCloseWait, 40312, 0}, {1, 2100, TCPStateCloseWait, TCPStateLastAck, 40312, 0},
		{1, 2150, TCPStateLastAck, TCPStateClose, 40312, 0}} {
		recs = append(recs, tcpRecord(b, s.cookie, tcpTestStart+s.us*1000, s.old, s.new, s.sport, int32(s.err)))
	}
	table := newTCPConnTable(DefaultTCPMaxConnections)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, rec := range recs {
			ch, err := DecodeTCPStateChange(rec, testClock)
			if err != nil {
				b.Fatal(err)
			}
			if ev := table.add(&ch); ev != nil {
				n++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(recs)), "ns/record")
	if n != b.N {
		b.Fatalf("%d connections for %d iterations", n, b.N)
	}
}
