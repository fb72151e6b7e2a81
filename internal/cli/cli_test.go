package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestParseArg(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		arg     string
		ok, err bool
	}{
		{nil, "", true, false},
		{[]string{"dir"}, "dir", true, false},
		{[]string{"dir", "-n", "2"}, "dir", true, false},
		{[]string{"-n", "2", "dir"}, "dir", true, false},
		{[]string{"a", "b"}, "", false, false},
		{[]string{"-n", "2", "a", "b"}, "", false, false},
		{[]string{"a", "-n", "2", "b"}, "", false, false},
		{[]string{"-bogus"}, "", false, true},
		{[]string{"--", "-dir"}, "-dir", true, false},
		{[]string{"-n", "2", "--", "a", "b"}, "", false, false},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 0, "")
		arg, ok, err := ParseArg(fs, tc.args)
		var ue UsageError
		if arg != tc.arg || ok != tc.ok || (err != nil) != tc.err || err != nil && !errors.As(err, &ue) {
			t.Errorf("%q: %q %v %v", tc.args, arg, ok, err)
		}
	}
}

func TestWantsHelp(t *testing.T) {
	for args, want := range map[string]bool{"run -h": true, "run --help x": true, "run -- -h": false, "run x": false, "-help": true} {
		if got := WantsHelp(strings.Fields(args)); got != want {
			t.Errorf("%q: %v", args, got)
		}
	}
}

type configError struct{}

func (configError) Error() string    { return "bad config" }
func (configError) UsageError() bool { return true }

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{ExitError{Code: 3}, 3, ""},
		{fmt.Errorf("wrapped: %w", ExitError{Code: 4}), 4, ""},
		{Usagef("bad %s", "flag"), 2, "truss: bad flag\n"},
		{fmt.Errorf("load: %w", configError{}), 2, "truss: load: bad config\n"},
		{errors.New("broke\x1b[2J"), 1, "truss: broke"},
	} {
		var b bytes.Buffer
		if code := ExitCode(tc.err, &b); code != tc.code || !strings.HasPrefix(b.String(), tc.out) || strings.Contains(b.String(), "\x1b") {
			t.Errorf("%v: %d %q", tc.err, code, b.String())
		}
	}
}

// A flag error is one line that points at --help, with nothing printed
// before it; -h prints the flags.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		printed string
	}{
		{[]string{"-bogus"}, "unknown flag --bogus (truss x --help lists the flags)", ""},
		{[]string{"-n", "many"}, `invalid value "many" for flag --n: not a whole number (truss x --help lists the flags)`, ""},
		{[]string{"-wall", "10"}, `invalid value "10" for flag --wall: not a duration: give a number with a unit, such as 90s, 10m or 1h30m (truss x --help lists the flags)`, ""},
		{[]string{"-cost", "much"}, `invalid value "much" for flag --cost: not a number (truss x --help lists the flags)`, ""},
		{[]string{"--hlep"}, "unknown flag --hlep; did you mean --help? (truss x --help lists the flags)", ""},
		{[]string{"-h"}, "flag: help requested", "Usage of truss x:\n  -cost float\n    \ta cost\n  -n int\n    \ta number\n  -name string\n    \ta name\n  -wall duration\n    \ta duration\n"},
		{[]string{"-n", "3"}, "", ""},
		{[]string{"--nmae", "x"}, "unknown flag --nmae; did you mean --name? (truss x --help lists the flags)", ""},
		{[]string{"-N", "3"}, "unknown flag --N; did you mean --n? (truss x --help lists the flags)", ""},
	} {
		var out strings.Builder
		fs := NewFlagSet("x", &out)
		fs.Int("n", 0, "a number")
		fs.String("name", "", "a name")
		fs.Duration("wall", 0, "a duration")
		fs.Float64("cost", 0, "a cost")
		err := Parse(fs, tc.args)
		if got := fmt.Sprint(err); (err != nil || tc.wantErr != "") && got != tc.wantErr {
			t.Errorf("%v: error %q, want %q", tc.args, got, tc.wantErr)
		}
		if out.String() != tc.printed {
			t.Errorf("%v: printed %q, want %q", tc.args, out.String(), tc.printed)
		}
	}
}

