// Package benchcli is the command line of `truss bench` (flags and
// output; the benchmark itself is internal/bench and its packages). It is
// the truss-bench program, which truss runs for its bench command: kept out
// of the truss binary, the benchmark's dependencies (the NATS server, the
// grader, the report) cost a session's start and memory nothing.
package benchcli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/trussdev/truss/internal/cli"
	"github.com/trussdev/truss/internal/ledger"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/harnessagent"
	"github.com/trussdev/truss/internal/bench/humanevalfix"
	"github.com/trussdev/truss/internal/bench/images"
	"github.com/trussdev/truss/internal/bench/multiswe"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/bench/swebench"
	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/sandbox"
)

const benchUsage = `usage: truss bench run|grade|import|report|worker|status [flags]
  truss bench run --tasks FILE --out DIR (--arm NAME=PROVIDER:MODEL[:SURFACE] ... | --models P:M,... --surfaces S,...)
  truss bench grade --tasks FILE --predictions FILE --out DIR [--parallel N]
  truss bench grade --tasks FILE --logs DIR --out DIR [--arm NAME] [--rules swebench-vX]
  truss bench import humanevalfix|multi-swe-bench FILE --out DIR
  truss bench report DIR [--html FILE]
  truss bench worker --nats URL [--parallel N] [--exit-when-idle]
  truss bench status DIR|--nats URL
  truss bench version`

// Main runs `truss bench ARGS` (args without "bench") and returns its exit
// status: 0 when every run finished (resolved or not) or help was asked
// for, 1 when a run or the command failed, 2 for a usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	asked := cli.WantsHelp(args)
	if asked {
		// Asked-for help is output, not a diagnostic: it goes to stdout.
		stderr = stdout
	}
	err := Run(args, stdout, stderr)
	var ue cli.UsageError
	if asked && errors.As(err, &ue) && strings.HasPrefix(ue.Msg, "usage: ") {
		// A command group asked for help answers with its usage.
		fmt.Fprintln(stdout, ue.Msg)
		return 0
	}
	return cli.ExitCode(err, stderr)
}

// Run runs `truss bench ARGS` (args without "bench").
func Run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return cli.Usagef("%s", benchUsage)
	}
	switch args[0] {
	case "run":
		return cmdBenchRun(args[1:], stdout, stderr)
	case "grade":
		return cmdBenchGrade(args[1:], stdout, stderr)
	case "import":
		return cmdBenchImport(args[1:], stdout, stderr)
	case "report":
		return cmdBenchReport(args[1:], stdout, stderr)
	case "worker":
		return cmdBenchWorker(args[1:], stdout, stderr)
	case "status":
		return cmdBenchStatus(args[1:], stdout, stderr)
	case "version", "--version":
		// The build (version and VCS revision) and the grader and
		// queue-protocol versions a coordinator compares.
		_, err := fmt.Fprintf(stdout, "truss-bench %s\n", runner.ThisVersion())
		return err
	case "-h", "-help", "--help":
		return cli.Usagef("%s", benchUsage)
	}
	return cli.Usagef("unknown bench command %q (truss bench --help lists the commands)", args[0])
}

// benchFlags are the flags run and grade share.
type benchFlags struct {
	tasks, repos, out string
	parallel          int
	only              string
	rules             string
	sandboxFlags
	// scratch is the benchmark's private directory (load's): every
	// directory it makes for its runs is in it, and every agent's and
	// grading's sandbox covers it.
	scratch string
	// dirs are the benchmark's directories (load's).
	dirs *runDirs
}

// sandboxFlags are the flags of where and how the runs' agents and
// gradings run, which run, grade and worker share.
type sandboxFlags struct {
	network     bool
	fallback    string
	testTimeout time.Duration
	caches      string
	env         envFlags
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.network, "grade-network", false, "let the graded setup and tests use the network")
	fs.StringVar(&f.fallback, "sandbox-fallback", "", "accept a weaker sandbox for the agents and the grading when this host cannot enforce it: landlock-only or none")
	fs.DurationVar(&f.testTimeout, "test-timeout", 30*time.Minute, "bound on a grading's setup and tests")
	fs.StringVar(&f.caches, "grade-cache", "", "each grading's build and package caches: own (the default, whatever TRUSS_SANDBOX_CACHE says: caches of its own over the host's, read-only; Go's through a cache program), overlay (own, with Go's build cache an overlay too) or shared (one writable cache every grading shares, which a graded patch can poison for later gradings: only for trusted patches)")
	f.env.register(fs)
}

// check checks the flags' values.
func (f *sandboxFlags) check() error {
	if _, err := sandbox.ParseFallback(f.fallback); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	if _, err := grade.ParseCacheMode(f.caches); err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	return f.env.check()
}

// runDirs are where a benchmark's runs are made, the same for bench run,
// bench grade and bench worker: one private directory (mode 0700,
// truss-bench-* in the temporary directory when it is in /tmp, else in
// the user's parent of them, bench.PrivateParent: bench.PrivateDirIn;
// held by this process's lock: bench.PrivateDir) holding the grader's
// templates, the queue's bundles and results in flight, each run's own
// directory (its session's
// temporary and private directories, caches and memory:
// runner.Runner.TempDir) and, without --work, the workspaces and the
// gradings' checkouts. Every agent's and every grading's sandbox covers
// the whole temporary directory (bench.TempCover), the parent of every
// benchmark's private directory and this directory, binding back only
// what is the run's own. close removes it.
type runDirs struct {
	dir    string
	priv   *bench.PrivateDir
	work   string
	grader *grade.Grader
	jan    *bench.Janitor
	// known is the registry of benchmark paths as this benchmark sees
	// it (bench.KnownView): what its runs' agents and gradings must not
	// see, asked again as each run and each grading starts.
	known *bench.KnownView
}

