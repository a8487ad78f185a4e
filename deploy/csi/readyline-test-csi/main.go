// Command readyline-test-csi serves package csi's test driver to a kubelet
// from outside the test process: in a kind node, where the kubelet runs in
// a container. It writes "registered" to its log once the kubelet has
// registered it, then one JSON line per call it served when it stops
// (SIGINT, SIGTERM).
//
//	readyline-test-csi --kubelet-dir /var/lib/kubelet --node-id NODE --log FILE
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/readyline/readyline/deploy/csi"
)

func main() {
	kubeletDir := flag.String("kubelet-dir", "/var/lib/kubelet", "the kubelet's root directory")
	nodeID := flag.String("node-id", "", "the node's name (NodeGetInfo)")
	name := flag.String("name", "csi.readyline.test", "the driver's name")
	logPath := flag.String("log", "", "where to write what the driver did (default: stdout)")
	flag.Parse()
	out := os.Stdout
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer f.Close()
		out = f
	}
	d := &csi.Driver{Name: *name, NodeID: *nodeID}
	if err := d.Serve(*kubeletDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-d.Registered():
		fmt.Fprintln(out, "registered")
	case <-time.After(time.Minute):
		fmt.Fprintln(out, "not registered within a minute")
	case <-stop:
	}
	<-stop
	d.Stop()
	enc := json.NewEncoder(out)
	for _, c := range d.Calls() {
		errText := ""
		if c.Err != nil {
			errText = c.Err.Error()
		}
		enc.Encode(map[string]any{"method": c.Method, "volume_id": c.VolumeID, "start": c.Start, "end": c.End, "error": errText}) //nolint:errcheck // a test's log
	}
}
