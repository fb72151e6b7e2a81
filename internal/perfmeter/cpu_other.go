//go:build !unix

package perfmeter

import "time"

// ProcessCPU returns 0: the process's CPU time is not measured here.
func ProcessCPU() time.Duration { return 0 }
