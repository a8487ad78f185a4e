package collector

import (
	"context"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/readyline/readyline/collector/event"
	"github.com/readyline/readyline/collector/testenv"
)

// BenchmarkProbedCRICall measures what the uprobes cost a probed process:
// crilike (the kubelet's CRI client shapes) runs the same calls without and
// with the kubelet-call source attached, alternating, in the same run. Each
// iteration is one pair of runs; the metrics are per call. With -sleep 0
// the calls do nothing, so probed-unprobed is the probes' own cost; with
// -sleep 1ms they last 1-4 ms like quick CRI calls, and the ratio is what a
// kubelet's calls would pay.
func BenchmarkProbedCRICall(b *testing.B) {
	testenv.RequirePrivileged(b)
	bin := buildCrilike(b, "stripped")
	for _, sleep := range []time.Duration{0, time.Millisecond} {
		b.Run("sleep="+sleep.String(), func(b *testing.B) {
			const rounds = 50 // 9 probed calls (of 12) per round
			var plain, probed time.Duration
			for b.Loop() {
				plain += runCrilike(b, bin, rounds, sleep, nil)
				probed += runCrilike(b, bin, rounds, sleep, crilikeTarget())
			}
			calls := float64(b.N * rounds * 12)
			b.ReportMetric(float64(plain.Nanoseconds())/calls, "ns/call-unprobed")
			b.ReportMetric(float64(probed.Nanoseconds())/calls, "ns/call-probed")
			b.ReportMetric(float64(probed)/float64(plain), "ratio")
		})
	}
}

// runCrilike runs crilike and times its calls, with the kubelet-call source
// probing it when target is set: crilike waits on stdin until the probes
// are attached.
func runCrilike(b *testing.B, bin string, rounds int, sleep time.Duration, target *probeTarget) time.Duration {
	cmd := exec.Command(bin, "-calls", strconv.Itoa(rounds), "-goroutines", "1", "-sleep", sleep.String(), "-wait-stdin")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var src *KubeletCallSource
	var done chan error
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if target != nil {
		if src, err = NewKubeletCallSource(KubeletCallConfig{Rescan: 20 * time.Millisecond, target: target}, nil); err != nil {
			b.Fatal(err)
		}
		done = make(chan error, 1)
		go func() { done <- src.Run(ctx, func(event.Event) {}) }()
		for deadline := time.Now().Add(10 * time.Second); src.Stats().Attaches == 0; {
			if time.Now().After(deadline) {
				b.Fatal("the probes did not attach")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	start := time.Now()
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		b.Fatalf("crilike: %v", err)
	}
	d := time.Since(start)
	if src != nil {
		calls := src.Stats().Kernel.Returns
		cancel()
		<-done
		if calls == 0 {
			b.Fatal("the probes saw no call")
		}
	}
	return d
}
