package main

import (
	"net"
	"net/netip"
	"sync"
)

// perClientListener accepts at most max connections open at once from one
// remote IP address, and closes any more as soon as it accepts them, so
// that they never take a slot of the server's MaxConns (LimitListener, put
// around it, counts only what this one returns). Accept and the
// connections' Close are safe for concurrent use.
type perClientListener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[netip.Addr]int // only addresses with connections open
}

// limitPerClient returns ln accepting at most max connections per address.
func limitPerClient(ln net.Listener, max int) net.Listener {
	return &perClientListener{Listener: ln, max: max, open: make(map[netip.Addr]int)}
}

func (l *perClientListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := clientAddr(c)
		l.mu.Lock()
		ok := l.open[addr] < l.max
		if ok {
			l.open[addr]++
		}
		l.mu.Unlock()
		if ok {
			return &clientConn{Conn: c, release: sync.OnceFunc(func() { l.release(addr) })}, nil
		}
		c.Close()
	}
}

func (l *perClientListener) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[addr]--; l.open[addr] <= 0 {
		delete(l.open, addr)
	}
}

// clientAddr is a connection's remote IP address, an IPv4 one as such
// whether it came over IPv4 or IPv6; every connection without one (a unix
// socket) counts as the same client.
func clientAddr(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// clientConn gives its slot back on its first Close.
type clientConn struct {
	net.Conn
	release func()
}

func (c *clientConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}