// makeRunDirs makes the private directory and the grader of its runs
// (after check): the gradings in a sandbox of the host's that hides
// hidden and covers covered, the temporary directory, the private
// directory and work (--work, where the workspaces and the gradings'
// checkouts are made when it is given), or in the environment's
// containers. First it removes the private directories that benchmarks
// which ended without cleaning up (killed, crashed) left in the
// temporary directory, and says so on stderr.
func (f *sandboxFlags) makeRunDirs(work string, hidden, covered []string, stderr io.Writer) (d *runDirs, err error) {
	fb, _ := sandbox.ParseFallback(f.fallback)
	caches, _ := grade.ParseCacheMode(f.caches)
	reg, err := bench.DefaultRegistry()
	if err != nil {
		return nil, err
	}
	parent, err := bench.MakePrivateParent()
	if err != nil {
		return nil, err
	}
	sweepStale(reg, parent, stderr)
	priv, err := bench.MakePrivateDir(bench.PrivateDirIn(parent), reg)
	if err != nil {
		return nil, err
	}
	d = &runDirs{dir: priv.Dir, priv: priv, jan: &bench.Janitor{}}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	covered = append(slices.Clip(covered), d.dir)
	for _, c := range []string{bench.TempCover(), parent} {
		if c != "" {
			covered = append(covered, c)
		}
	}
	if work != "" {
		abs, err := bench.ResolvePath(work)
		if err != nil {
			return d, err
		}
		d.work = abs
		covered = append(covered, abs)
	}
	g := &grade.Grader{Shells: &grade.Sandboxed{Network: f.network, Fallback: fb, Hidden: hidden, Covered: covered, Caches: caches}, Timeout: f.testTimeout,
		Checkouts: &bench.Templates{Dir: filepath.Join(d.dir, "templates")}, Janitor: d.jan}
	d.grader = g
	if sh, err := f.env.shells(f.network, f.testTimeout); err != nil {
		return d, err
	} else if sh != nil {
		g.Shells = sh
	}
	if g.Dir, err = gradingDir(cmp.Or(work, d.dir)); err != nil {
		return d, err
	}
	if g.Dir, err = bench.ResolvePath(g.Dir); err != nil {
		return d, err
	}

	if err := d.confineKnown(reg, stderr); err != nil {
		return d, err
	}
	return d, nil
}

// confineKnown records --work in the registry of benchmark paths and
// keeps every path of the registry from the runs (bench.KnownView): the
// gradings' sandbox (when it is the host's) asks it as each grading
// starts; the commands give it to the agents (known). A registry that
// cannot be read is an error here; later, each run gets what was read
// last.
func (d *runDirs) confineKnown(reg *bench.Registry, stderr io.Writer) error {
	if d.work != "" {
		if err := reg.Add(bench.KnownWork, d.work); err != nil {
			return err
		}
	}
	home, _ := os.UserHomeDir()
	v := &bench.KnownView{Registry: reg, Own: []string{d.dir, d.work, d.grader.Dir, tempDir()},
		Whole: []string{bench.TempCover(), bench.PrivateCover(), "/tmp"}, Home: home}
	if _, _, err := v.Current(); err != nil {
		return err
	}
	warnLive(reg, d.dir, stderr)
	if skipped := v.Skipped(); len(skipped) > 0 {
		fmt.Fprintf(stderr, "truss bench: warning: not hiding %s from the runs: each holds the home directory (or is the root); choose --out, --work and dataset directories of their own\n", firstFew(skipped))
	}
	d.known = v
	if s, ok := d.grader.Shells.(*grade.Sandboxed); ok {
		s.Known = v
	}
	return nil
}

// warnLive says on stderr which other benchmarks are running: the
// commands their runs started before this benchmark recorded its paths
// can read those of them outside /tmp (a sandbox's hidden paths are fixed
// when its shell starts); those they start from now on cannot.
func warnLive(reg *bench.Registry, own string, stderr io.Writer) {
	live, err := bench.LivePrivateDirs(reg, own)
	if err != nil || len(live) == 0 {
		return
	}
	fmt.Fprintf(stderr, "truss bench: warning: %d other benchmarks are running (%s): commands their runs started before now can read this benchmark's paths outside /tmp (--out, --work, the task file and repositories); for models you do not trust, run one benchmark at a time or use --env image:REF\n", len(live), firstFew(live))
}

// sweepStale removes the stale private directories of benchmarks in the
// temporary directory, in parent (bench.PrivateParent, when there is
// one) and recorded in the registry (bench.SweepStale) and says which,
// and what it could not remove.
func sweepStale(reg *bench.Registry, parent string, stderr io.Writer) {
	removed, err := bench.SweepStale("", reg)
	if parent != "" {
		more, perr := bench.SweepStale(parent, nil)
		removed = append(removed, more...)
		err = errors.Join(err, perr)
	}
	if len(removed) > 0 {
		fmt.Fprintf(stderr, "truss bench: removed %d private directories of benchmarks that ended without cleaning up: %s\n", len(removed), firstFew(removed))
	}
	if err != nil {
		fmt.Fprintf(stderr, "truss bench: warning: stale private directories of benchmarks left: %v\n", err)
	}
}

