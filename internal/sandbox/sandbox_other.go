//go:build !linux

package sandbox

import (
	"errors"
	"os/exec"
	"runtime"
)

// maxLandlockABI is the newest Landlock ABI the helper uses (none here).
const maxLandlockABI = 0

// HelperArg is the first argument that makes the truss binary the sandbox
// helper.
const HelperArg = "__sandbox-exec"

// Probe reports what this host can enforce: nothing, off Linux.
func Probe() Host {
	return Host{OS: runtime.GOOS, LandlockErr: "Landlock is Linux only", UserNSErr: "namespaces are Linux only"}
}

// ProbeThorough is Probe.
func ProbeThorough() Host { return Probe() }

// Sandbox launches processes under a Plan; off Linux only an inactive plan
// (no sandbox) can run.
type Sandbox struct{ plan *Plan }

// New prepares a sandbox for a plan.
func New(pl *Plan) (*Sandbox, error) {
	if pl.Active() {
		return nil, errors.New("sandbox: only Linux can enforce a sandbox")
	}
	return &Sandbox{plan: pl}, nil
}

// Derive returns a sandbox for the policy p under s's limits (see the
// Linux one); off Linux only an inactive plan can run.
func (s *Sandbox) Derive(p Policy) (*Sandbox, error) {
	p.Limits = s.plan.Policy.Limits
	return New(&Plan{Policy: p, Mechanisms: s.plan.Mechanisms})
}

// Plan returns the sandbox's plan.
func (s *Sandbox) Plan() *Plan { return s.plan }

// Prepare implements the shell's Launcher.
func (s *Sandbox) Prepare(*exec.Cmd) error { return nil }

// KillAll kills the sandbox's processes (none can run here).
func (s *Sandbox) KillAll() {}

// Guard reports a broken process limit (never, here).
func (s *Sandbox) Guard() error { return nil }

// Close releases the sandbox.
func (s *Sandbox) Close() error { return nil }

// Helper returns the helper program the sandbox runs: none off Linux.
func (s *Sandbox) Helper() string { return "" }

// IsHelper reports whether this process was started as the sandbox helper.
func IsHelper() bool { return false }

// RunHelper is the helper's entry point (Linux only).
func RunHelper() { panic("sandbox helper off Linux") }

// HelperName is the helper binary's name (unused off Linux).
const HelperName = "truss-sandbox"

// HelperPath returns the helper program: none off Linux.
func HelperPath() (string, error) { return "", nil }

// Helper returns the plan's helper: none off Linux.
func (pl *Plan) Helper() (string, error) { return "", nil }

// totalMemory is the machine's memory (unknown here).
func totalMemory() int64 { return 0 }

// freeSpace is the space free on dir's file system (unknown here).
func freeSpace(string) int64 { return 0 }

// helperCheck says which helper a policy's sandbox would run: none here.
func helperCheck(Policy) (string, error) {
	return "no sandbox off Linux", errors.New("no sandbox off Linux")
}

// GoTestExec is "": no wrapper confines test binaries off Linux.
func GoTestExec(exe string, pl *Plan) (string, error) { return "", nil }
