package event

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTCPConnectionRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 30, 6, 0, 0, 123456789, time.UTC)
	for _, ev := range []*TCPConnection{
		{Time: at, PID: 900, TID: 913, Saddr: "10.244.0.1", Sport: 40312, Daddr: "10.244.0.17", Dport: 8080,
			Established: at.Add(80 * time.Microsecond), End: at.Add(3 * time.Millisecond),
			Result: TCPEstablished, Cookie: 4107},
		{Time: at, PID: 900, TID: 900, Saddr: "fd00::1", Sport: 40313, Daddr: "fd00::17", Dport: 80,
			End: at.Add(time.Millisecond), Result: TCPRefused, Error: "ECONNREFUSED", Cookie: 4108},
	} {
		b, err := Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(string(b), `{"type":"tcp",`) {
			t.Errorf("encoding does not start with its type: %s", b)
		}
		if ev.Established.IsZero() && strings.Contains(string(b), `"established":"`) {
			t.Errorf("a connection never established encodes its zero time: %s", b)
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("Unmarshal(%s): %v", b, err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("round trip of %s\n got  %#v\n want %#v", b, got, ev)
		}
	}
}