// close removes everything the runs made: the gradings' checkouts and
// the private directory.
func (d *runDirs) close() {
	d.jan.Wait()
	if d.grader != nil && d.grader.Dir != "" {
		os.RemoveAll(d.grader.Dir)
	}
	d.priv.Remove()
}

// abandon is close without waiting for the runs: what a second signal
// does before the process quits at once. It removes what it can and
// says on stderr what is left and where (the next truss bench removes
// a private directory left; workspaces left in --work are the user's
// to remove).
func (d *runDirs) abandon(stderr io.Writer) {
	var left []string
	if d.grader != nil && d.grader.Dir != "" {
		if err := bench.RemoveTree(d.grader.Dir); err != nil {
			left = append(left, d.grader.Dir)
		}
	}
	if err := d.priv.Remove(); err != nil {
		left = append(left, d.dir+" (the next truss bench removes it)")
	}
	if d.work != "" {
		ents, _ := os.ReadDir(d.work)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "truss-bench-run-") {
				left = append(left, filepath.Join(d.work, e.Name()))
			}
		}
	}
	if len(left) == 0 {
		fmt.Fprintln(stderr, "truss: quit; the benchmark's private directory is removed")
		return
	}
	fmt.Fprintf(stderr, "truss: quit; left: %s\n", strings.Join(left, ", "))
}

// signalContext is cli.SignalContext for a benchmark whose directories
// are d: the first SIGINT or SIGTERM cancels the context (the runs in
// hand stop, and close removes what they made); a second quits at once
// (exit status 130), after abandon has removed what it could and said
// what it left.
func signalContext(stderr io.Writer, d *runDirs) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(stderr, "\ntruss: interrupted; stopping the runs in hand and removing what they made (press Ctrl-C again to quit at once)")
		cancel()
		<-ch
		d.abandon(stderr)
		os.Exit(130)
	}()
	return ctx, func() { signal.Stop(ch); cancel() }
}

// envFlags choose the task environment of a benchmark's agents and its
// grader: the host's sandbox, or a container from an image, pulled when
// absent unless --pull never.
type envFlags struct {
	env, engine, workdir string
	template, pull       string
	pullParallel         int
	// eng is the engine found, once: the agents and the grader share it,
	// so that an image is pulled once however many runs need it.
	eng *container.Engine
}

func (e *envFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.env, "env", "host", "where the agents' commands and the grading run: host (the sandbox), image:REF (a fresh container from the OCI image REF for each run and each grading; pulled when absent unless --pull never) or task (the same from each task's own image, its \"image\" field or --image-template, as SWE-bench builds one per instance)")
	fs.StringVar(&e.engine, "engine", "", "the container engine for --env image:REF: podman or docker (default: the first that works)")
	fs.StringVar(&e.workdir, "env-workdir", "", "where the workspace is mounted in the container (default: the image's WORKDIR, else /workspace; SWE-bench's images: /testbed)")
	fs.StringVar(&e.pull, "pull", "missing", "whether an image absent from the engine's store is pulled (missing: once, however many runs need it) or the run fails (never)")
}

// registerImages adds the flags of a command that reads the tasks (run,
// grade): the image template and the pulls made ahead of the runs.
func (e *envFlags) registerImages(fs *flag.FlagSet) {
	fs.StringVar(&e.template, "image-template", "", "with --env task, the image of each task without an \"image\" field: a template such as swebench/sweb.eval.x86_64.{instance_id}:latest ({instance_id} as SWE-bench's harness writes it: lower-cased, __ as _1776_; also {instance_id_raw}, {org}, {name}, {repo}, {number}), or swebench or multi-swe-bench for the official images")
	fs.IntVar(&e.pullParallel, "pull-parallel", 2, "images pulled at once ahead of the runs")
}

// check checks the flags' values.
func (e *envFlags) check() error {
	if e.pull != "missing" && e.pull != "never" {
		return cli.Usagef("--pull %q: want missing or never", e.pull)
	}
	if e.template != "" && e.env != "task" {
		return cli.Usagef("--image-template names each task's image: it goes with --env task")
	}
	if e.pullParallel < 1 {
		e.pullParallel = 1
	}
	return nil
}

// engineFor finds the container engine once.
func (e *envFlags) engineFor(ctx context.Context) (*container.Engine, error) {
	if e.eng != nil {
		return e.eng, nil
	}
	eng, err := container.Find(ctx, e.engine)
	if err != nil {
		return nil, err
	}
	eng.NoPull = e.pull == "never"
	e.eng = eng
	return eng, nil
}

// shells returns the grader's shells for the environment: nil for the
// host's sandbox.
func (e *envFlags) shells(network bool, timeout time.Duration) (grade.Shells, error) {
	if e.env == "task" {
		eng, err := e.engineFor(context.Background())
		if err != nil {
			return nil, err
		}
		return &grade.InImage{Engine: eng, PerTask: true, Workdir: e.workdir, Network: network, Timeout: timeout}, nil
	}
	spec, err := container.ParseSpec(e.env)
	if err != nil {
		return nil, cli.UsageError{Msg: err.Error()}
	}
	if spec.Host() {
		return nil, nil
	}
	eng, err := e.engineFor(context.Background())
	if err != nil {
		return nil, err
	}
	return &grade.InImage{Engine: eng, Image: spec.Image, Workdir: e.workdir, Network: network, Timeout: timeout}, nil
}

// agentImages gives the agent the engine to make sure of its images with,
// when the runs are in containers.
func (e *envFlags) agentImages(a *harnessagent.Agent) {
	a.Env, a.Engine, a.EnvWorkdir = e.env, e.engine, e.workdir
	if e.eng != nil {
		a.Images = e.eng
	}
}

