// Package trusscli is the truss command: its subcommands' flags, their
// parsing and what they print. cmd/truss is its main; Main is the whole
// command, so that tests run it in-process (testscript) as the binary
// would. It composes sessions only through internal/harness and
// internal/interactive (docs/architecture.md, "Dependency rules").
package trusscli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/suggest"
)

// version is the version truss reports (cli.Version).
var version = cli.Version

// usage is the help of truss; its providers come from the provider table.
func usage() string {
	return `truss — a coding agent whose every action is executed locally and recorded

Usage:
  truss [flags]                     on a terminal: the interactive session in the current directory
                                    (run's flags; --approval defaults to on-request)
  truss run [flags] "task"          run a task on the current directory (no task, on a terminal:
                                    the interactive session)
  truss exec [--json] [flags] "task"  headless run; --json prints one JSON event per line
  truss demo [flags]                the bundled example repository fixed on the simulated model
  truss tools [flags]               print the exact tool declarations a request would carry
  truss tool call [flags]           execute one tool call locally and print what the model sees
  truss models [--provider P] [--json]
                                    the model catalog: surfaces, tools, limits, prices and their sources
  truss sessions                    list saved sessions (resume one with truss run --resume ID)
  truss ledger key|verify|show|prove|export|serve
                                    the signed ledger every run writes: key, verification, timeline,
                                    inclusion proofs, in-toto provenance, a self-verifying HTML page
  truss sandbox check               what this host can enforce, and the sandbox a run would get
  truss env check                   which container engine works here for --env image:REF, and the settings chosen
  truss trust [--status|--revoke] [DIR]  trust the project's configuration (.truss): until then it cannot widen the sandbox or start programs
  truss mcp serve [--http ADDR]     Truss's tools (view, create, replace, insert, patch, shell, validate) for any MCP client
  truss mcp list|call               the configured MCP servers' tools; call one by hand
  truss bench run|grade|import|report|worker|status
                                    the benchmark runner (the truss-bench program): runs tasks on
                                    models, grades them as the official harnesses do, reports
                                    (truss bench --help)
  truss help [COMMAND]              this help, or a command's flags
  truss --version

Providers and keys:
` + harness.ProviderHelp() + `
Flags may stand before or after a command's arguments (truss run "task" --max-turns 5);
"--" ends the flags. Run "truss help COMMAND" (or "truss COMMAND -h") for a command's flags.
`
}

// commandNames are truss's commands, for a mistyped one's "did you mean".
func commandNames() []string {
	return []string{"run", "exec", "demo", "tools", "models", "tool", "sessions", "ledger", "mcp", "sandbox", "env", "trust", "bench", "help", "version"}
}

// commandLike reports whether args, which do not begin with a command or
// a flag, look like a mistyped command rather than a task: a first word
// with no space in it that no other word follows (flags may). A task is
// several words or a quoted phrase (truss "fix the test"); a lone word
// a command is near gets its "did you mean", any other lone word is taken
// as unknown, not sent to a model.
func commandLike(args []string) bool {
	return !strings.ContainsAny(args[0], " \t\n") && (len(args) == 1 || strings.HasPrefix(args[1], "-"))
}

// Main runs the truss command with args (without the program's name) and
// returns its exit status. The sandbox's helper, which re-executes the
// binary, is dispatched by the caller first (sandbox.IsHelper).
func Main(args []string, stdout, stderr io.Writer) int { return run(args, stdout, stderr) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		if onTerminal() {
			// truss on a terminal: the interactive session.
			return exitCode(cmdInteractive(nil, stdout, stderr), stderr)
		}
		// As truss with flags says without a terminal: one line, not the
		// whole help.
		return exitCode(cmdInteractive(nil, stdout, stderr), stderr)
	}
	asked := cli.WantsHelp(args[1:])
	diag := stderr // diagnostics, even when help is asked for
	if asked {
		// Asked-for help is output, not a diagnostic: it goes to stdout.
		stderr = stdout
	}
	var err error
	switch args[0] {
	case "--version", "-version", "version":
		fmt.Fprintf(stdout, "truss %s\n", version)
		return 0
	case "-h", "--help", "help":
		if args[0] == "help" && len(args) > 1 && args[1] != "help" {
			// truss help run = truss run -h
			return run(append(args[1:], "-h"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage())
		return 0
	case "run":
		err = cmdRun(args[1:], stdout, stderr, false)
	case "exec":
		err = cmdRun(args[1:], stdout, stderr, true)
	case "demo":
		err = cmdDemo(args[1:], stdout, stderr)
	case "tools":
		err = cmdTools(args[1:], stdout, stderr)
	case "models":
		err = cmdModels(args[1:], stdout, stderr)
	case "tool":
		if len(args) == 2 && (args[1] == "-h" || args[1] == "--help" || args[1] == "-help") {
			fmt.Fprintln(stdout, "usage: truss tool call --root DIR --surface S --tool NAME (--input JSON | --input-file F) [--json]")
			return 0
		}
		if len(args) < 2 || args[1] != "call" {
			err = cli.Usagef("usage: truss tool call --root DIR --surface S --tool NAME (--input JSON | --input-file F) [--json]")
			break
		}
		err = cmdToolCall(args[2:], stdout, stderr)
	case "sessions":
		err = cmdSessions(args[1:], stdout, stderr)
	case "ledger":
		err = cmdLedger(args[1:], stdout, stderr)
	case "mcp":
		err = cmdMCP(args[1:], os.Stdin, stdout, stderr)
	case "sandbox":
		err = cmdSandbox(args[1:], stdout, stderr)
	case "env":
		err = cmdEnv(args[1:], stdout, stderr)
	case "trust":
		err = cmdTrust(args[1:], stdout, stderr)
	case "bench":
		return runBench(args[1:], stderr)
	default:
		if strings.HasPrefix(args[0], "-") || !commandLike(args) {
			// Flags and no command: the interactive session, with run's
			// flags (and a task: truss "fix the test").
			err = cmdInteractive(args, stdout, stderr)
			break
		}
		if near := suggest.Nearest(args[0], commandNames()); near != "" {
			fmt.Fprintf(diag, "truss: unknown command %q; did you mean %s? (truss --help lists the commands)\n", args[0], near)
		} else {
			fmt.Fprintf(diag, "truss: unknown command %q (truss --help lists the commands; truss \"task words\" opens the interactive session on a task)\n", args[0])
		}
		return 2
	}
	var ue cli.UsageError
	if asked && errors.As(err, &ue) && strings.HasPrefix(ue.Msg, "usage: ") {
		// A command group asked for help answers with its usage.
		fmt.Fprintln(stdout, ue.Msg)
		return 0
	}
	return exitCode(err, stderr)
}

func exitCode(err error, stderr io.Writer) int { return cli.ExitCode(err, stderr) }

// optDuration is a duration flag without a default of its own: help shows
// none, and set tells whether it was given.
type optDuration struct {
	d   time.Duration
	set bool
}

func (o *optDuration) String() string {
	if o == nil || !o.set {
		return ""
	}
	return o.d.String()
}

func (o *optDuration) Set(v string) error {
	d, err := time.ParseDuration(v)
	if err != nil {
		return errors.New("not a duration (for example 500ms or 2s)")
	}
	if d < 0 {
		return errors.New("must not be negative")
	}
	o.d, o.set = d, true
	return nil
}
