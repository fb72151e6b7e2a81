package benchcli

import (
	"bufio"
	"context"
	"encoding/json"
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
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/harnessagent"
	"github.com/trussdev/truss/internal/bench/runner"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/queue"
	"github.com/trussdev/truss/internal/sandbox"
)

// natsFlags are the flags that reach a NATS deployment.
type natsFlags struct {
	url, creds, token string
}

func (n *natsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&n.url, "nats", os.Getenv("NATS_URL"), "a NATS deployment with JetStream (default $NATS_URL; none: an embedded server)")
	fs.StringVar(&n.creds, "nats-creds", "", "a NATS credentials file (.creds) or NKey seed")
	fs.StringVar(&n.token, "nats-token", os.Getenv("NATS_TOKEN"), "a NATS token (default $NATS_TOKEN); with --nats-listen, the token the embedded server requires, which admits a worker's permissions only")
}

func (n *natsFlags) options(name string) queue.ConnectOptions {
	return queue.ConnectOptions{Name: name, CredsFile: n.creds, Token: n.token}
}

// secrets are the files of the queue's credentials this process reads
// (--nats-creds: a .creds file or an NKey seed), absolute, and the file
// a link names: no graded command and no agent may read them, or a model
// would hold the queue's credentials.
func (n *natsFlags) secrets() []string {
	if n.creds == "" {
		return nil
	}
	abs, err := filepath.Abs(n.creds)
	if err != nil {
		return nil
	}
	out := []string{abs}
	if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
		out = append(out, real)
	}
	return out
}

// hideFromRuns hides paths from every run's agent and grading: the
// grader's sandbox (when it is the host's) and the agent's.
func hideFromRuns(g *grade.Grader, ag *harnessagent.Agent, paths []string) {
	if len(paths) == 0 {
		return
	}
	if g != nil {
		if s, ok := g.Shells.(*grade.Sandboxed); ok {
			s.Hidden = append(s.Hidden, paths...)
		}
	}
	if ag != nil {
		ag.Hidden = append(ag.Hidden, paths...)
	}
}

// queueFlags are bench run's flags of the queue.
type queueFlags struct {
	natsFlags
	listen       string
	localWorkers int
	ackWait      time.Duration
	replicas     int
	mixed        bool
	workerNKeys  cli.Multi
	trust        cli.Multi
	keys         []string // the trusted keys, read by check
}

// remoteOnly reports whether this process leaves every run to remote
// workers (--local-workers 0): they pull the images they need.
func (q *queueFlags) remoteOnly() bool { return q.localWorkers == 0 }

func (q *queueFlags) register(fs *flag.FlagSet) {
	q.natsFlags.register(fs)
	fs.StringVar(&q.listen, "nats-listen", "", "expose the embedded server on ADDR (host:port) so that workers elsewhere join; a non-loopback address needs --nats-token")
	fs.IntVar(&q.localWorkers, "local-workers", -1, "runs this process works on at once (default --parallel; 0: remote workers only)")
	fs.DurationVar(&q.ackWait, "ack-wait", queue.DefaultAckWait, "how long a run may go without a worker's heartbeat before it is delivered again")
	fs.IntVar(&q.replicas, "replicas", 0, "copies of each of the queue's streams, consumers and buckets (default: 3 on a NATS cluster of three servers or more, else 1)")
	fs.Var(&q.workerNKeys, "nats-worker-nkey", "a public user NKey (U…) the embedded server admits with a worker's permissions only (pull jobs, publish results); repeatable")
	fs.BoolVar(&q.mixed, "allow-mixed-versions", false, "accept results of workers whose grader or queue-protocol version differs from this binary's (each result line records its worker's version); without it they are refused")
	fs.Var(&q.trust, "trust-key", "a worker's ledger verifier key (as `truss ledger key` prints it, or @FILE); repeatable")
}

// check checks the flags and reads the trusted keys; it is called
// before anything is loaded, so that a usage error comes first.
func (q *queueFlags) check() error {
	if q.url != "" && q.listen != "" {
		return cli.Usagef("--nats and --nats-listen exclude each other: --nats-listen exposes the embedded server")
	}
	if q.localWorkers < -1 {
		return cli.Usagef("--local-workers must be at least 0")
	}
	if q.replicas < 0 || q.replicas > 5 {
		return cli.Usagef("--replicas must be 1 to 5")
	}
	q.keys = nil
	for _, k := range q.trust {
		if f, ok := strings.CutPrefix(k, "@"); ok {
			b, err := os.ReadFile(f)
			if err != nil {
				return cli.Usagef("--trust-key: %v", err)
			}
			k = string(b)
		}
		k = strings.TrimSpace(k)
		if k == "" {
			return cli.Usagef("--trust-key: empty key")
		}
		q.keys = append(q.keys, k)
	}
	return nil
}