// prefetch pulls the images the tasks need, a few at once, while the runs
// start (a run needing an image being pulled waits for that pull); a
// failure is said on stderr, and the runs of that image fail each with it.
func (e *envFlags) prefetch(ctx context.Context, tasks []bench.Task, stderr io.Writer) {
	if e.eng == nil || e.eng.NoPull {
		return
	}
	var refs []string
	if e.env == "task" {
		refs = images.Of(tasks)
	} else if spec, err := container.ParseSpec(e.env); err == nil && !spec.Host() {
		refs = []string{spec.Image}
	}
	if len(refs) == 0 {
		return
	}
	var mu sync.Mutex
	go e.eng.Prefetch(ctx, refs, e.pullParallel, func(ref string, err error) {
		if err != nil {
			mu.Lock()
			fmt.Fprintf(stderr, "truss: %v\n", err)
			mu.Unlock()
		}
	})
}

func (b *benchFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&b.tasks, "tasks", "", "the task file: JSONL in SWE-bench's format (required)")
	fs.StringVar(&b.repos, "repos", "", "where owner/name repositories are (DIR/owner/name or DIR/owner__name)")
	fs.StringVar(&b.out, "out", "", "the output directory: results.jsonl, predictions, ledgers (required)")
	fs.IntVar(&b.parallel, "parallel", 1, "runs at once")
	fs.StringVar(&b.only, "only", "", "only these instance ids (comma-separated)")
	fs.StringVar(&b.rules, "rules", "", "the SWE-bench harness release whose rules grade SWE-bench records (those without test_cmd): "+rulesList()+" (default: "+string(grade.LiveRules)+" when grading live; with grade --logs, each log's own, from its markers)")
	b.sandboxFlags.register(fs)
	b.env.registerImages(fs)
}

// sharedWarning is what --grade-cache shared gives up, said before any
// grading starts.
const sharedWarning = "truss bench: warning: --grade-cache shared gives every grading, and every graded patch, one writable build cache: " +
	"Go trusts a cached build whose output has the recorded size, so a patch can rewrite an honest build's entry and a later grading then builds its code (a failing test passes). " +
	"Use it only for patches you trust; own, the default, keeps what each grading writes its own"

// warnShared says sharedWarning when the gradings share a cache.
func warnShared(caches string, stderr io.Writer) {
	if grade.CacheMode(caches) == grade.CacheShared {
		fmt.Fprintln(stderr, sharedWarning)
	}
}

// warmGo warms Truss's own Go build cache before the first grading when
// the gradings would otherwise each compile the standard library
// (grade.Sandboxed.WarmGo); a failure leaves them cold, and says so.
func warmGo(ctx context.Context, g *grade.Grader, stderr io.Writer) {
	s, ok := g.Shells.(*grade.Sandboxed)
	if !ok || !s.WarmsGo() {
		return
	}
	fmt.Fprintln(stderr, "truss bench: no Go build cache of the user's: building the standard library into Truss's own, once, so that gradings start warm")
	if _, err := s.WarmGo(ctx); err != nil {
		fmt.Fprintf(stderr, "truss bench: %v; gradings start cold\n", err)
	}
}

// load checks the shared flags, loads the tasks and makes the
// benchmark's private directory and grader (makeRunDirs; work is run's
// --work); done removes what the runs made.
func (b *benchFlags) load(work string, stderr io.Writer) (tasks []bench.Task, g *grade.Grader, done func(), err error) {
	if b.tasks == "" || b.out == "" {
		return nil, nil, nil, cli.Usagef("--tasks and --out are required")
	}
	if b.parallel < 1 {
		return nil, nil, nil, cli.Usagef("--parallel must be at least 1")
	}
	if err := b.sandboxFlags.check(); err != nil {
		return nil, nil, nil, err
	}
	var rules swebench.Rules
	if b.rules != "" {
		if rules, err = swebench.ParseRules(b.rules); err != nil {
			return nil, nil, nil, cli.UsageError{Msg: err.Error()}
		}
	}
	tasks, err = bench.LoadTasks(b.tasks, b.repos)
	if err != nil {
		return nil, nil, nil, err
	}
	if tasks, err = b.onlyTasks(tasks); err != nil {
		return nil, nil, nil, err
	}
	if b.env.template != "" {
		t, err := images.Parse(b.env.template)
		if err != nil {
			return nil, nil, nil, cli.UsageError{Msg: err.Error()}
		}
		if err := images.Fill(tasks, t); err != nil {
			return nil, nil, nil, err
		}
	}
	if b.env.env == "task" {
		var none []string
		for _, t := range tasks {
			if t.Image == "" {
				none = append(none, t.InstanceID)
			}
		}
		if len(none) > 0 {
			return nil, nil, nil, cli.Usagef("--env task runs each task in its own image, and %d of %d tasks have none (their \"image\" field; --image-template names them): %s",
				len(none), len(tasks), strings.Join(none[:min(len(none), 5)], ", ")+map[bool]string{true: ", …"}[len(none) > 5])
		}
	}
	abs, err := bench.ResolvePath(b.tasks)
	if err != nil {
		return nil, nil, nil, err
	}
	hidden := []string{abs}
	var repos []string
	for _, t := range tasks {
		hidden = append(hidden, t.RepoDir)
		if !slices.Contains(repos, t.RepoDir) {
			repos = append(repos, t.RepoDir)
		}
	}
	// The output directory holds every run's prediction and verdict: a
	// graded patch that read it could copy another's passing patch in.
	out, err := bench.ResolvePath(b.out)
	if err != nil {
		return nil, nil, nil, err
	}
	// Later benchmarks hide them all from their runs (bench.Registry).
	if err := registerKnown(bench.KnownOut, out); err != nil {
		return nil, nil, nil, err
	}
	if err := registerKnown(bench.KnownTasks, abs); err != nil {
		return nil, nil, nil, err
	}
	if err := registerKnown(bench.KnownRepo, repos...); err != nil {
		return nil, nil, nil, err
	}
	d, err := b.makeRunDirs(work, hidden, []string{out}, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	b.scratch = d.dir
	b.dirs = d
	d.grader.Rules = rules
	return tasks, d.grader, d.close, nil
}

// tempDir is the temporary directory, resolved (bench.ResolvePath).
func tempDir() string {
	t, err := bench.ResolvePath(os.TempDir())
	if err != nil {
		return ""
	}
	return t
}

// registerKnown records paths of kind in the user's registry of
// benchmark paths, which every benchmark hides from its runs.
func registerKnown(kind string, paths ...string) error {
	reg, err := bench.DefaultRegistry()
	if err != nil {
		return err
	}
	return reg.Add(kind, paths...)
}

// onlyTasks keeps the tasks --only names (all of them without it); naming
// none of the task file's is a usage error.
func (b *benchFlags) onlyTasks(tasks []bench.Task) ([]bench.Task, error) {
	if b.only == "" {
		return tasks, nil
	}
	want := splitList(b.only)
	tasks = slices.DeleteFunc(tasks, func(t bench.Task) bool { return !slices.Contains(want, t.InstanceID) })
	if len(tasks) == 0 {
		return nil, cli.Usagef("--only names no instance of %s", b.tasks)
	}
	return tasks, nil
}

// progressPrinter prints progress lines: rewritten in place on a
// terminal, one per run otherwise.
type progressPrinter struct {
	w    io.Writer
	tty  bool
	mu   sync.Mutex
	last bool
}

func (p *progressPrinter) print(pr runner.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", pr.Line())
		p.last = true
		return
	}
	fmt.Fprintln(p.w, pr.Line())
}

