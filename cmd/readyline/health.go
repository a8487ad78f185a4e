package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/readyline/readyline/exporter"
	"github.com/readyline/readyline/exporter/termtext"
)

// defaultHealthAddr is where the daemon serves /healthz: a unix socket in
// its container (--api-addr's directory, mode 0600), which no other pod
// reaches, nor a port-forward to this one (kubectl readyline's readers may
// port-forward: they reach its TCP listeners, loopback included). The
// kubelet probes it with an exec probe of `readyline health`, which runs
// in the container: an httpGet probe would need an address on the pod
// network, where any pod could hold its connections (or, on a hostNetwork
// pod, the node's loopback, which it is then).
const defaultHealthAddr = "unix:/run/readyline/health.sock"

// registerHealthAddr registers --health-addr, the daemon's and the probe's.
// Its environment twin comes from the ConfigMap both read (envFrom), so the
// probe asks where the daemon listens.
func registerHealthAddr(fs *flagSet, p *string) {
	fs.String(p, "health-addr", defaultHealthAddr, "serve /healthz here, for the kubelet's exec probe (readyline health): unix:PATH, or a loopback host:port; "+
		"whoever reaches it can hold the probe's connections, and a port-forward to the pod reaches its TCP ports")
}

// healthHTTPLimits are the limits of the health listener: its clients are
// the kubelet's probes, at most one of each kind at a time, and an operator.
var healthHTTPLimits = func() httpLimits {
	l := defaultHTTPLimits
	l.MaxConns = 8
	return l
}()

// healthHandler serves the daemon's health at /healthz (503 and why when
// check fails).
func healthHandler(check func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", exporter.HealthHandler(check))
	return mux
}

// healthConfig is the validated configuration of `readyline health`.
type healthConfig struct {
	addr    string
	timeout time.Duration
}

func parseHealthConfig(args []string, stderr io.Writer) (healthConfig, error) {
	var c healthConfig
	fs := newFlagSet("readyline health", stderr)
	registerHealthAddr(fs, &c.addr)
	fs.Duration(&c.timeout, "timeout", 3*time.Second, "give up on an answer after this (below the probe's timeoutSeconds)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: readyline health [flags]\n\nAsks the daemon on this node (its pod) whether it is healthy: exit 0 if it is, 1 and why if not.\nThe DaemonSet's startup, liveness and readiness probes run it.")
		fs.PrintDefaults()
	}
	if err := fs.parse(args); err != nil {
		return c, err
	}
	if c.timeout <= 0 {
		fmt.Fprintln(stderr, "--timeout must be > 0")
		return c, errUsage
	}
	return c, nil
}

// runHealth is `readyline health`: GET /healthz on the daemon's health
// address. The daemon's answer is printed (the kubelet puts it in the
// probe's Unhealthy event); anything but 200 is an error, exit status 1.
func runHealth(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseHealthConfig(args, stderr)
	if err != nil {
		return err
	}
	url, err := healthURL(cfg.addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	transport := &http.Transport{}
	if path, ok := unixPath(cfg.addr); ok {
		transport = unixTransport(path)
	}
	transport.DisableKeepAlives = true
	client := &http.Client{Transport: transport}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("asking the daemon: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	msg := termtext.Escape(strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, msg)
	}
	_, err = fmt.Fprintln(stdout, msg)
	return err
}

// healthURL is the /healthz URL of a daemon listening on addr; an address
// on every interface is asked on loopback, a unix socket by any host.
func healthURL(addr string) (string, error) {
	if _, ok := unixPath(addr); ok {
		return "http://readyline/healthz", nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--health-addr %q: %w", addr, err)
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