// A flag set without a command's name (truss's own flags) points at
// "truss --help", with no space before the flag.
func TestParseWithoutName(t *testing.T) {
	fs := NewFlagSet("", io.Discard)
	err := Parse(fs, []string{"-bogus"})
	if want := "unknown flag --bogus (truss --help lists the flags)"; fmt.Sprint(err) != want {
		t.Errorf("%v, want %s", err, want)
	}
}

// Flags stand anywhere among the arguments; "--" ends them; the
// arguments keep their order.
func TestParseInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		rest []string
		n    int
		b    bool
		s    string
	}{
		{nil, nil, 0, false, ""},
		{[]string{"fix", "it"}, []string{"fix", "it"}, 0, false, ""},
		{[]string{"fix", "it", "-b"}, []string{"fix", "it"}, 0, true, ""},
		{[]string{"fix", "--n", "1", "it"}, []string{"fix", "it"}, 1, false, ""},
		{[]string{"fix", "--n=1", "it", "--b=false"}, []string{"fix", "it"}, 1, false, ""},
		{[]string{"-b", "fix"}, []string{"fix"}, 0, true, ""},
		{[]string{"fix", "--", "--n", "1", "-b"}, []string{"fix", "--n", "1", "-b"}, 0, false, ""},
		{[]string{"--", "--foo"}, []string{"--foo"}, 0, false, ""},
		{[]string{"-", "-b"}, []string{"-"}, 0, true, ""},
		// A flag's value is the next argument, whatever it looks like.
		{[]string{"x", "--s", "-b", "y"}, []string{"x", "y"}, 0, false, "-b"},
		{[]string{"x", "--s", "--", "y"}, []string{"x", "y"}, 0, false, "--"},
		{[]string{"x", "--", "--", "y"}, []string{"x", "--", "y"}, 0, false, ""},
	} {
		fs := NewFlagSet("x", io.Discard)
		n := fs.Int("n", 0, "")
		b := fs.Bool("b", false, "")
		s := fs.String("s", "", "")
		if err := Parse(fs, tc.args); err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if !slices.Equal(fs.Args(), tc.rest) && len(fs.Args())+len(tc.rest) > 0 || *n != tc.n || *b != tc.b || *s != tc.s {
			t.Errorf("%q: args %q, n %d, b %v, s %q; want %q %d %v %q", tc.args, fs.Args(), *n, *b, *s, tc.rest, tc.n, tc.b, tc.s)
		}
	}
}

// A word that looks like a flag but is none is an error wherever it
// stands, not an argument; a command that takes arguments says how to
// give one that begins with -; one that takes none refuses them.
func TestParseArgsAndNone(t *testing.T) {
	for _, tc := range []struct {
		parse func(*flag.FlagSet, []string) error
		args  []string
		want  string
	}{
		{ParseArgs, []string{"fix", "it", "--no-valdate"}, "unknown flag --no-valdate; did you mean --no-validate? (truss x --help lists the flags; an argument that begins with - goes after --)"},
		{ParseArgs, []string{"fix", "-1"}, "unknown flag --1 (truss x --help lists the flags; an argument that begins with - goes after --)"},
		{ParseArgs, []string{"fix", "--", "-1"}, "<nil>"},
		{ParseArgs, []string{"fix", "--max-turns", "x"}, `invalid value "x" for flag --max-turns: not a whole number (truss x --help lists the flags)`},
		{Parse, []string{"--no-valdate"}, "unknown flag --no-valdate; did you mean --no-validate? (truss x --help lists the flags)"},
		{ParseNone, nil, "<nil>"},
		{ParseNone, []string{"--no-validate"}, "<nil>"},
		{ParseNone, []string{"extra"}, `unexpected argument "extra" (truss x takes no arguments)`},
		{ParseNone, []string{"a", "--no-validate", "b"}, `unexpected arguments "a" "b" (truss x takes no arguments)`},
		{ParseNone, []string{"--bogus"}, "unknown flag --bogus (truss x --help lists the flags)"},
	} {
		fs := NewFlagSet("x", io.Discard)
		fs.Bool("no-validate", false, "")
		fs.Int("max-turns", 50, "")
		err := tc.parse(fs, tc.args)
		if got := fmt.Sprint(err); got != tc.want {
			t.Errorf("%q: %s, want %s", tc.args, got, tc.want)
		}
		var ue UsageError
		if err != nil && !errors.As(err, &ue) {
			t.Errorf("%q: %T is no usage error", tc.args, err)
		}
	}
}