func (p *progressPrinter) done() {
	if p.last {
		fmt.Fprintln(p.w)
	}
}

func printSummary(w io.Writer, sum *runner.Summary, out string) {
	arms := make([]string, 0, len(sum.Resolved))
	for a, n := range sum.Resolved {
		arms = append(arms, fmt.Sprintf("%s %d", a, n))
	}
	slices.Sort(arms)
	fmt.Fprintf(w, "%d of %d finished (%d now, %d before); resolved: %s; errors: %d; cost $%.4f\nresults: %s\n",
		sum.Skipped+sum.Ran, sum.Total, sum.Ran, sum.Skipped, cmp.Or(strings.Join(arms, ", "), "none"), sum.Errors, sum.CostUSD,
		filepath.Join(out, bench.ResultsName))
}

// benchExit is the exit status: 0 when every run finished, 1 when some
// run has an error or did not run.
func benchExit(sum *runner.Summary, err error) error {
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return cli.ExitError{Code: 1}
		}
		return err
	}
	if sum.Errors > 0 || sum.NotRun > 0 {
		return cli.ExitError{Code: 1}
	}
	return nil
}

func cmdBenchGrade(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench grade", stderr)
	var b benchFlags
	b.register(fs)
	var predictions, logs, arm string
	fs.StringVar(&predictions, "predictions", "", "the predictions: JSONL with instance_id, model_name_or_path, model_patch (this or --logs is required)")
	fs.StringVar(&logs, "logs", "", "grade the official harness's logs instead of running anything: DIR/INSTANCE_ID/test_output.txt (with report.json, if there, compared)")
	fs.StringVar(&arm, "arm", "", "with --logs: the results' arm, the graded submission's name (default: the logs directory's name)")
	var qf queueFlags
	qf.register(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("truss bench grade takes no arguments, got %q", fs.Args())
	}
	if logs != "" {
		if predictions != "" {
			return cli.Usagef("--logs and --predictions cannot go together: grade the logs, or run the predictions")
		}
		return gradeLogs(&b, logs, arm, b.rules, stdout, stderr)
	}
	if arm != "" {
		return cli.Usagef("--arm goes with --logs")
	}
	if err := qf.check(); err != nil {
		return err
	}
	if predictions == "" {
		return cli.Usagef("--predictions is required (or --logs)")
	}
	// The predictions hold the patches graded: every benchmark hides them
	// from its runs.
	if err := registerKnown(bench.KnownInput, predictions); err != nil {
		return err
	}
	tasks, g, done, err := b.load("", stderr)
	if err != nil {
		return err
	}
	defer done()
	warnShared(b.caches, stderr)
	hideFromRuns(g, nil, qf.secrets())
	// Every prediction's patch is in the file: no graded patch reads
	// another's.
	if s, ok := g.Shells.(*grade.Sandboxed); ok {
		if abs, err := filepath.Abs(predictions); err == nil {
			s.Hidden = append(s.Hidden, abs)
		}
	}
	pf, err := os.Open(predictions)
	if err != nil {
		return err
	}
	preds, err := bench.ParsePredictions(pf, predictions)
	pf.Close()
	if err != nil {
		return err
	}
	if b.only != "" {
		// --only grades that subset: the other predictions are left
		// alone, not graded as errors.
		preds = slices.DeleteFunc(preds, func(p bench.Prediction) bool {
			return !slices.ContainsFunc(tasks, func(t bench.Task) bool { return t.InstanceID == p.InstanceID })
		})
		if len(preds) == 0 {
			return cli.Usagef("--only names no instance of %s", predictions)
		}
	}
	signer, vkey, err := ledger.InstallationKey()
	if err != nil {
		return err
	}
	var qr runner.Runner
	qr.Parallel = b.parallel
	qf.apply(&qr, stderr)
	ctx, stop := signalContext(stderr, b.dirs)
	defer stop()
	if !qf.remoteOnly() {
		b.env.prefetch(ctx, tasks, stderr)
		warmGo(ctx, g, stderr)
	}
	pp := &progressPrinter{w: stderr, tty: cli.IsTerminal(stderr)}
	gr := &runner.Grading{Tasks: tasks, Predictions: preds, Out: b.out, TempDir: b.scratch, Grader: g, Signer: signer, VKey: vkey, Parallel: qr.Parallel,
		Progress: pp.print, Net: qr.Net, RemoteOnly: qr.RemoteOnly, Bundles: qr.Bundles, TrustKeys: qr.TrustKeys, Logf: qr.Logf}
	sum, err := gr.Run(ctx)
	pp.done()
	if sum != nil {
		printSummary(stdout, sum, b.out)
	}
	return benchExit(sum, err)
}

