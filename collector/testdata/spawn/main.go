// spawn runs a program N times, one after the other, and prints the elapsed
// wall time in seconds: the exec load for bench-overhead.sh.
package main

import (
	"flag"
	"fmt"
	"os"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 2000, "how many times to run the program")
	flag.Parse()
	argv := flag.Args()
	if len(argv) == 0 {
		argv = []string{"/bin/true"}
	}
	attr := &syscall.ProcAttr{Files: []uintptr{0, 1, 2}}
	start := time.Now()
	for range *n {
		pid, err := syscall.ForkExec(argv[0], argv, attr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "spawn:", err)
			os.Exit(1)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			fmt.Fprintln(os.Stderr, "spawn:", err)
			os.Exit(1)
		}
	}
	fmt.Printf("%.4f\n", time.Since(start).Seconds())
}
