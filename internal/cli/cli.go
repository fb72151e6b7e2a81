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
			PrintDefaults(fs)
		}
	}
}

// Parse parses args with fs. Flags may stand anywhere among the
// arguments, before, between or after the others (interspersed, as in
// "truss run \"fix it\" --no-validate"); "--" ends the flags, so that an
// argument that begins with "-" can follow it; a lone "-" is an argument.
// fs.Args() are then the arguments that are not flags, in their order.
// A flag's value is the next argument whatever it looks like
// (--test-cmd -x), unless the flag is a boolean one or is given as
// --name=value.
//
// It returns flag.ErrHelp as it is, after the flag set's usage is printed;
// any other error as a UsageError that names the flag and points at
// --help, with nothing else printed (not the whole list of flags after a
// typo). An unknown flag's error says which flag it most likely meant
// ("did you mean --no-validate?"); -h and -help count among the names.
func Parse(fs *flag.FlagSet, args []string) error { return parse(fs, args, false) }

// ParseArgs is Parse for a command that takes arguments besides its flags
// (a task, a path): an unknown flag's error also says that an argument
// that begins with "-" goes after "--".
func ParseArgs(fs *flag.FlagSet, args []string) error { return parse(fs, args, true) }

// ParseNone is Parse for a command that takes no arguments besides its
// flags: one is a usage error that names it.
func ParseNone(fs *flag.FlagSet, args []string) error {
	if err := parse(fs, args, false); err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return nil
	case 1:
		return UsageError{fmt.Sprintf("unexpected argument %q (%s takes no arguments)", fs.Arg(0), fs.Name())}
	}
	return UsageError{fmt.Sprintf("unexpected arguments %s (%s takes no arguments)", quoted(fs.Args()), fs.Name())}
}

// quoted is each of ss quoted, separated by spaces.
func quoted(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}

func parse(fs *flag.FlagSet, args []string, takesArgs bool) error {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	flags, rest := intersperse(fs, args)
	err := fs.Parse(append(append(flags, "--"), rest...))
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
			PrintDefaults(fs)
		}
		return err
	}
	msg := wants(fs, err.Error())
	hint := fs.Name() + " --help lists the flags"
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		msg = "unknown flag --" + name
		names := []string{"help"}
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := suggest.Nearest(name, names); near != "" {
			msg += "; did you mean --" + near + "?"
		}
		if takesArgs {
			hint += "; an argument that begins with - goes after --"
		}
	}
	return UsageError{fmt.Sprintf("%s (%s)", doubleDash(msg), hint)}
}

// doubleDash spells the flag a message of the flag package names the way
// the help, the README and the suggestions do: "--name", not "-name"
// ("for flag -name", "for -name", "argument: -name").
func doubleDash(msg string) string {
	for _, at := range []string{"for flag -", "for -", "argument: -"} {
		if i := strings.Index(msg, at); i >= 0 && !strings.HasPrefix(msg[i+len(at):], "-") {
			return msg[:i+len(at)] + "-" + msg[i+len(at):]
		}
	}
	return msg
}

// PrintDefaults is fs.PrintDefaults with each flag spelled "--name", as
// the rest of the help and the README spell it.
func PrintDefaults(fs *flag.FlagSet) {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(out)
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			line = "  --" + rest
		}
		io.WriteString(out, line)
	}
}

// wants turns the flag package's "invalid value "X" for flag -NAME:
// parse error" into what the flag wants, by the type of its value: a
// duration, a whole number, a number or true/false; any other message is
// returned as it is.
func wants(fs *flag.FlagSet, msg string) string {
	head, ok := strings.CutSuffix(msg, ": parse error")
	if !ok {
		return msg
	}
	_, name, ok := strings.Cut(head, " for flag -")
	if !ok {
		return msg
	}
	f := fs.Lookup(name)
	if f == nil {
		return msg
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return msg
	}
	var want string
	switch g.Get().(type) {
	case time.Duration:
		want = "not a duration: give a number with a unit, such as 90s, 10m or 1h30m"
	case int, int64, uint, uint64:
		want = "not a whole number"
	case float64:
		want = "not a number"
	case bool:
		want = "not true or false"
	default:
		return msg
	}
	return head + ": " + want
}

// intersperse splits args into fs's flags, each with its value where the
// value is the next argument, and the other arguments, as Parse reads
// them: everything after "--" is an argument, "--" itself neither. A flag
// fs does not define is put among the flags (for fs.Parse to refuse).
func intersperse(fs *flag.FlagSet, args []string) (flags, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return flags, append(rest, args[i+1:]...)
		case len(a) < 2 || a[0] != '-':
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimPrefix(a[1:], "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil || isBool(f) || i+1 == len(args) {
			continue
		}
		i++
		flags = append(flags, args[i])
	}
	return flags, rest
}

// isBool reports whether f is a boolean flag, which takes no value of its
// own (flag's IsBoolFlag).
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// ParseArg parses args with fs as ParseArgs does, allowing at most one
// argument that is not a flag, anywhere among the flags; it returns that
// argument ("" when there is none) and ok false when there are more.
func ParseArg(fs *flag.FlagSet, args []string) (arg string, ok bool, err error) {
	if err := ParseArgs(fs, args); err != nil {
		return "", false, err
	}
	switch fs.NArg() {
	case 0:
		return "", true, nil
	case 1:
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
		fmt.Fprintln(stderr, "\ntruss: interrupted; stopping what runs and recording how the run ended (press Ctrl-C again to quit at once; the ledger then records no end)")
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