func rulesList() string {
	var names []string
	for _, r := range swebench.AllRules() {
		names = append(names, string(r))
	}
	return strings.Join(names, ", ")
}

// gradeLogs is `truss bench grade --logs`: the official rules' verdicts of
// existing harness logs, nothing run.
func gradeLogs(b *benchFlags, logs, arm, rulesName string, stdout, stderr io.Writer) error {
	if b.tasks == "" || b.out == "" {
		return cli.Usagef("--tasks and --out are required")
	}
	var rules swebench.Rules
	if rulesName != "" {
		r, err := swebench.ParseRules(rulesName)
		if err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		rules = r
	}
	if fi, err := os.Stat(logs); err != nil || !fi.IsDir() {
		return cli.Usagef("--logs %s is not a directory (want DIR/INSTANCE_ID/test_output.txt, the official harness's layout)", logs)
	}
	if arm == "" {
		abs, _ := filepath.Abs(logs)
		arm = filepath.Base(abs)
	}
	// The logs, the task file and the verdicts written: every benchmark
	// hides them from its runs.
	if err := registerKnown(bench.KnownInput, logs); err != nil {
		return err
	}
	if err := registerKnown(bench.KnownTasks, b.tasks); err != nil {
		return err
	}
	if err := registerKnown(bench.KnownOut, b.out); err != nil {
		return err
	}
	f, err := os.Open(b.tasks)
	if err != nil {
		return err
	}
	// The repositories are not needed: nothing is checked out.
	tasks, err := bench.ParseTasks(f, b.tasks)
	f.Close()
	if err != nil {
		return err
	}
	if tasks, err = b.onlyTasks(tasks); err != nil {
		return err
	}
	signer, _, err := ledger.InstallationKey()
	if err != nil {
		return err
	}
	ctx, stop := cli.SignalContext(stderr)
	defer stop()
	pp := &progressPrinter{w: stderr, tty: cli.IsTerminal(stderr)}
	g := &runner.LogGrading{Tasks: tasks, Logs: logs, Out: b.out, Arm: arm, Rules: rules, Signer: signer, Progress: pp.print}
	sum, err := g.Run(ctx)
	pp.done()
	if sum == nil {
		return err
	}
	{
		printSummary(stdout, &sum.Summary, b.out)
		if len(sum.NoLog) > 0 {
			fmt.Fprintf(stdout, "%d instances of the task file have no log in %s: %s\n", len(sum.NoLog), logs, firstFew(sum.NoLog))
		}
		if sum.Official > 0 {
			fmt.Fprintf(stdout, "%d of %d verdicts equal the log's own report.json", sum.Agree, sum.Official)
			if len(sum.Disagree) > 0 {
				fmt.Fprintf(stdout, "; not: %s", firstFew(sum.Disagree))
			}
			fmt.Fprintln(stdout)
		}
		if sum.Total == 0 {
			return fmt.Errorf("no instance of %s has a log in %s (want DIR/INSTANCE_ID/%s)", b.tasks, logs, runner.LogTestOutput)
		}
		if len(sum.Disagree) > 0 {
			return cli.ExitError{Code: 1}
		}
	}
	return benchExit(&sum.Summary, err)
}

// firstFew lists up to five names, with "…" when there are more.
func firstFew(names []string) string {
	s := strings.Join(names[:min(len(names), 5)], ", ")
	if len(names) > 5 {
		s += fmt.Sprintf(", … (%d in all)", len(names))
	}
	return s
}

// The surfaces an arm may name; its provider is one of the harness's
// table (harness.IsProvider).
var benchSurfaces = []string{"auto", "generic", "anthropic", "openai", "codex"}

