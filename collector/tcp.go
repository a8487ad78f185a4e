package collector

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/readyline/readyline/bpf"
	"github.com/readyline/readyline/collector/event"
)

// TCP record layout, taken from the structs bpf2go generates from
// tcp.bpf.c, so a change on the C side is a compile-time or test-time
// failure here.
var (
	tcpHdrSize   = int(unsafe.Sizeof(bpf.TcpEventHeader{}))
	tcpStateSize = int(unsafe.Sizeof(bpf.TcpStateEvent{}))

	offTCPType   = int(unsafe.Offsetof(bpf.TcpEventHeader{}.Type))
	offTCPPid    = int(unsafe.Offsetof(bpf.TcpEventHeader{}.Pid))
	offTCPBootNs = int(unsafe.Offsetof(bpf.TcpEventHeader{}.BootNs))
	offTCPTgid   = int(unsafe.Offsetof(bpf.TcpEventHeader{}.Tgid))

	offTCPCookie   = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Cookie))
	offTCPStartNs  = int(unsafe.Offsetof(bpf.TcpStateEvent{}.StartNs))
	offTCPCurPid   = int(unsafe.Offsetof(bpf.TcpStateEvent{}.CurPid))
	offTCPCurTgid  = int(unsafe.Offsetof(bpf.TcpStateEvent{}.CurTgid))
	offTCPFamily   = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Family))
	offTCPSport    = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Sport))
	offTCPDport    = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Dport))
	offTCPOldstate = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Oldstate))
	offTCPNewstate = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Newstate))
	offTCPSkErr    = int(unsafe.Offsetof(bpf.TcpStateEvent{}.SkErr))
	offTCPSaddr    = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Saddr))
	offTCPDaddr    = int(unsafe.Offsetof(bpf.TcpStateEvent{}.Daddr))
)

// ErrBadRecord is returned by DecodeTCPStateChange for a record of the
// right type and size whose content cannot be right (an unknown address
// family or TCP state).
var ErrBadRecord = errors.New("malformed record")

// TCPState is a TCP socket state, numbered as in the kernel
// (include/net/tcp_states.h).
type TCPState uint8

// TCP socket states.
const (
	TCPStateEstablished TCPState = iota + 1
	TCPStateSynSent
	TCPStateSynRecv
	TCPStateFinWait1
	TCPStateFinWait2
	TCPStateTimeWait
	TCPStateClose
	TCPStateCloseWait
	TCPStateLastAck
	TCPStateListen
	TCPStateClosing
	TCPStateNewSynRecv
	tcpStateEnd
)

var tcpStateNames = [...]string{"", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2",
	"TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING", "NEW_SYN_RECV"}

// String returns the kernel's name of the state (ESTABLISHED, SYN_SENT...).
func (s TCPState) String() string {
	if s > 0 && s < tcpStateEnd {
		return tcpStateNames[s]
	}
	return "TCPState(" + strconv.Itoa(int(s)) + ")"
}

// TCPStateChange is one state change of a socket the TCP tracer follows,
// as the kernel reported it. Every change carries the connection's start
// and owner, so a connection can be reported even when some of its
// records were lost.
type TCPStateChange struct {
	// Time is when the socket changed state.
	Time time.Time
	// Start is when the connection started: the move to SYN_SENT.
	Start time.Time
	// Cookie is the kernel's socket cookie, the connection's key.
	Cookie uint64
	// PID and TID are the process and thread that connected.
	PID, TID uint32
	// CurrentPID and CurrentTID are the task that was current when the
	// state changed: in softirq, whichever task the packet interrupted.
	CurrentPID, CurrentTID uint32
	// Saddr and Sport are the local end (Sport is 0 before the kernel picks
	// the port, at SYN_SENT); Daddr and Dport the peer. IPv4-mapped IPv6
	// addresses are unmapped.
	Saddr, Daddr netip.Addr
	Sport, Dport uint16
	Old, New     TCPState
	// Err is the socket's pending error (sk_err): at CLOSE, why it closed.
	Err syscall.Errno
}

