//go:build !unix

package correlator

import "time"

// processCPU is not known here: the budgets fall back to wall time.
func processCPU() (time.Duration, bool) { return 0, false }
