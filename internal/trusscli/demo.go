package trusscli

import (
	"context"
	"flag"
	"fmt"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/cli"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// demoDialect reconciles --sim-dialect and its alias --dialect: the one
// given sets *dialect, and the flag's name is returned for messages; both
// given with different values are refused.
func demoDialect(fset *flag.FlagSet, dialect *string, alias string) (string, error) {
	set := map[string]bool{}
	fset.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case set["sim-dialect"] && set["dialect"] && *dialect != alias:
		return "", cli.Usagef("--sim-dialect %s and --dialect %s name two dialects: pass one", *dialect, alias)
	case set["dialect"]:
		*dialect = alias
		return "dialect", nil
	}
	return "sim-dialect", nil
}

// dialectSuggestion is " (did you mean D?)" for a dialect name that is
// a provider's name whose dialect differs (openai: responses) or a
// mistyped dialect, else "".
func dialectSuggestion(name string) string {
	if def, err := harness.LookupProvider(name); err == nil && def.Dialect != "" && slices.Contains(demoDialects(), def.Dialect) {
		return fmt.Sprintf(" (provider %s speaks the %s dialect: pass %s)", def.Name, def.Dialect, def.Dialect)
	}
	if near := harness.Nearest(name, demoDialects()); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}

// demoDialects are the dialects the demo's simulated model can speak.
func demoDialects() []string {
	var names []string
	for _, d := range harness.Dialects() {
		names = append(names, d.Name)
	}
	return names
}

