package trusscli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
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
		cli.PrintDefaults(fset)
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
	task := ""
	if fset.NArg() > 0 {
		if commandLike(fset.Args()) {
			return cli.Usagef("unknown command %q: to open the interactive session on a task, give it as a phrase (truss \"fix the test\"); to run one without the session, truss run \"task\"", fset.Arg(0))
		}
		task = strings.Join(fset.Args(), " ")
	}
	return openTerminalSession(&f, task, stdout, stderr)
}

// openTerminalSession opens the interactive session with the flags of run,
// sends task first when it is set, and runs it until the user quits. It
// needs a terminal.
func openTerminalSession(f *runFlags, task string, stdout, stderr io.Writer) error {
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
	return openInteractive(o, task, stdout, true)
}

// openInteractive runs the interactive session with o, task its first
// input when set, until the user quits, then says what was saved and,
// when its workspace stays (kept), how to resume it.
func openInteractive(o harness.Options, task string, stdout io.Writer, kept bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	c, err := interactive.Run(ctx, o, tui.Options{Task: task})
	switch {
	case !c.Opened:
		return err // the session did not open
	case c.ID == "":
		fmt.Fprintln(stdout, "The session was not saved (--no-session).")
	case !c.Saved:
		fmt.Fprintln(stdout, "No task reached the model in this session; it was not saved.")
	case !kept:
		fmt.Fprintf(stdout, "Session %s saved.\n  ledger:      truss ledger verify %s\n", c.ID, c.ID)
	default:
		fmt.Fprintf(stdout, "Session %s saved.\n  resume with: truss --resume %s\n  ledger:      truss ledger verify %s\n", c.ID, c.ID, c.ID)
	}
	return err
}
