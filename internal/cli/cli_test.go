package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
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
		{[]string{"-bogus"}, "flag provided but not defined: -bogus (truss x --help lists the flags)", ""},
		{[]string{"-n", "many"}, `invalid value "many" for flag -n: parse error (truss x --help lists the flags)`, ""},
		{[]string{"-h"}, "flag: help requested", "Usage of truss x:\n  -n int\n    \ta number\n  -name string\n    \ta name\n"},
		{[]string{"-n", "3"}, "", ""},
		{[]string{"--nmae", "x"}, "flag provided but not defined: -nmae; did you mean --name? (truss x --help lists the flags)", ""},
		{[]string{"-N", "3"}, "flag provided but not defined: -N; did you mean --n? (truss x --help lists the flags)", ""},
	} {
		var out strings.Builder
		fs := NewFlagSet("x", &out)
		fs.Int("n", 0, "a number")
		fs.String("name", "", "a name")
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
	if want := "flag provided but not defined: -bogus (truss --help lists the flags)"; fmt.Sprint(err) != want {
		t.Errorf("%v, want %s", err, want)
	}
}
