package event

import "time"

// TypeTCP is the event type of TCPConnection.
const TypeTCP Type = "tcp"

// TCPResult says how a TCP connection ended: whether its handshake
// completed and, if not, why. For a kubelet httpGet or tcpSocket probe it is
// what the network said, not the probe's verdict (an HTTP 500 is still
// TCPEstablished).
type TCPResult string

// TCP connection results.
const (
	// TCPEstablished: the handshake completed and the connection closed
	// without an error (either side may have closed it).
	TCPEstablished TCPResult = "established"
	// TCPReset: the handshake completed, then the connection ended with an
	// error: a reset from the peer (ECONNRESET, EPIPE) or a retransmission
	// timeout. Error names it.
	TCPReset TCPResult = "reset"
	// TCPRefused: the peer answered the SYN with a reset (ECONNREFUSED):
	// nothing listens on the port.
	TCPRefused TCPResult = "refused"
	// TCPTimedOut: the kernel gave up retransmitting the SYN (ETIMEDOUT).
	TCPTimedOut TCPResult = "timeout"
	// TCPAborted: the process closed the socket before the handshake
	// completed, without an error from the kernel; this is what a caller's
	// own timeout (a probe's timeoutSeconds) looks like.
	TCPAborted TCPResult = "aborted"
	// TCPFailed: the handshake failed with another error (EHOSTUNREACH,
	// ENETUNREACH...), named by Error.
	TCPFailed TCPResult = "failed"
)

// TCPConnection is one TCP connection a watched process (the kubelet)
// opened, reported once it closed: from connect() to the socket's CLOSE,
// with kernel timestamps. The connecting side's view: Saddr/Sport are the
// process's end, Daddr/Dport the peer's (for a probe, the pod IP and the
// probe port).
type TCPConnection struct {
	// Time is the connect(): the socket's move to SYN_SENT.
	Time time.Time `json:"time"`
	// PID is the process (thread group id) that connected; TID its thread.
	PID   uint32 `json:"pid"`
	TID   uint32 `json:"tid"`
	Saddr string `json:"saddr"`
	Sport uint16 `json:"sport"`
	Daddr string `json:"daddr"`
	Dport uint16 `json:"dport"`
	// Established is when the handshake completed; zero if it never did (or
	// if its record was lost, while Result still says it did).
	Established time.Time `json:"established,omitzero"`
	// End is when the socket reached CLOSE.
	End    time.Time `json:"end"`
	Result TCPResult `json:"result"`
	// Error is the errno name (ECONNREFUSED, ECONNRESET...) of the error the
	// socket closed with; empty when it closed cleanly.
	Error string `json:"error,omitempty"`
	// Cookie is the kernel's socket cookie: unique per socket since boot.
	Cookie uint64 `json:"cookie"`
}

func (*TCPConnection) Type() Type        { return TypeTCP }
func (e *TCPConnection) When() time.Time { return e.Time }