func cmdBenchRun(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench run", stderr)
	var b benchFlags
	b.register(fs)
	var (
		arms              cli.Multi
		models, surfaces  string
		repeats, maxTurns int
		maxTokens         int64
		maxCost, budget   float64
		wall              time.Duration
		simScripts, work  string
		hints             bool
		caps              cli.Multi
	)
	fs.Var(&arms, "arm", "an arm: NAME=PROVIDER:MODEL[:SURFACE] (repeatable)")
	fs.StringVar(&models, "models", "", "models as PROVIDER:MODEL, comma-separated; crossed with --surfaces")
	fs.StringVar(&surfaces, "surfaces", "auto", "surfaces crossed with --models, comma-separated (generic, auto, anthropic, openai, codex)")
	fs.IntVar(&repeats, "repeats", 1, "runs of each task per arm")
	fs.IntVar(&maxTurns, "max-turns", 50, "turn budget of a run")
	fs.Int64Var(&maxTokens, "max-tokens", 0, "token budget of a run (0: none)")
	fs.Float64Var(&maxCost, "max-cost", 0, "cost budget of a run in USD (0: none)")
	fs.DurationVar(&wall, "wall-time", 30*time.Minute, "wall-time budget of a run")
	fs.Float64Var(&budget, "budget", 0, "cost budget of the whole benchmark in USD: no new run starts once it is reached (0: none)")
	fs.StringVar(&simScripts, "sim-scripts", "", "scripts of the simulated model: DIR/INSTANCE_ID.json or DIR/INSTANCE_ID.SURFACE.json")
	fs.StringVar(&work, "work", "", "where the runs' workspaces and grading checkouts are made, a directory of your own (default: the temporary directory; a tmpfs is fastest)")
	fs.BoolVar(&hints, "hints", false, "show the task's hints_text with its problem statement")
	fs.Var(&caps, "provider-cap", "PROVIDER=N: at most N runs of that provider at once (repeatable; default --parallel)")
	var qf queueFlags
	qf.register(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("truss bench run takes no arguments, got %q", fs.Args())
	}
	if err := qf.check(); err != nil {
		return err
	}
	if repeats < 1 {
		return cli.Usagef("--repeats must be at least 1")
	}
	var as []bench.Arm
	for _, a := range arms {
		arm, err := bench.ParseArm(a)
		if err != nil {
			return cli.UsageError{Msg: "--arm: " + err.Error()}
		}
		as = append(as, arm)
	}
	if models != "" {
		cross, err := bench.CrossArms(splitList(models), splitList(surfaces))
		if err != nil {
			return cli.UsageError{Msg: "--models: " + err.Error()}
		}
		as = append(as, cross...)
	}
	if len(as) == 0 {
		return cli.Usagef("give --arm NAME=PROVIDER:MODEL[:SURFACE], or --models and --surfaces")
	}
	seen := map[string]bool{}
	for _, a := range as {
		if _, err := harness.LookupProvider(a.Provider); err != nil {
			return cli.Usagef("arm %s: %v", a.Name, err)
		}
		if a.Surface != "" && !slices.Contains(benchSurfaces, a.Surface) {
			return cli.Usagef("arm %s: unknown surface %q (%s)", a.Name, a.Surface, strings.Join(benchSurfaces, ", "))
		}
		if seen[a.Name] {
			return cli.Usagef("two arms named %s", a.Name)
		}
		seen[a.Name] = true
	}
	capMap := map[string]int{}
	for _, c := range caps {
		p, n, ok := strings.Cut(c, "=")
		v, err := strconv.Atoi(n)
		if !ok || err != nil || v < 1 || !harness.IsProvider(p) {
			return cli.Usagef("--provider-cap %q: want PROVIDER=N with N at least 1", c)
		}
		capMap[p] = v
	}
	if simScripts != "" {
		if fi, err := os.Stat(simScripts); err != nil || !fi.IsDir() {
			return cli.Usagef("--sim-scripts %s is not a directory", simScripts)
		}
		// The scripts hold the simulated model's moves (a gold patch
		// among them): every benchmark hides them from its runs.
		if err := registerKnown(bench.KnownInput, simScripts); err != nil {
			return err
		}
	}
	tasks, g, done, err := b.load(work, stderr)
	if err != nil {
		return err
	}
	defer done()
	warnShared(b.caches, stderr)
	signer, vkey, err := ledger.InstallationKey()
	if err != nil {
		return err
	}
	budgets := runner.Budgets{MaxTurns: maxTurns, MaxTokens: maxTokens, MaxCostUSD: maxCost, WallTime: wall}
	fb, _ := sandbox.ParseFallback(b.fallback) // checked by load
	agent := benchAgent(fb, stderr)
	b.env.agentImages(agent)
	hideFromRuns(g, agent, qf.secrets())
	agent.Known = b.dirs.known
	ctx, stop := signalContext(stderr, b.dirs)
	defer stop()
	if !qf.remoteOnly() {
		b.env.prefetch(ctx, tasks, stderr)
		warmGo(ctx, g, stderr)
	}
	pp := &progressPrinter{w: stderr, tty: cli.IsTerminal(stderr)}
	r := &runner.Runner{Tasks: tasks, TaskFile: b.tasks, Arms: as, Repeats: repeats, Out: b.out, WorkDir: b.dirs.work, TempDir: b.scratch,
		Agent: agent, Grader: g, Checkouts: g.Checkouts, Signer: signer, VKey: vkey, Budgets: budgets, CostBudget: budget,
		Parallel: b.parallel, ProviderCap: capMap, ShowHints: hints, Progress: pp.print}
	if simScripts != "" {
		r.Scripts = &runner.Scripts{Dir: simScripts}
	}
	qf.apply(r, stderr)
	sum, err := r.Run(ctx)
	pp.done()
	if sum != nil {
		printSummary(stdout, sum, b.out)
		if sum.BudgetReached {
			fmt.Fprintf(stderr, "truss: the benchmark's cost budget ($%.2f) is reached: %d runs not started\n", budget, sum.NotRun)
		}
	}
	return benchExit(sum, err)
}

