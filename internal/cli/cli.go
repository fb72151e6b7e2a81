// Package cli holds what the commands of truss and truss-bench share on the
// command line: usage errors and exit statuses, flag sets, the interrupt
// signal and terminal detection. It holds no command.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/trussdev/truss/internal/suggest"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/termsafe"
)

// Version is the version both binaries report unless their build sets
// their version variable with -ldflags "-X" (truss:
// github.com/trussdev/truss/internal/trusscli.version).
const Version = "0.1.0-dev"

// UsageError is an error in the command line itself (exit status 2).
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return UsageError{fmt.Sprintf(format, args...)} }

// ExitError carries an exit status without a message of its own.
type ExitError struct{ Code int }

func (e ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// NewFlagSet returns a flag set named "truss NAME" ("truss" when name is
// empty) whose parse errors are returned (Parse makes them usage errors)
// and whose help goes to stderr.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(strings.TrimSpace("truss "+name), flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Describe makes fs's usage (what --help and "truss help NAME" print) the
// command's usage line, what it does, and its flags.
func Describe(fs *flag.FlagSet, usage, what string) {
	fs.Usage = func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: %s\n\n%s\n", usage, what)
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n > 0 {
			fmt.Fprintf(out, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
}

// Parse parses args with fs: flag.ErrHelp as it is, after the flag set's
// usage is printed; any other error as a UsageError that names the flag
// and points at --help, with nothing else printed (not the whole list of
// flags after a typo).
func Parse(fs *flag.FlagSet, args []string) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fmt.Fprintf(out, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
		}
		return err
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := suggest.Nearest(name, names); near != "" {
			msg += "; did you mean --" + near + "?"
		}
	}
	return UsageError{fmt.Sprintf("%s (%s --help lists the flags)", msg, fs.Name())}
}

// ParseArg parses args with fs, allowing one argument that is not a flag
// before or after the flags; it returns that argument ("" when there is
// none) and ok false when there are more.
func ParseArg(fs *flag.FlagSet, args []string) (arg string, ok bool, err error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		arg, args = args[0], args[1:]
	}
	if err := Parse(fs, args); err != nil {
		return "", false, err
	}
	switch {
	case fs.NArg() == 0:
		return arg, true, nil
	case arg == "" && fs.NArg() == 1:
		return fs.Arg(0), true, nil
	}
	return "", false, nil
}

// WantsHelp reports whether a command's arguments ask for its help: -h,
// -help or --help before a "--".
func WantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// Multi is a repeatable string flag.
type Multi []string

func (m *Multi) String() string     { return fmt.Sprint(*m) }
func (m *Multi) Set(v string) error { *m = append(*m, v); return nil }

// SignalContext is cancelled by the first SIGINT or SIGTERM, which it
// reports on stderr; a second one exits at once with status 130.
func SignalContext(stderr io.Writer) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(stderr, "\ntruss: interrupted; finishing the current call (press Ctrl-C again to quit at once)")
		cancel()
		select {
		case <-ch:
			os.Exit(130)
		case <-time.After(time.Hour):
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ExitCode is the exit status of a command that returned err, whose
// message it writes to stderr ("truss: ..."): 0 for nil or a request for
// help, an ExitError's own status, 2 for a UsageError or an error that
// says it is one (an UsageError() bool method returning true, as a
// configuration error does), else 1.
func ExitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "truss: %s\n", termsafe.String(err.Error()))
	var ue UsageError
	var us interface{ UsageError() bool }
	if errors.As(err, &ue) || errors.As(err, &us) && us.UsageError() {
		return 2
	}
	return 1
}