// apply sets the runner's queue settings (after check).
func (q *queueFlags) apply(r *runner.Runner, stderr io.Writer) {
	if q.localWorkers == 0 {
		r.RemoteOnly = true
	} else if q.localWorkers > 0 {
		r.Parallel = q.localWorkers
	}
	r.Net = runner.Net{URL: q.url, Connect: q.options("truss bench coordinator"), Listen: q.listen, AckWait: q.ackWait, Replicas: q.replicas}
	if q.url == "" && q.token != "" {
		r.Net.Auth = queue.Auth{Token: q.token}
	}
	if q.url == "" && len(q.workerNKeys) > 0 {
		r.Net.Auth.NKeys = q.workerNKeys
	}
	// Workers elsewhere may not share this machine's file system.
	r.Bundles = q.url != "" || q.listen != ""
	r.TrustKeys = q.keys
	r.AllowMixedVersions = q.mixed
	var mu sync.Mutex
	r.Logf = func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, format+"\n", args...)
	}
}

// cmdBenchWorker is `truss bench worker`: it runs a benchmark's runs from
// a queue until it is drained (SIGTERM, Ctrl-C) or, with
// --exit-when-idle, the queue is empty. Its runs are made as a local
// benchmark's are, in a private directory of the worker's (runDirs),
// which is removed when the worker exits, a signal's way included.
func cmdBenchWorker(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench worker", stderr)
	var (
		n              natsFlags
		name, work, id string
		parallel       int
		idle           bool
		caps           cli.Multi
		sf             sandboxFlags
	)
	n.register(fs)
	fs.StringVar(&name, "queue", "", "the benchmark's queue (default: the only one the deployment holds)")
	fs.IntVar(&parallel, "parallel", 1, "runs at once")
	fs.BoolVar(&idle, "exit-when-idle", false, "exit once the queue is empty")
	fs.StringVar(&work, "work", "", "where the runs' workspaces and grading checkouts are made, a directory of your own (default: the worker's private directory in the temporary directory; a tmpfs is fastest)")
	fs.StringVar(&id, "id", "", "the worker's id in results and statuses (default HOST-PID-RANDOM)")
	fs.Var(&caps, "provider-cap", "PROVIDER=N: at most N runs of that provider at once (repeatable)")
	sf.register(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("truss bench worker takes no arguments, got %q", fs.Args())
	}
	if n.url == "" {
		return cli.Usagef("--nats URL (or NATS_URL) is required: the deployment the coordinator's queue is on")
	}
	if err := sf.check(); err != nil {
		return err
	}
	if parallel < 1 {
		return cli.Usagef("--parallel must be at least 1")
	}
	capMap := map[string]int{}
	for _, c := range caps {
		p, v, ok := strings.Cut(c, "=")
		var k int
		if _, err := fmt.Sscan(v, &k); !ok || err != nil || k < 1 || !harness.IsProvider(p) {
			return cli.Usagef("--provider-cap %q: want PROVIDER=N with N at least 1", c)
		}
		capMap[p] = k
	}
	signer, vkey, err := ledger.InstallationKey()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Signals are caught before anything is made, so that the private
	// directory goes whenever the worker is stopped: before the worker
	// runs, a signal stops the set-up; once it runs, the first drains it
	// (the runs in hand finish, no new one starts) and the second stops
	// it at once.
	var drain atomic.Pointer[queue.Worker]
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
		case <-ctx.Done():
			return
		}
		if w := drain.Load(); w != nil {
			fmt.Fprintln(stderr, "truss: draining: finishing the runs in hand (signal again to stop at once)")
			w.Drain()
			select {
			case <-sigs:
			case <-ctx.Done():
				return
			}
		}
		cancel()
	}()
	nc, err := queue.Connect(ctx, n.url, n.options("truss bench worker"))
	if err != nil {
		return err
	}
	defer nc.Close()
	q, err := runner.JoinQueue(ctx, nc, name)
	if err != nil {
		return err
	}
	dirs, err := sf.makeRunDirs(work, nil, nil, stderr)
	if err != nil {
		return err
	}
	defer dirs.close()
	g := dirs.grader
	scratch := filepath.Join(dirs.dir, "worker")
	if err := os.Mkdir(scratch, 0o700); err != nil {
		return err
	}
	warnShared(sf.caches, stderr)
	warmGo(ctx, g, stderr)
	fb, _ := sandbox.ParseFallback(sf.fallback) // checked
	ag := benchAgent(fb, stderr)
	sf.env.agentImages(ag)
	hideFromRuns(g, ag, n.secrets())
	ag.Known = dirs.known
	ex := &runner.Exec{Queue: q, Agent: ag, Grader: g, Checkouts: g.Checkouts, Signer: signer, VKey: vkey,
		TempDir: dirs.dir, Scratch: scratch, WorkDir: dirs.work, ProviderCap: capMap}
	var mu sync.Mutex
	w, err := q.NewWorker(queue.WorkerConfig{ID: id, Parallel: parallel, ExitWhenIdle: idle, Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, f+"\n", a...)
	}}, ex.Handle)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "truss: worker %s (%s) on queue %s, %d at once\n", w.ID(), runner.ThisVersion(), q.Name(), parallel)
	drain.Store(w)
	err = w.Run(ctx)
	st := w.Stats()
	fmt.Fprintf(stdout, "worker %s: %d runs, %d handed back\n", w.ID(), st.Ran, st.Retried)
	return err
}

