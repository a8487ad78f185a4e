package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// apiConn is the daemonConn of a real API server: pods/portforward as
// kubectl 1.37 opens it, WebSocket first (the API
// server translates for kubelets that speak only SPDY), then SPDY when the
// upgrade fails (an API server before 1.30, or a proxy that drops
// WebSockets).
type apiConn struct {
	config *rest.Config
	client kubernetes.Interface
	// stderr gets the port forwarder's messages about single connections.
	stderr io.Writer
}

// shouldFallback says when kubectl retries a stream over SPDY.
func shouldFallback(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}

// podURL is the URL of a subresource of pod (portforward).
func (c *apiConn) podURL(pod *corev1.Pod, subresource string) *url.URL {
	return c.client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource(subresource).URL()
}

// Forward forwards address:localPort to remotePort in daemon's network
// namespace.
func (c *apiConn) Forward(ctx context.Context, daemon *corev1.Pod, address string, localPort, remotePort uint16, ready func(uint16)) error {
	u := c.podURL(daemon, "portforward")
	transport, upgrader, err := spdy.RoundTripperFor(c.config)
	if err != nil {
		return err
	}
	spdyDialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	wsDialer, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, c.config)
	if err != nil {
		return err
	}
	// ForwardPorts reports a failed dial as text; the dialer keeps it.
	dialer := &keptErrDialer{Dialer: portforward.NewFallbackDialerForStreaming(wsDialer, spdyDialer, shouldFallback)}

	readyc := make(chan struct{})
	ports := []string{strconv.Itoa(int(localPort)) + ":" + strconv.Itoa(int(remotePort))}
	// Its out says "Forwarding from" and "Handling connection for" each
	// connection: web says the first itself.
	fw, err := portforward.NewOnAddressesForStreamingWithContext(ctx, dialer, []string{address}, ports, readyc, io.Discard, c.stderr)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	select {
	case <-readyc:
	case err := <-done:
		return cmp.Or(dialer.err, err)
	}
	forwarded, err := fw.GetPorts()
	if err != nil || len(forwarded) == 0 {
		fw.Close()
		<-done
		return fmt.Errorf("the forwarded port: %w", err)
	}
	ready(forwarded[0].Local)
	return <-done
}

// keptErrDialer is a stream dialer that keeps its last error.
type keptErrDialer struct {
	httpstream.Dialer
	err error
}

func (d *keptErrDialer) Dial(protocols ...string) (httpstream.Connection, string, error) {
	conn, protocol, err := d.Dialer.Dial(protocols...)
	if err != nil {
		d.err = err
	}
	return conn, protocol, err
}