// benchAgent is the agent `truss bench run` runs: each run a session of
// the harness on the run's workspace, recorded into the run's ledger.
func benchAgent(fallback sandbox.Fallback, stderr io.Writer) *harnessagent.Agent {
	var mu sync.Mutex
	return &harnessagent.Agent{Version: cli.Version, Fallback: fallback, OnWarning: func(spec *runner.RunSpec, msg string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "truss: %s %s r%d: %s\n", spec.InstanceID, spec.Arm.Name, spec.Repeat, msg)
	}}
}

const importUsage = `usage: truss bench import humanevalfix FILE --out DIR [--all] [--only Go/0,Go/1]
       truss bench import multi-swe-bench FILE --out DIR [--only ID,...] [--lang L] [--image-prefix P]`

func cmdBenchImport(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "multi-swe-bench" {
		return cmdImportMultiSWE(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "humanevalfix" {
		return cli.Usagef("%s", importUsage)
	}
	fs := cli.NewFlagSet("bench import humanevalfix", stderr)
	var out, only string
	var all bool
	fs.StringVar(&out, "out", "", "the directory to write: tasks.jsonl and repos/ (required)")
	fs.BoolVar(&all, "all", false, "import the problems without a usable gold fix too")
	fs.StringVar(&only, "only", "", "only these task ids (comma-separated, e.g. Go/0,Go/1)")
	// FILE may come before or after the flags.
	f, file, err := openImport(fs, args[1:], &out)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := humanevalfix.Options{Out: out, IncludeUnusable: all}
	if only != "" {
		opts.Only = splitList(only)
	}
	sum, err := humanevalfix.Import(context.Background(), f, file, opts)
	if err != nil {
		return err
	}
	if err := registerImport(out); err != nil {
		return err
	}
	printImported(stdout, sum.Tasks, sum.TaskFile, "without a usable gold fix", sum.Skipped)
	return nil
}

func cmdImportMultiSWE(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench import multi-swe-bench", stderr)
	var out, only, lang, prefix string
	fs.StringVar(&out, "out", "", "the directory to write: tasks.jsonl (required)")
	fs.StringVar(&only, "only", "", "only these instances (comma-separated: org__repo-N or org/repo:pr-N)")
	fs.StringVar(&lang, "lang", "", "the language of records without lang (default: the file's directory, e.g. go)")
	fs.StringVar(&prefix, "image-prefix", "", "replaces mswebench in the instance images' names")
	f, file, err := openImport(fs, args, &out)
	if err != nil {
		return err
	}
	defer f.Close()
	opts := multiswe.Options{Out: out, Language: lang, ImagePrefix: prefix}
	if only != "" {
		opts.Only = splitList(only)
	}
	sum, err := multiswe.Import(context.Background(), f, file, opts)
	if err != nil {
		return err
	}
	if err := registerImport(out); err != nil {
		return err
	}
	printImported(stdout, sum.Tasks, sum.TaskFile, "with no test to turn to passing", sum.Skipped)
	return nil
}

// registerImport records an imported dataset's directory in the registry
// of benchmark paths: it holds the hidden tests and gold patches, which
// every benchmark hides from its runs.
func registerImport(out string) error {
	if err := registerKnown(bench.KnownDataset, out); err != nil {
		return fmt.Errorf("the dataset is written to %s, but recording it among the paths benchmarks hide from their runs failed: %w", out, err)
	}
	return nil
}

// openImport parses an import's flags and its FILE argument (before or
// after the flags), checks that --out (*out) is given, and opens FILE.
func openImport(fs *flag.FlagSet, args []string, out *string) (*os.File, string, error) {
	file, ok, err := cli.ParseArg(fs, args)
	if err != nil {
		return nil, "", err
	}
	if !ok || file == "" {
		return nil, "", cli.Usagef("%s", importUsage)
	}
	if *out == "" {
		return nil, "", cli.Usagef("--out is required")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, "", err
	}
	// The records hold the gold patches and hidden tests: every benchmark
	// hides the file from its runs.
	if err := registerKnown(bench.KnownInput, file); err != nil {
		f.Close()
		return nil, "", fmt.Errorf("recording %s among the paths benchmarks hide from their runs: %w", file, err)
	}
	return f, file, nil
}

// printImported says what an import wrote, and which records it left out
// and why.
func printImported(w io.Writer, tasks int, taskFile, why string, skipped []string) {
	fmt.Fprintf(w, "%d instances in %s", tasks, taskFile)
	if len(skipped) > 0 {
		fmt.Fprintf(w, " (%d %s left out: %s)", len(skipped), why, strings.Join(skipped, ", "))
	}
	fmt.Fprintln(w)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// gradingDir makes the directory of a benchmark's grading checkouts in
// work (--work, else the benchmark's private directory, else the
// temporary directory): one of their own, which the runner hides from the
// runs' agents (grade.Grader.Private).
func gradingDir(work string) (string, error) {
	if work != "" {
		if err := makeWorkDir(work); err != nil {
			return "", err
		}
	}
	return os.MkdirTemp(work, "truss-bench-grading-")
}

// makeWorkDir makes --work's directory, or checks the one there: a
// directory of this user's that no one else may write, so that another
// user of a shared directory (/dev/shm, /tmp) cannot have made it first,
// or made it a link to theirs, and read or change the runs' workspaces.
func makeWorkDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return cli.Usagef("--work %s is not a directory", dir)
	case ok && int(st.Uid) != os.Getuid():
		return cli.Usagef("--work %s belongs to another user (uid %d): choose a directory of your own", dir, st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return cli.Usagef("--work %s may be written by other users (mode %v): choose a directory only you can write", dir, fi.Mode().Perm())
	}
	return nil
}