// cmdBenchStatus is `truss bench status DIR|--nats URL [--queue NAME]`.
func cmdBenchStatus(args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench status", stderr)
	var n natsFlags
	var name string
	var timeout time.Duration
	n.register(fs)
	fs.StringVar(&name, "queue", "", "the benchmark's queue (default: DIR's, else the only one)")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the queue before answering with what could be read")
	dir, ok, err := cli.ParseArg(fs, args)
	if err != nil {
		return err
	}
	if !ok {
		return cli.Usagef("usage: truss bench status DIR|--nats URL [--queue NAME]")
	}
	// The results file is the coordinator's record: what it holds is
	// done, whatever the status bucket (which any worker writes) says.
	var recorded map[string]bench.Result
	if dir != "" {
		qi, err := runner.ReadQueueInfo(dir)
		if err != nil {
			return fmt.Errorf("%s has no queue description (was it made by truss bench run?): %w", dir, err)
		}
		if n.url == "" {
			n.url = qi.URL
			if n.creds == "" && n.token == "" {
				n.token = qi.Token
			}
		}
		if name == "" {
			name = qi.Name
		}
		recorded, err = readRecorded(filepath.Join(dir, bench.ResultsName))
		if err != nil {
			fmt.Fprintf(stdout, "results: cannot read %s: %v\n", bench.ResultsName, err)
		} else {
			failed := 0
			for _, r := range recorded {
				if r.Error != "" {
					failed++
				}
			}
			fmt.Fprintf(stdout, "results: %d recorded in %s (%d failed)\n", len(recorded), bench.ResultsName, failed)
		}
	}
	if n.url == "" {
		return cli.Usagef("usage: truss bench status DIR|--nats URL [--queue NAME]")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	o := n.options("truss bench status")
	o.ConnectTimeout = min(3*time.Second, timeout)
	nc, err := queue.Connect(ctx, n.url, o)
	if err != nil {
		return fmt.Errorf("the queue: %w (an embedded server runs only while its truss bench run does)", err)
	}
	defer nc.Close()
	q, err := runner.JoinQueue(ctx, nc, name)
	if err != nil {
		return fmt.Errorf("the queue (within %v): %w", timeout, err)
	}
	sts, err := q.Status(ctx)
	if err != nil {
		return fmt.Errorf("the queue's status bucket (within %v): %w", timeout, err)
	}
	count := map[queue.State]int{}
	var running []queue.JobStatus
	unrecorded := 0
	for i := range sts {
		s := &sts[i]
		if recorded != nil {
			if r, ok := recorded[s.ID]; ok {
				s.State = queue.Done
				if r.Error != "" {
					s.State, s.Error = queue.Failed, r.Error
				}
			} else if s.State == queue.Done || s.State == queue.Failed {
				// Claimed finished by the bucket, not by the record.
				unrecorded++
				s.State = queue.Queued
			}
		}
		count[s.State]++
		if s.State == queue.Running {
			running = append(running, *s)
		}
	}
	fmt.Fprintf(stdout, "queue %s: %d queued, %d running, %d done, %d failed\n", q.Name(), count[queue.Queued], count[queue.Running], count[queue.Done], count[queue.Failed])
	if unrecorded > 0 {
		fmt.Fprintf(stdout, "  %d status entries say done or failed with no line in %s: counted as queued (entries are advisory)\n", unrecorded, bench.ResultsName)
	}
	slices.SortFunc(running, func(a, b queue.JobStatus) int { return a.Started.Compare(b.Started) })
	for _, s := range running {
		fmt.Fprintf(stdout, "  running %s on %s for %s (delivery %d)%s\n", s.ID, s.Worker, time.Since(s.Started).Round(time.Second), s.Deliveries, noteOf(s.Note))
	}
	for _, s := range sts {
		if s.State == queue.Failed {
			fmt.Fprintf(stdout, "  failed %s: %s\n", s.ID, s.Error)
		}
	}
	return nil
}

// readRecorded reads a results file's lines by job id; a line that does
// not parse (a crash mid-write) is skipped.
func readRecorded(path string) (map[string]bench.Result, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]bench.Result{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]bench.Result{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var r bench.Result
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.InstanceID != "" {
			out[runner.JobID(r.Key())] = r
		}
	}
	return out, sc.Err()
}

func noteOf(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}
