package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"
)

// dialFrom connects to addr from the loopback address local (127.0.0.x:
// Linux answers the whole 127/8), a client of its own.
func dialFrom(local, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 10 * time.Second}
	return d.Dial("tcp", addr)
}

// TestHTTPServerLimitsConnectionsPerClient: one client (127.0.0.2) opens
// more connections than the server serves in all and says nothing on them,
// as a pod that wants /metrics' slots does. It keeps MaxConnsPerClient of
// them; the server closes the others as it accepts them; a scraper from
// another address is answered at once, not after the hog's connections
// time out; and a closed connection gives its slot back.
func TestHTTPServerLimitsConnectionsPerClient(t *testing.T) {
	l := podNetworkHTTPLimits
	// The hog's silent connections would be held for a minute: long past
	// the scraper's budget, had it to wait for them.
	l.ReadHeaderTimeout, l.ShutdownTimeout = time.Minute, 100*time.Millisecond
	addr, _ := startTestServer(t, l)

	hogs := l.MaxConns + 36
	var (
		mu     sync.Mutex
		open   []net.Conn
		closed = make(chan struct{}, hogs)
	)
	for range hogs {
		c, err := dialFrom("127.0.0.2", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
		go func() {
			// The server says nothing on a silent connection: a read ends
			// only when it closes it (or the test does).
			if _, err := c.Read(make([]byte, 1)); errors.Is(err, io.EOF) || isReset(err) {
				closed <- struct{}{}
			}
		}()
	}
	want := hogs - l.MaxConnsPerClient
	deadline := time.After(30 * time.Second)
	for n := 0; n < want; n++ {
		select {
		case <-closed:
		case <-deadline:
			t.Fatalf("the server closed %d of the client's %d connections, want %d (all but MaxConnsPerClient %d)",
				n, hogs, want, l.MaxConnsPerClient)
		}
	}

	scraper := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}}).DialContext}}
	resp, err := scraper.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("another client while one holds its share: %v", err)
	}
	resp.Body.Close()
	select {
	case <-closed:
		t.Errorf("the server closed more than %d of the client's connections", want)
	default:
	}

	// The client closes its connections: once the server has seen them
	// closed (its side ends when it reads their EOF), the client is served
	// again, MaxConnsPerClient at once.
	mu.Lock()
	for _, c := range open {
		c.Close()
	}
	mu.Unlock()
	var again []net.Conn
	defer func() {
		for _, c := range again {
			c.Close()
		}
	}()
	for stop := time.Now().Add(30 * time.Second); len(again) < l.MaxConnsPerClient; {
		c, err := dialFrom("127.0.0.2", addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := request(c); err != nil {
			c.Close()
			if time.Now().After(stop) {
				t.Fatalf("the client, 30 s after closing its connections, is served %d at once, want %d: %v (their slots were not given back)",
					len(again), l.MaxConnsPerClient, err)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		again = append(again, c)
	}
}

// request makes one GET on c and reads its answer, keeping c open.
func request(c net.Conn) error {
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: readyline\r\n\r\n"); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
