//go:build unix

package redact

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time the process has used, user and system: unlike
// the wall clock, it does not count the time other processes of a busy
// machine take.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
