package main

import (
	"encoding/json"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestConflistIsJSONForTheCIDR(t *testing.T) {
	var c struct {
		Plugins []struct {
			Type string `json:"type"`
			IPAM struct {
				Ranges [][]struct{ Subnet string } `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(Conflist(netip.MustParsePrefix("10.244.1.0/24")), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Plugins) != 2 || c.Plugins[0].Type != "bridge" || c.Plugins[1].Type != "portmap" {
		t.Fatalf("plugins: %+v", c.Plugins)
	}
	if got := c.Plugins[0].IPAM.Ranges[0][0].Subnet; got != "10.244.1.0/24" {
		t.Fatalf("subnet %q", got)
	}
}

func TestWriteConfOnlyOnChange(t *testing.T) {
	dir := t.TempDir()
	cidr := netip.MustParsePrefix("10.244.0.0/24")
	for i, want := range []bool{true, false} {
		changed, err := writeConf(dir, cidr)
		if err != nil || changed != want {
			t.Fatalf("write %d: changed=%v err=%v, want changed=%v", i, changed, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, confName+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}

func TestRouteMessage(t *testing.T) {
	msg := RouteMessage(netip.MustParsePrefix("10.244.1.7/24"), netip.MustParseAddr("172.18.0.3"))
	msgs, err := syscall.ParseNetlinkMessage(msg)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("parse: %v (%d messages)", err, len(msgs))
	}
	m := msgs[0]
	if m.Header.Type != syscall.RTM_NEWROUTE || m.Header.Flags&syscall.NLM_F_REPLACE == 0 {
		t.Fatalf("header %+v", m.Header)
	}
	if m.Data[0] != syscall.AF_INET || m.Data[1] != 24 {
		t.Fatalf("rtmsg family/dst_len %d/%d", m.Data[0], m.Data[1])
	}
	attrs, err := syscall.ParseNetlinkRouteAttr(&m)
	if err != nil {
		t.Fatal(err)
	}
	got := map[uint16]netip.Addr{}
	for _, a := range attrs {
		ip, _ := netip.AddrFromSlice(a.Value)
		got[a.Attr.Type] = ip
	}
	if got[syscall.RTA_DST] != netip.MustParseAddr("10.244.1.0") || got[syscall.RTA_GATEWAY] != netip.MustParseAddr("172.18.0.3") {
		t.Fatalf("attributes %v", got)
	}
}
