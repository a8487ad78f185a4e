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
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// apiConn is the daemonConn of a real API server: pods/exec and
// pods/portforward as kubectl 1.37 opens them, WebSocket first (the API
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

// podURL is the URL of a subresource of pod (exec, portforward).
func (c *apiConn) podURL(pod *corev1.Pod, subresource string, opts *corev1.PodExecOptions) *url.URL {
	req := c.client.CoreV1().RESTClient().Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource(subresource)
	if opts != nil {
		req = req.VersionedParams(opts, scheme.ParameterCodec)
	}
	return req.URL()
}

// Explain runs `readyline explain ARGS` in daemon's readyline container.
func (c *apiConn) Explain(ctx context.Context, daemon *corev1.Pod, args []string, stdout, stderr io.Writer) error {
	u := c.podURL(daemon, "exec", &corev1.PodExecOptions{
		Container: daemonContainer,
		Command:   append([]string{daemonBinary, "explain"}, args...),
		Stdout:    true,
		Stderr:    true,
	})
	spdyExec, err := remotecommand.NewSPDYExecutor(c.config, http.MethodPost, u)
	if err != nil {
		return err
	}
	// A WebSocket upgrade is a GET (RFC 6455 4.1).
	wsExec, err := remotecommand.NewWebSocketExecutor(c.config, http.MethodGet, u.String())
	if err != nil {
		return err
	}
	exec, err := remotecommand.NewFallbackExecutor(wsExec, spdyExec, shouldFallback)
	if err != nil {
		return err
	}
	return exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr})
}

// Forward forwards address:localPort to remotePort in daemon's network
// namespace.
func (c *apiConn) Forward(ctx context.Context, daemon *corev1.Pod, address string, localPort, remotePort uint16, ready func(uint16)) error {
	u := c.podURL(daemon, "portforward", nil)
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
