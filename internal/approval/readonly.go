package approval

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/trussdev/truss/internal/lazyre"
)

// ReadOnly reports whether a shell command is known to only read: it
// parses as bash, and every simple command in it is a program of a small
// read-only set with arguments that keep it read-only, joined only by
// pipes, &&, ||, ; and newlines, possibly grouped, with no expansion or
// substitution of any kind, no variable assignment, no background job,
// and no redirection but reading a file, a here-document, duplicating a
// descriptor (2>&1) or writing to /dev/null. So "ls && rm x" is not
// read-only, nor "cat $(rm x)", "echo hi > f" or "find . -delete".
//
// The set: ls, cat, head, tail, wc, nl, pwd, cd, echo, printf, true, false,
// which, basename, dirname, realpath, readlink, stat, file, du, df, tree
// (without -o or -R), cut, tr, uniq (reading one input only), sort
// (without -o or --output, however abbreviated), diff, cmp,
// comm, grep, egrep, fgrep, rg (without --pre), find (without -exec,
// -execdir, -ok, -okdir, -delete, -fprint*, -fls), sed -n with a single
// line-printing script ("10p", "5,20p") and no other option, and git status, diff, log, show,
// ls-files, rev-parse and blame (without --output, --ext-diff or
// --textconv, and no option before the subcommand).
//
// In a repository commands made (whose configuration they write), git's
// read-only subcommands can run a program the configuration names
// (core.fsmonitor, diff.external); such a command still runs in the
// sandbox, like every command the policy lets through.
//
// A command that does not parse, or that holds a control character but a
// tab or a newline, is not read-only. The list is
// deliberately short: a command missing from it is asked about, which is
// safe.
func ReadOnly(command string) bool {
	// A control character but a tab or a newline (a form feed, a carriage
	// return) is asked about: the printer and bash need not agree on it
	// (Canonical printed "find \f0", one argument, as two commands).
	if strings.ContainsFunc(command, func(r rune) bool { return r != '\t' && r != '\n' && (r < 0x20 || r == 0x7f) }) {
		return false
	}
	f, err := parse(command)
	if err != nil || len(f.Stmts) == 0 {
		return false
	}
	return stmtsReadOnly(f.Stmts)
}

func parse(command string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
}

func stmtsReadOnly(stmts []*syntax.Stmt) bool {
	for _, s := range stmts {
		if !stmtReadOnly(s) {
			return false
		}
	}
	return true
}

func stmtReadOnly(s *syntax.Stmt) bool {
	if s == nil || s.Background || s.Coprocess || s.Disown {
		return false
	}
	for _, r := range s.Redirs {
		if !redirectReadOnly(r) {
			return false
		}
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		return callReadOnly(c)
	case *syntax.BinaryCmd:
		switch c.Op {
		case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			return stmtReadOnly(c.X) && stmtReadOnly(c.Y)
		}
		return false
	case *syntax.Subshell:
		return len(c.Stmts) > 0 && stmtsReadOnly(c.Stmts)
	case *syntax.Block:
		return len(c.Stmts) > 0 && stmtsReadOnly(c.Stmts)
	}
	return false
}

// redirectReadOnly allows reading a file, here-documents and here-strings
// of literal text, duplicating a descriptor by number, and writing to
// /dev/null.
func redirectReadOnly(r *syntax.Redirect) bool {
	if r.N != nil && !isFD(r.N.Value) {
		return false // {varname}> assigns a variable
	}
	target, ok := literal(r.Word)
	if r.Hdoc != nil {
		if _, lit := literal(r.Hdoc); !lit {
			return false
		}
	}
	switch r.Op {
	case syntax.RdrIn, syntax.WordHdoc:
		return ok
	case syntax.Hdoc, syntax.DashHdoc:
		return true // the body was checked above; the delimiter is only a marker
	case syntax.DplIn, syntax.DplOut:
		return ok && (isFD(target) || target == "-")
	case syntax.RdrOut, syntax.AppOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob:
		return ok && target == "/dev/null"
	}
	return false
}

