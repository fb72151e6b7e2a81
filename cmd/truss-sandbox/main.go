// Command truss-sandbox is the sandbox helper of truss, as a program of its
// own: truss starts it (when it is installed next to the truss binary) to
// confine each command in namespaces, Landlock and seccomp before executing
// it. It links only the sandbox, so it starts in a fraction of the time the
// whole truss binary takes. It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/trussdev/truss/internal/sandbox/helper"
)

func main() {
	if helper.IsHelper() {
		helper.Run() // never returns
	}
	fmt.Fprintln(os.Stderr, "truss-sandbox is the sandbox helper of truss; truss runs it, it is not run by hand")
	os.Exit(2)
}
