//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// PluginWeb runs `kubectl-readyline explain --web args...` and returns the
// page URL it prints, and stop, which interrupts it as Ctrl-C would and
// returns its exit (nil: status 0) and what it said on stderr.
func PluginWeb(ctx context.Context, plugin string, args ...string) (url string, stop func() (string, error), err error) {
	cmd := exec.CommandContext(ctx, plugin, append([]string{"explain", "--web"}, args...)...)
	var mu sync.Mutex
	var stderr bytes.Buffer
	cmd.Stderr = lockedWriter{&mu, &stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	said := func() string { mu.Lock(); defer mu.Unlock(); return stderr.String() }
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(out)
		line, _ := r.ReadString('\n')
		lines <- strings.TrimSpace(line)
		io.Copy(io.Discard, r)
		exited <- cmd.Wait()
	}()
	stop = func() (string, error) {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case err := <-exited:
			return said(), err
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			return said(), fmt.Errorf("explain --web did not end within 10 s of SIGINT")
		}
	}
	select {
	case url = <-lines:
		if url == "" {
			said, err := stop()
			return "", nil, fmt.Errorf("explain --web printed no URL (%v): %s", err, said)
		}
		return url, stop, nil
	case <-time.After(time.Minute):
		said, _ := stop()
		return "", nil, fmt.Errorf("explain --web printed no URL within a minute: %s", said)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// HTTPGet returns the status code and body of url.
func HTTPGet(ctx context.Context, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}

// PageConditions are the pod conditions a waterfall page draws, in order
// (the data-type of its condition rows).
func PageConditions(page []byte) []string {
	var out []string
	for _, part := range strings.Split(string(page), `class="row condition"`)[1:] {
		if _, rest, ok := strings.Cut(part, `data-type="`); ok {
			if typ, _, ok := strings.Cut(rest, `"`); ok {
				out = append(out, typ)
			}
		}
	}
	return out
}
