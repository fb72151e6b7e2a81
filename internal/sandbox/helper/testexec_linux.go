package helper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/trussdev/truss/internal/cacheprog"
)

// TestExecArg, as the first argument, makes the process the wrapper that
// the go command runs each test binary through (go test -exec), inside a
// sandbox: `EXE TestExecArg [DIR…] -- a.out ARGS…`. Before it executes
// a.out it confines it further, with a Landlock layer of its own under
// which a.out may write only a new directory of its own (made in
// $TMPDIR, and its TMPDIR and GOTMPDIR from then on), the sandbox's own
// shared memory and terminals, the devices and each DIR (the sandbox's
// private /tmp), and make sockets, nothing else, beneath each
// DIR given as SocketsOnly+DIR (the private /tmp when the paths bound
// back in it must not be written): not the workspace, not the go command's work directory
// with the other packages' test binaries, not the build cache. So no
// test binary — test code or the code it tests — changes what the go
// command compiles, links or runs after it: a later package's sources,
// another package's test binary, a cache entry. A go command a test runs
// builds through a cache of its own over the outer one (the cache
// program's private directory as a lower), or cold. It fails, running
// nothing, where the kernel has no Landlock.
const TestExecArg = "__go-test-exec"

// SocketsOnly prefixes a TestExecArg directory beneath which a test
// binary may make sockets but write nothing else (a FIFO planted where
// the go command is about to write would stall or feed it).
const SocketsOnly = "sockets:"

// TestExecMain is the wrapper's whole life (args follow TestExecArg);
// it executes a.out or returns the exit code of its failure, 126.
func TestExecMain(args []string) int {
	if err := testExec(args); err != nil {
		fmt.Fprintf(os.Stderr, "truss go test -exec: %v\n", err)
	}
	return 126
}

func testExec(args []string) error {
	// Landlock and no_new_privs bind the thread that asks: a.out is
	// executed from this one.
	runtime.LockOSThread()
	sep := slices.Index(args, "--")
	if sep < 0 || sep == len(args)-1 {
		return errors.New("usage: " + TestExecArg + " [DIR…] -- a.out ARGS…")
	}
	var extra, sockets []string
	for _, d := range args[:sep] {
		if s, ok := strings.CutPrefix(d, SocketsOnly); ok {
			sockets = append(sockets, s)
			d = s
		} else {
			extra = append(extra, d)
		}
		if !filepath.IsAbs(d) {
			return fmt.Errorf("%q is not an absolute path", d)
		}
	}
	prog := args[sep+1:]
	abi, err := llsyscall.LandlockGetABIVersion()
	if err != nil || abi < 1 {
		return fmt.Errorf("no Landlock on this kernel: the test binary cannot be confined (%v)", err)
	}
	own, err := os.MkdirTemp(os.TempDir(), "test-")
	if err != nil {
		return fmt.Errorf("the test binary's own directory: %w", err)
	}
	tmp, gotmp := filepath.Join(own, "tmp"), filepath.Join(own, "gotmp")
	for _, d := range []string{tmp, gotmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("the test binary's own directory: %w", err)
		}
	}
	env := setEnv(os.Environ(), "TMPDIR", tmp)
	env = setEnv(env, "GOTMPDIR", gotmp)
	if exe, private, lowers, ok := cacheprog.ParseCommand(os.Getenv("GOCACHEPROG")); ok {
		// The outer cache, read as a lower (never written); what a go
		// command of the test's builds goes to its own.
		prog, err := cacheprog.Command(exe, filepath.Join(own, "go-build"), append([]string{private}, lowers...)...)
		if err != nil {
			return err
		}
		env = setEnv(env, "GOCACHEPROG", prog)
		env = setEnv(env, "GOCACHE", filepath.Join(own, "go-build"))
	} else if os.Getenv("GOCACHE") != "" {
		env = setEnv(env, "GOCACHE", filepath.Join(own, "go-build"))
	}
	cfg := configs[min(abi, len(configs)-1)]
	cfg.HandledAccessNet, cfg.Scoped = 0, 0 // the sandbox's own layer rules these
	rules := []landlock.Rule{
		landlock.RODirs("/"),
		landlock.RWFiles(devices...).IgnoreIfMissing().WithIoctlDev(),
		landlock.RWDirs("/dev/pts", "/dev/shm").IgnoreIfMissing().WithIoctlDev(),
		landlock.RWDirs(append([]string{own}, extra...)...).IgnoreIfMissing().WithRefer(),
	}
	if len(sockets) > 0 {
		rules = append(rules, landlock.PathAccess(llsyscall.AccessFSMakeSock, sockets...).IgnoreIfMissing())
	}
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("landlock: nothing to enforce")
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock restrict: %w", err)
	}
	unix.Close(fd)
	path := prog[0]
	if !strings.Contains(path, "/") {
		if path, err = exec.LookPath(path); err != nil {
			return err
		}
	}
	return syscall.Exec(path, prog, env)
}

// setEnv is env with name set to value (every earlier setting dropped).
func setEnv(env []string, name, value string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	return append(env, name+"="+value)
}