func isFD(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// literal returns a word's value when it is only literal text (plain,
// single- or double-quoted, without any expansion).
func literal(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", false
	}
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			sb.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				sb.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return sb.String(), true
}

// readOnlyProgram returns, for a program of the set, the check of its
// arguments (nil: any literal arguments); ok is false for any other
// program. (A switch, not a map: a map literal is built at every start of
// the program.)
func readOnlyProgram(name string) (check func(args []string) bool, ok bool) {
	switch name {
	case "ls", "cat", "head", "tail", "wc", "nl", "pwd", "cd",
		"echo", "printf", "true", "false", "which", "basename",
		"dirname", "realpath", "readlink", "stat", "file", "du",
		"df", "cut", "tr", "diff", "cmp", "comm",
		"grep", "egrep", "fgrep":
		return nil, true
	case "uniq":
		return func(args []string) bool { return len(operands(args)) <= 1 }, true
	case "tree":
		return func(args []string) bool { return !anyFlag(args, "-o", "-R") }, true
	case "sort":
		return func(args []string) bool { return !anyFlag(args, "-o", "--output") }, true
	case "rg":
		return func(args []string) bool { return !anyFlag(args, "--pre", "--pre-glob") }, true
	case "find":
		return func(args []string) bool {
			for _, a := range args {
				switch a {
				case "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
					return false
				}
			}
			return true
		}, true
	case "sed":
		return func(args []string) bool {
			// sed -n 'Np' or sed -n 'M,Np' [file...]: prints lines, nothing
			// else; no other option (-e, -f, -i) anywhere.
			if len(args) < 2 || args[0] != "-n" || !sedPrint.Get().MatchString(args[1]) {
				return false
			}
			for _, a := range args[2:] {
				if strings.HasPrefix(a, "-") && a != "-" {
					return false
				}
			}
			return true
		}, true
	case "git":
		return func(args []string) bool {
			if len(args) == 0 || !slices.Contains([]string{"status", "diff", "log", "show", "ls-files", "rev-parse", "blame"}, args[0]) {
				return false
			}
			return !anyFlag(args[1:], "--output", "--ext-diff", "--textconv")
		}, true
	}
	return nil, false
}

var sedPrint = lazyre.Regexp{Expr: `^[0-9]+(,[0-9]+)?p$`}

// anyFlag reports whether args hold one of flags, alone, with "=value",
// or (a one-letter flag) with its value attached ("-ofile").
func anyFlag(args []string, flags ...string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		for _, f := range flags {
			if a == f || strings.HasPrefix(a, f+"=") || len(f) == 2 && f[1] != '-' && strings.HasPrefix(a, f) {
				return true
			}
			// A long option abbreviated, as getopt_long takes it
			// ("--outp=f" for --output).
			if name, _, _ := strings.Cut(a, "="); strings.HasPrefix(f, "--") && len(name) > 3 && strings.HasPrefix(f, name) {
				return true
			}
			// Combined short flags: "-uo" holds -o.
			if len(f) == 2 && f[1] != '-' && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], rune(f[1])) {
				return true
			}
		}
	}
	return false
}

// operands returns the arguments that are not options.
func operands(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			out = append(out, a)
		}
	}
	return out
}

func callReadOnly(c *syntax.CallExpr) bool {
	if len(c.Assigns) > 0 || len(c.Args) == 0 {
		return false // VAR=x changes what a program does, or is an assignment alone
	}
	words := make([]string, len(c.Args))
	for i, w := range c.Args {
		s, ok := literal(w)
		if !ok {
			return false
		}
		words[i] = s
	}
	check, ok := readOnlyProgram(words[0])
	if !ok {
		return false
	}
	return check == nil || check(words[1:])
}

// Canonical returns the command as the shell parser prints it (so that
// "ls   -la" and "ls -la" are the same command), or the command with its
// surrounding space trimmed when it does not parse.
func Canonical(command string) string {
	f, err := parse(command)
	if err != nil {
		return strings.TrimSpace(command)
	}
	var sb strings.Builder
	if err := syntax.NewPrinter().Print(&sb, f); err != nil {
		return strings.TrimSpace(command)
	}
	return strings.TrimSpace(sb.String())
}
