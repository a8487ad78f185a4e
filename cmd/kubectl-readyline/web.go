package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// web forwards a local port on address to the API of the readyline on
// the node of pod namespace/name (apiPort in its pod) and prints the URL
// of the pod's page on stdout, alone on its line, until ctx ends.
func (ds *daemonSet) web(ctx context.Context, namespace, name, address string, localPort, apiPort uint16, stdout, stderr io.Writer) error {
	_, daemon, err := ds.daemonOf(ctx, namespace, name)
	if err != nil {
		return err
	}
	err = ds.conn.Forward(ctx, daemon, address, localPort, apiPort, func(port uint16) {
		base := "http://" + net.JoinHostPort(urlHost(address), strconv.Itoa(int(port)))
		fmt.Fprintln(stdout, pageURL(base, namespace, name))
		fmt.Fprintf(stderr, "Forwarding from %s to port %d of %s/%s, the readyline on node %s; Ctrl-C ends it\n",
			net.JoinHostPort(address, strconv.Itoa(int(port))), apiPort, daemon.Namespace, daemon.Name, daemon.Spec.NodeName)
		if err := checkTimeline(ctx, base, namespace, name); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	})
	if err == nil || ctx.Err() != nil {
		return nil // Ctrl-C
	}
	return ds.streamError(ctx, err, "pods/portforward", daemon, "reaching the API of the readyline on node "+daemon.Spec.NodeName)
}

// pageURL is the daemon's page of the pod namespace/name under base.
func pageURL(base, namespace, name string) string {
	return base + "/ui/pods/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// urlHost is the host of a URL that reaches a listener on address: a
// wildcard address is reached on loopback.
func urlHost(address string) string {
	switch address {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return address
}

// errNoTimeline is what checkTimeline returns when the daemon keeps no
// start of the pod.
var errNoTimeline = errors.New("keeps no start of the pod")

// checkTimeline asks the daemon's API under base, through the forward,
// whether it keeps a start of pod namespace/name: the page would say it
// does not, and this says it where the user looks.
func checkTimeline(ctx context.Context, base, namespace, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := base + "/api/v1/timelines/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("the daemon's API does not answer through the forward: %w", err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		return fmt.Errorf("the readyline %w %s/%s (it keeps the starts it saw since it started, the last --keep of them): the page will say so", errNoTimeline, namespace, name)
	}
	return fmt.Errorf("the daemon's API answered %s for %s/%s", resp.Status, namespace, name)
}
