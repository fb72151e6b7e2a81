//go:build unix

package perfmeter

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time the process has used so far, user and
// system, all threads; 0 when the system does not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
