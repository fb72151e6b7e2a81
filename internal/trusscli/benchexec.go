package trusscli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/trussdev/truss/internal/hostfs"
)

// benchProgram is the program that is truss's bench command.
const benchProgram = "truss-bench"

// runBench replaces this process with truss-bench and args, found next to
// the running truss, then on PATH: the same process id, standard streams,
// signals and exit status, as if truss-bench had been run. It returns only
// when that cannot be done, with exit status 1 and the reason on stderr.
func runBench(args []string, stderr io.Writer) int {
	prog, err := findBench()
	if err == nil {
		err = syscall.Exec(prog, append([]string{benchProgram}, args...), os.Environ())
	}
	fmt.Fprintf(stderr, "truss: %v\n", err)
	return 1
}

// findBench returns truss-bench next to the running executable, else the
// one on PATH.
func findBench() (string, error) {
	var here string
	if self, err := os.Executable(); err == nil {
		here = filepath.Dir(self)
		p := filepath.Join(here, benchProgram)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := hostfs.LookPath(benchProgram, hostfs.UserPath()); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("the bench command is the program %s, which is neither next to truss (%s) nor on PATH; install it with `CGO_ENABLED=0 go install ./cmd/truss-bench` from Truss's source tree", benchProgram, here)
}
