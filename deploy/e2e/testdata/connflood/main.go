// Command connflood is a tenant's pod that wants a server's connection
// slots, for the end-to-end tests: it keeps -conns TCP connections to
// -addr open, says nothing on them, and reconnects each one the server
// closes after -redial. Every -every it prints what it did as one JSON
// line on stdout:
//
//	{"dials":812,"open":400,"closed":412,"failed":0}
//
// dials counts the connections made, closed those the server ended,
// failed the dials that did not connect; open is how many are open now.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "", "host:port to connect to (required)")
	conns := flag.Int("conns", 400, "connections to keep open")
	redial := flag.Duration("redial", 100*time.Millisecond, "wait this long before reconnecting a closed connection")
	every := flag.Duration("every", 2*time.Second, "print the counts this often")
	flag.Parse()
	if *addr == "" || *conns < 1 {
		fmt.Fprintln(os.Stderr, "usage: connflood -addr HOST:PORT [-conns N] [-redial D] [-every D]")
		os.Exit(2)
	}
	var dials, open, closed, failed atomic.Int64
	for range *conns {
		go func() {
			for {
				c, err := net.DialTimeout("tcp", *addr, 10*time.Second)
				if err != nil {
					failed.Add(1)
					time.Sleep(*redial)
					continue
				}
				dials.Add(1)
				open.Add(1)
				io.Copy(io.Discard, c) // until the server closes it
				c.Close()
				open.Add(-1)
				closed.Add(1)
				time.Sleep(*redial)
			}
		}()
	}
	enc := json.NewEncoder(os.Stdout)
	for range time.Tick(*every) {
		enc.Encode(map[string]int64{"dials": dials.Load(), "open": open.Load(), "closed": closed.Load(), "failed": failed.Load()})
	}
}
