package trusscli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/charmbracelet/x/term"

	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/interactive"
	"github.com/trussdev/truss/internal/tui"
)

// onTerminal reports whether Truss talks to a person: standard input and
// output are both terminals.
func onTerminal() bool {
	return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())
}

// cmdInteractive is truss with flags and no command: the interactive
// session, with the flags of run.
func cmdInteractive(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("", stderr)
	fset.Usage = func() {
		fmt.Fprintf(fset.Output(), "usage: truss [flags]   (on a terminal: the interactive session in the current directory)\n\nThe flags are run's:\n")
		fset.PrintDefaults()
	}
	var f runFlags
	f.providerFlags.register(fset)
	f.workspaceFlags.register(fset)
	f.register(fset)
	// truss --version is answered before the flags are parsed; here it is
	// a flag among the others (truss --model m --version), and a name a
	// mistyped flag may have meant.
	showVersion := fset.Bool("version", false, "print truss's version and exit")
	if err := cli.Parse(fset, args); err != nil {
		return err
	}
	if *showVersion {
		fmt.Fprintf(stdout, "truss %s\n", version)
		return nil
	}
	if fset.NArg() > 0 {
		return cli.Usagef("unknown command %q: to run a task, truss run \"task\"; with no command, truss opens the interactive session", fset.Arg(0))
	}
	return openTerminalSession(&f, stdout, stderr)
}

// openTerminalSession opens the interactive session with the flags of run and
// runs it until the user quits. It needs a terminal.
func openTerminalSession(f *runFlags, stdout, stderr io.Writer) error {
	if !onTerminal() {
		return cli.Usagef("the interactive session needs a terminal (standard input and output); to run a task without one: truss run \"task\" or truss exec \"task\"; truss --help lists the commands")
	}
	if f.approval == "" {
		f.approval = string(approval.OnRequest)
	}
	o, err := f.options()
	if err != nil {
		return err
	}
	return openInteractive(o, stdout, true)
}

// openInteractive runs the interactive session with o until the user
// quits, then says what was saved and, when its workspace stays
// (kept), how to resume it.
func openInteractive(o harness.Options, stdout io.Writer, kept bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	c, err := interactive.Run(ctx, o, tui.Options{})
	switch {
	case !c.Opened:
		return err // the session did not open
	case c.ID == "":
		fmt.Fprintln(stdout, "The session was not saved (--no-session).")
	case !c.Saved:
		fmt.Fprintln(stdout, "No task reached the model; nothing was saved.")
	case !kept:
		fmt.Fprintf(stdout, "Session %s saved.\n  ledger:      truss ledger verify %s\n", c.ID, c.ID)
	default:
		fmt.Fprintf(stdout, "Session %s saved.\n  resume with: truss --resume %s\n  ledger:      truss ledger verify %s\n", c.ID, c.ID, c.ID)
	}
	return err
}