// DecodeTCPStateChange decodes one ring-buffer record of the TCP tracer,
// its kernel times converted with clock. It never panics, whatever the
// input.
func DecodeTCPStateChange(b []byte, clock BootClock) (TCPStateChange, error) {
	if len(b) < tcpHdrSize {
		return TCPStateChange{}, fmt.Errorf("%w: %d bytes, header needs %d", ErrShortRecord, len(b), tcpHdrSize)
	}
	le := binary.LittleEndian
	if typ := le.Uint32(b[offTCPType:]); typ != bpf.EventTCPState {
		return TCPStateChange{}, fmt.Errorf("%w %d", ErrUnknownRecord, typ)
	}
	if len(b) < tcpStateSize {
		return TCPStateChange{}, fmt.Errorf("%w: tcp state record of %d bytes, want %d", ErrShortRecord, len(b), tcpStateSize)
	}
	c := TCPStateChange{
		Time:       clock.Time(le.Uint64(b[offTCPBootNs:])),
		Start:      clock.Time(le.Uint64(b[offTCPStartNs:])),
		Cookie:     le.Uint64(b[offTCPCookie:]),
		PID:        le.Uint32(b[offTCPTgid:]),
		TID:        le.Uint32(b[offTCPPid:]),
		CurrentPID: le.Uint32(b[offTCPCurTgid:]),
		CurrentTID: le.Uint32(b[offTCPCurPid:]),
		Sport:      le.Uint16(b[offTCPSport:]),
		Dport:      le.Uint16(b[offTCPDport:]),
		Old:        TCPState(b[offTCPOldstate]),
		New:        TCPState(b[offTCPNewstate]),
	}
	skErr := int32(le.Uint32(b[offTCPSkErr:]))
	if skErr < 0 {
		return TCPStateChange{}, fmt.Errorf("%w: sk_err %d", ErrBadRecord, skErr)
	}
	c.Err = syscall.Errno(skErr)
	switch family := le.Uint16(b[offTCPFamily:]); family {
	case unix.AF_INET:
		c.Saddr = netip.AddrFrom4([4]byte(b[offTCPSaddr : offTCPSaddr+4]))
		c.Daddr = netip.AddrFrom4([4]byte(b[offTCPDaddr : offTCPDaddr+4]))
	case unix.AF_INET6:
		c.Saddr = netip.AddrFrom16([16]byte(b[offTCPSaddr : offTCPSaddr+16])).Unmap()
		c.Daddr = netip.AddrFrom16([16]byte(b[offTCPDaddr : offTCPDaddr+16])).Unmap()
	default:
		return TCPStateChange{}, fmt.Errorf("%w: address family %d", ErrBadRecord, family)
	}
	for _, s := range []TCPState{c.Old, c.New} {
		if s == 0 || s >= tcpStateEnd {
			return TCPStateChange{}, fmt.Errorf("%w: TCP state %d", ErrBadRecord, s)
		}
	}
	return c, nil
}

// tcpConn is a connection between its first record and its CLOSE, linked
// into tcpConnTable's list in order of arrival.
type tcpConn struct {
	ev         event.TCPConnection
	saddr      netip.Addr
	daddr      netip.Addr
	prev, next *tcpConn
}

// tcpConnTable pairs the state changes of each socket into one
// event.TCPConnection. It holds at most max open connections; beyond, it
// forgets the oldest (counted in evicted): a connection still open then is
// most likely a long-lived one, not a probe. Not safe for concurrent use.
type tcpConnTable struct {
	conns   map[uint64]*tcpConn
	list    tcpConn // sentinel: list.next is the oldest
	max     int
	evicted uint64
}

func newTCPConnTable(max int) *tcpConnTable {
	t := &tcpConnTable{conns: make(map[uint64]*tcpConn), max: max}
	t.list.prev, t.list.next = &t.list, &t.list
	return t
}

func (t *tcpConnTable) unlink(c *tcpConn) {
	c.prev.next, c.next.prev = c.next, c.prev
	c.prev, c.next = nil, nil
	delete(t.conns, c.ev.Cookie)
}

// add takes one state change and returns the connection it completes (at
// CLOSE), or nil. A CLOSE whose earlier records were lost or evicted still
// completes a connection: each record carries the start and the owner, and
// the state it leaves says whether the handshake had completed.
func (t *tcpConnTable) add(ch *TCPStateChange) *event.TCPConnection {
	c := t.conns[ch.Cookie]
	if c == nil {
		c = &tcpConn{ev: event.TCPConnection{Time: ch.Start, PID: ch.PID, TID: ch.TID, Cookie: ch.Cookie}}
		if ch.New != TCPStateClose {
			if t.max > 0 && len(t.conns) >= t.max {
				t.unlink(t.list.next)
				t.evicted++
			}
			t.conns[ch.Cookie] = c
			c.prev, c.next = t.list.prev, &t.list
			c.prev.next, t.list.prev = c, c
		}
	}
	// The local port is picked after SYN_SENT; the source address of an
	// unbound IPv6 socket may be too: keep what the latest record knows.
	if ch.Saddr.IsValid() && !ch.Saddr.IsUnspecified() {
		c.saddr = ch.Saddr
	}
	if ch.Daddr.IsValid() {
		c.daddr = ch.Daddr
	}
	if ch.Sport != 0 {
		c.ev.Sport = ch.Sport
	}
	if ch.Dport != 0 {
		c.ev.Dport = ch.Dport
	}
	if ch.New == TCPStateEstablished && c.ev.Established.IsZero() {
		c.ev.Established = ch.Time
	}
	if ch.New != TCPStateClose {
		return nil
	}

	if c.next != nil {
		t.unlink(c)
	}
	ev := &c.ev
	ev.End = ch.Time
	ev.Saddr = addrString(c.saddr)
	ev.Daddr = addrString(c.daddr)
	if ch.Err != 0 {
		ev.Error = unix.ErrnoName(ch.Err)
		if ev.Error == "" {
			ev.Error = "errno " + strconv.Itoa(int(ch.Err))
		}
	}
	// Left from SYN_SENT (or SYN_RECV, a simultaneous open): the handshake
	// never completed. From any later state, it did, seen or not.
	established := !ev.Established.IsZero() || (ch.Old != TCPStateSynSent && ch.Old != TCPStateSynRecv)
	switch {
	case established && ch.Err == 0:
		ev.Result = event.TCPEstablished
	case established:
		ev.Result = event.TCPReset
	case ch.Err == 0:
		ev.Result = event.TCPAborted
	case ch.Err == syscall.ECONNREFUSED:
		ev.Result = event.TCPRefused
	case ch.Err == syscall.ETIMEDOUT:
		ev.Result = event.TCPTimedOut
	default:
		ev.Result = event.TCPFailed
	}
	return ev
}

func addrString(a netip.Addr) string {
	if !a.IsValid() {
		return ""
	}
	return a.String()
}