func cmdDemo(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("demo", stderr)
	cli.Describe(fset, "truss demo [flags]", `Copies the bundled example repository (a Go module with a failing test) to a
temporary directory and fixes it on the simulated model: no API key, no network.
It prints the transcript, the diff, the checks Truss runs after the session, and
the ledger verified.`)
	var f runFlags
	dialect := fset.String("sim-dialect", "", "the API dialect the simulated model speaks and Truss's adapter uses (as run's --sim-dialect): "+strings.Join(demoDialects(), ", ")+"; by default the one --surface needs, else the model's (sim-gpt*: responses), else anthropic")
	dialectAlias := fset.String("dialect", "", "the same as --sim-dialect")
	modelName := fset.String("model", "", "the simulated model's name, which picks its profile (sim-gpt-codex: the codex surface on the responses dialect)")
	surfaceName := fset.String("surface", "auto", "tool surface: auto picks the model's trained surface; generic forces Truss's function tools")
	keep := fset.Bool("keep", false, "keep the demo repository instead of removing it")
	inter := fset.Bool("interactive", false, "open the interactive session on the demo repository instead (a terminal is needed): type any task; the scripted model fixes the test, showing its diff and the tests' output, then asks for an approval")
	fset.StringVar(&f.script, "script", "", "play this script instead of the bundled fix (docs/simulator.md)")
	f.registerSandbox(fset)
	if err := cli.ParseNone(fset, args); err != nil {
		return err
	}
	flagName, err := demoDialect(fset, dialect, *dialectAlias)
	if err != nil {
		return err
	}
	if *dialect != "" && !slices.Contains(demoDialects(), *dialect) {
		return cli.Usagef("--%s must be one of %s, not %q%s", flagName, strings.Join(demoDialects(), ", "), *dialect, dialectSuggestion(*dialect))
	}
	if *inter {
		return demoInteractive(fset, &f, *dialect, *modelName, *surfaceName, *keep, stdout, stderr)
	}
	if f.script == "" {
		f.script = harness.DemoScript
	}
	sb := harness.SandboxOptions{}
	if err := f.sandboxOptions(&sb); err != nil {
		return err
	}
	o := harness.Options{Version: version, Provider: "sim", Surface: *surfaceName, SimDialect: *dialect, Model: *modelName, Script: f.script,
		Sandbox: sb, CacheName: "demo", // one cache for every demo, though each has a new directory
		ShellTimeout: demoShellTimeout, Budget: agent.Budget{MaxTurns: 20}, MaxResultChars: 30000}
	if err := harness.Check(o); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "truss-demo-")
	if err != nil {
		return err
	}
	if *keep {
		defer fmt.Fprintf(stdout, "\nThe demo repository is kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if err := examples.Unpack(examples.DemoRepo, dir); err != nil {
		return err
	}
	before, err := snapshot(dir)
	if err != nil {
		return err
	}
	o.Root, o.SimRoot, o.MemoryDir = dir, dir, filepath.Join(dir, ".truss", "memories")
	octx, cancel := cli.SignalContext(stderr)
	defer cancel()
	ctx, watched := watchOutput(octx, stdout, stderr)
	stdout, stderr = watched.stdout, watched.stderr
	fmt.Fprintf(stdout, "Demo: a Go module with a failing test, copied to %s.\nThe simulated model plays a scripted fix through the real loop, adapter and tools.\n\n", dir)
	res, runErr := runTask(octx, ctx, o, &f, "The tests of this module fail. Find the bug and fix it.", stdout, stderr,
		runDisplay{noResumeHint: !*keep}) // the repository goes with the demo
	if watched.closed(ctx) {
		return cli.ExitError{Code: exitOutputClosed}
	}

	after, err := snapshot(dir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n── diff ──\n%s", termsafe.String(diffSnapshots(before, after)))
	fmt.Fprintf(stdout, "\n── go test -count=1 ./... (run by truss after the session, in a sandbox of its own) ──\n")
	code, out := goTest(ctx, dir, sb, stderr)
	fmt.Fprint(stdout, termsafe.String(out))

	// The demo succeeds only on Truss's own evidence, whatever the model
	// said: the run completed, the verification boundary passed in the
	// sandbox, the tests pass in a sandbox of their own after the session,
	// and the ledger verifies.
	var failed []string
	switch {
	case runErr != nil:
		failed = append(failed, "the run failed: "+oneLine(runErr.Error()))
	case res == nil:
		failed = append(failed, "the run did not start")
	case res.Agent.Status != agent.StatusCompleted:
		failed = append(failed, fmt.Sprintf("the run ended %s", res.Agent.Status))
	}
	var v *harness.Verdict
	if res != nil {
		v = res.Verdict
	}
	switch {
	case v == nil:
		failed = append(failed, "Truss's verification did not run")
	case !v.OK:
		failed = append(failed, "Truss's verification in the sandbox failed ("+oneLine(v.Text("", 0))+")")
	}
	if code != 0 {
		failed = append(failed, "the tests fail after the run")
	}
	if res != nil && res.LedgerDir != "" {
		_, vkey, err := ledger.InstallationKey()
		if err != nil {
			return err
		}
		r, entries, err := ledger.Verify(res.LedgerDir, vkey)
		if err == nil {
			err = r.CheckSealed() // the run closed its ledger: every entry is sealed
		}
		if err == nil {
			err = ledger.VerifyWorkspace(res.LedgerDir, entries, dir)
		}
		if err != nil {
			failed = append(failed, "its ledger does not verify: "+oneLine(err.Error()))
		} else {
			fmt.Fprintf(stdout, "\n── ledger ──\n%s\nverified: %s, %s, %s; the workspace matches\nverifier key %s\nroot hash    %s (tree size %d)\n",
				res.LedgerDir, plural.Count(r.Entries, "entry"), plural.Count(r.Checkpoints, "signed checkpoint"), plural.Count(r.Payloads, "payload"), vkey, ledger.FormatRoot(r.Root), r.Sealed)
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stdout, "\n✗ The demo failed, whatever the model said above: %s.\n", termsafe.String(strings.Join(failed, "; ")))
		return cli.ExitError{Code: 1}
	}
	fmt.Fprintf(stdout, "\n✓ The demo succeeded: Truss's verification passed in the sandbox, the tests pass, and the ledger verifies.\n")
	return nil
}

// goTest runs the module's tests in a fresh session's sandbox (the code
// is the model's: it runs nowhere else) and returns the exit status and
// output.
func goTest(ctx context.Context, dir string, sb harness.SandboxOptions, stderr io.Writer) (int, string) {
	set, err := harness.ToolCallSet("generic")
	if err != nil {
		return -1, err.Error() + "\n"
	}
	s, err := harness.Open(ctx, harness.Options{Version: version, NoModel: true, NoSession: true, NoLedger: true, Root: dir, Tools: set,
		Sandbox: sb, CacheName: "demo", ShellTimeout: demoShellTimeout, Validation: harness.ValidationOptions{Off: true},
		MCP: harness.MCPOptions{Off: true}, OnWarning: warner(stderr)})
	if err != nil {
		return -1, err.Error() + "\n"
	}
	defer s.Close()
	r := s.Execute(ctx, tool.Call{ID: "demo-check", Op: tool.OpExec, Args: &tool.ExecArgs{Command: "go test -count=1 ./..."}})
	out := r.Stdout + r.Stderr
	if r.ExitCode == nil {
		if r.Err != nil {
			out += r.Err.Message + "\n"
		}
		return -1, out
	}
	return *r.ExitCode, out
}

// snapshot reads the regular files below dir, leaving out hidden ones.
func snapshot(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	return files, err
}

// diffSnapshots renders a unified diff of two snapshots.
func diffSnapshots(before, after map[string]string) string {
	names := map[string]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	var sorted []string
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var sb strings.Builder
	for _, n := range sorted {
		b, a := before[n], after[n]
		if a == b {
			continue
		}
		from, to := "a/"+termsafe.Name(n), "b/"+termsafe.Name(n)
		if _, ok := before[n]; !ok {
			from = "/dev/null"
		}
		if _, ok := after[n]; !ok {
			to = "/dev/null"
		}
		sb.WriteString(udiff.Unified(from, to, b, a))
	}
	if sb.Len() == 0 {
		return "(no changes)\n"
	}
	return sb.String()
}

// demoInteractive opens the interactive session on a copy of the demo
// repository with the simulated model playing the interactive demo (or
// --script): what a new user sees of a session without an API key. Unless
// --sim-dialect or --surface say otherwise, the model speaks the chat
// dialect through Truss's generic tools, whose shell tool can ask to
// leave the sandbox.
func demoInteractive(fset *flag.FlagSet, f *runFlags, dialect, modelName, surfaceName string, keep bool, stdout, stderr io.Writer) error {
	if !onTerminal() {
		return cli.Usagef("truss demo --interactive needs a terminal (standard input and output); truss demo runs the demo without one")
	}
	set := map[string]bool{}
	fset.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if !set["sim-dialect"] && !set["dialect"] {
		dialect = "chat"
	}
	if !set["surface"] {
		surfaceName = "generic"
	}
	sb := harness.SandboxOptions{}
	if err := f.sandboxOptions(&sb); err != nil {
		return err
	}
	o := harness.Options{Version: version, Provider: "sim", Surface: surfaceName, SimDialect: dialect, Model: modelName, Script: f.script,
		Sandbox: sb, CacheName: "demo", Approval: approval.OnRequest,
		ShellTimeout: demoShellTimeout, Budget: agent.Budget{MaxTurns: 20}, MaxResultChars: 30000}
	if f.script == "" {
		o.Script = harness.DemoInteractiveScript
	}
	if err := harness.Check(o); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "truss-demo-")
	if err != nil {
		return err
	}
	if keep {
		defer fmt.Fprintf(stdout, "The demo repository is kept in %s: resume the session there.\n", dir)
	} else {
		defer fmt.Fprintf(stdout, "The demo repository was removed (--keep keeps it, to resume the session in it).\n")
		defer os.RemoveAll(dir)
	}
	if err := examples.Unpack(examples.DemoRepo, dir); err != nil {
		return err
	}
	o.Root, o.SimRoot, o.MemoryDir = dir, dir, filepath.Join(dir, ".truss", "memories")
	fmt.Fprintf(stdout, "Demo: a Go module with a failing test, copied to %s; the simulated model plays a scripted session.\n", dir)
	return openInteractive(o, "", stdout, keep)
}

// demoShellTimeout bounds each command of the demos: the first go test in
// the sandbox compiles the test's dependencies into a cache of its own,
// which takes minutes on a cold, busy machine (a bound that killed it
// would fail the demo for nothing the model did).
const demoShellTimeout = 10 * time.Minute
