package runner

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/swebench"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/queue"
	"github.com/trussdev/truss/internal/sim"
)

// JobPayload is one run as the queue carries it to a worker: everything
// the worker needs, so that a worker on another machine runs it exactly as
// a local one does.
type JobPayload struct {
	Task bench.Task `json:"task"`
	// RepoDir is the task's repository on the coordinator's machine, used
	// when the worker sees it (a shared path); RepoBundle, when set, is
	// the artifact holding a git bundle of it, for workers that do not,
	// and RepoBundleSHA256 the bundle's SHA-256 (hex): the job's digest,
	// which the verdict names, covers it, and a worker checks the bundle
	// against it before cloning. Task.BaseCommit is a full object id (the
	// coordinator resolves a revision name before publishing: ResolveBase).
	RepoDir          string    `json:"repo_dir"`
	RepoBundle       string    `json:"repo_bundle,omitempty"`
	RepoBundleSHA256 string    `json:"repo_bundle_sha256,omitempty"`
	Arm              bench.Arm `json:"arm"`
	Repeat           int       `json:"repeat"`
	Budgets          Budgets   `json:"budgets"`
	ShowHints        bool      `json:"show_hints,omitempty"`
	// Script is the simulated model's script (sim arms): the coordinator
	// reads --sim-scripts.
	Script *sim.Script `json:"script,omitempty"`
	// Grade makes the job the grading of Patch (bench grade): no agent
	// runs.
	Grade bool   `json:"grade,omitempty"`
	Patch string `json:"patch,omitempty"`
	// Hidden are the coordinator's hidden paths (the task file, the
	// output directory, the repositories, the scripts), hidden on the
	// worker too where they exist.
	Hidden []string `json:"hidden,omitempty"`
	// Covered are the coordinator's directories of its runs (its private
	// directory, its workspaces'), covered on the worker too where they
	// exist: a worker on the coordinator's machine sees them empty.
	Covered []string `json:"covered,omitempty"`
	// GradeHidden and GradeCovered are what the coordinator's gradings
	// hide and cover (its task file and repositories; its output, private
	// and workspaces' directories), hidden and covered in the worker's
	// gradings too where they exist: a grading on a worker sees what a
	// local grading does.
	GradeHidden  []string `json:"grade_hidden,omitempty"`
	GradeCovered []string `json:"grade_covered,omitempty"`
	// Rules are the SWE-bench harness's rules the coordinator grades
	// SWE-bench records under ("": the grader's default).
	Rules string `json:"rules,omitempty"`
}

// ResultPayload is a worker's result of one run: the result line, the
// model's patch and the run's signed ledger, as a tar archive inline or,
// when large, uploaded (queue.PutUpload, under LedgerUploadName of the
// run and the ledger's root), with the archive's size and SHA-256 here.
type ResultPayload struct {
	Result bench.Result `json:"result"`
	Patch  string       `json:"patch"`
	Ledger []byte       `json:"ledger,omitempty"`
	// LedgerSize and LedgerSHA256 (hex) state the uploaded archive: the
	// coordinator reads exactly that many bytes of the upload with that
	// digest, at most Verifier.MaxLedger, and refuses anything else.
	LedgerSize   int64  `json:"ledger_size,omitempty"`
	LedgerSHA256 string `json:"ledger_sha256,omitempty"`
}

// inlineLedger is the largest ledger archive sent inside a result message.
const inlineLedger = 512 << 10

// DefaultMaxLedger is Verifier.MaxLedger's default: the largest uploaded
// ledger archive the coordinator reads.
const DefaultMaxLedger = 1 << 30

// LedgerUploadName is the upload name of a run's ledger: derived from
// the run's id and the ledger's root, so a result can name no other
// upload, and no client but the ledger's maker knows it before the
// coordinator reads it (the root is the hash of entries it alone wrote).
func LedgerUploadName(runID, root string) string {
	sum := sha256.Sum256([]byte(runID))
	return "ledger-" + hex.EncodeToString(sum[:16]) + "-" + root
}

// validRoot reports whether root is a ledger root as a result states it:
// hex, 64 digits.
func validRoot(root string) bool {
	if len(root) != 64 {
		return false
	}
	_, err := hex.DecodeString(root)
	return err == nil
}

// JobID is the queue's id of a run.
func JobID(k bench.RunKey) string { return fmt.Sprintf("%s/%s/r%d", k.InstanceID, k.Arm, k.Repeat) }

// RunIdentity is what a run's signed verdict names besides its instance,
// arm and repeat, so that the verdict proves one run of one benchmark and
// nothing else: the benchmark (its queue's name), the run (its job id)
// and the digest of the job as the coordinator published it (the task,
// the arm's settings, the budgets, the prediction graded).
type RunIdentity struct {
	Bench, Run, JobDigest string
	// Version is the worker's.
	Version Version
}

// JobDigest is the digest a verdict names of a job's payload: SHA-256,
// hex.
func JobDigest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// Exec runs the jobs of a queue on a worker: each a run of its own, in a
// fresh workspace, graded, its verdict signed into its ledger.
type Exec struct {
	Queue     *queue.Queue
	Agent     Agent
	Grader    *grade.Grader
	Checkouts *bench.Templates
	Signer    note.Signer
	VKey      string
	// TempDir is the worker's private directory (a local benchmark's:
	// Runner.TempDir), mode 0700: each run's own directory, and without
	// WorkDir its workspace, are made in it, and every run's agent sees
	// it covered, binding back only what is the run's own, exactly as a
	// local run's (Runner.TempDir). "" leaves them in the system's
	// temporary directory.
	TempDir string
	// Scratch is the worker's directory (in TempDir, when that is set):
	// the runs' ledgers before they are sent, the repositories fetched
	// as bundles. It is hidden from the agents' commands.
	Scratch string
	// WorkDir is where workspaces are made ("" for TempDir/runs, else
	// the temporary directory).
	WorkDir string
	// Covered are further directories every run's agent sees covered
	// (Runner.Covered) besides the coordinator's: on this machine, the
	// known benchmark paths that hold the worker's own directories.
	Covered []string
	// ProviderCap bounds the runs of a provider in the agent loop at
	// once on this worker (absent: no bound beyond the worker's slots).
	ProviderCap map[string]int
	// Version is what the verdicts say of this worker (zero:
	// ThisVersion()).
	Version Version

	mu    sync.Mutex
	gates map[string]*Gate
	repos map[string]string // bundle artifact@SHA-256 → local clone
	// inline is the largest ledger archive sent inside a result (0:
	// inlineLedger); the tests lower it.
	inline int
}

func (e *Exec) gate(provider string) *Gate {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gates == nil {
		e.gates = map[string]*Gate{}
	}
	g := e.gates[provider]
	if g == nil {
		n := e.ProviderCap[provider]
		if n <= 0 {
			n = 1 << 20
		}
		g = NewGate(n)
		e.gates[provider] = g
	}
	return g
}

// Handle is the queue.Handler of a benchmark's runs. Every result it
// returns carries a ledger signed with the worker's key whose verdict
// names the run (RunIdentity): a run's error too, for a coordinator
// believes no error it cannot verify. Only a transient failure (Retry)
// returns without one.
func (e *Exec) Handle(ctx context.Context, qj queue.Job, progress func(string)) ([]byte, error) {
	id := RunIdentity{Bench: e.Queue.Name(), Run: qj.ID, JobDigest: JobDigest(qj.Payload), Version: e.Version}
	if id.Version == (Version{}) {
		id.Version = ThisVersion()
	}
	var p JobPayload
	jerr := json.Unmarshal(qj.Payload, &p)
	out, err := e.handle(ctx, qj, id, &p, jerr, progress)
	if err == nil || queue.IsRetry(err) {
		return out, err
	}
	return e.signedError(ctx, qj, id, &p, err)
}

// signedError is the result of a run that ended in err before it had a
// ledger: a ledger of its own holding the verdict with the error, signed.
func (e *Exec) signedError(ctx context.Context, qj queue.Job, id RunIdentity, p *JobPayload, runErr error) ([]byte, error) {
	dir, err := os.MkdirTemp(e.Scratch, "error-")
	if err != nil {
		return nil, queue.Retry(fmt.Errorf("%w (and no directory to sign it in: %v)", runErr, err))
	}
	defer os.RemoveAll(dir)
	res := bench.Result{InstanceID: p.Task.InstanceID, Arm: p.Arm.Name, Repeat: p.Repeat, Error: runErr.Error(),
		Tests: map[string]string{}, ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}}
	if p.Grade {
		res.Repeat = 1
	}
	ldir := filepath.Join(dir, "ledger")
	lw, err := ledger.Create(ldir, "bench.error."+safeName(qj.ID), e.Signer)
	if err != nil {
		return nil, queue.Retry(fmt.Errorf("%w (and its ledger: %v)", runErr, err))
	}
	root, err := RecordVerdict(lw, id, res, nil, "")
	lw.Close()
	if err != nil {
		return nil, queue.Retry(fmt.Errorf("%w (and its ledger: %v)", runErr, err))
	}
	res.Ledger.Root = root
	res.Ledger.Dir = ldir
	return e.pack(ctx, qj, id, ResultPayload{Result: res})
}

// pack archives the result's ledger into it (inline, or in the artifact
// store when large) and encodes it.
func (e *Exec) pack(ctx context.Context, qj queue.Job, id RunIdentity, out ResultPayload) ([]byte, error) {
	out.Result.WorkerVersion = id.Version.String()
	if out.Result.Ledger.Dir != "" {
		archive, err := tarDir(out.Result.Ledger.Dir)
		if err != nil {
			return nil, queue.Retry(fmt.Errorf("packing the run's ledger: %w", err))
		}
		if len(archive) <= cmp.Or(e.inline, inlineLedger) {
			out.Ledger = archive
		} else {
			u, err := e.Queue.PutUpload(ctx, LedgerUploadName(qj.ID, out.Result.Ledger.Root), archive)
			if err != nil {
				return nil, queue.Retry(err)
			}
			out.LedgerSize, out.LedgerSHA256 = u.Size, u.SHA256
		}
		out.Result.Ledger.Dir = ""
	}
	return json.Marshal(out)
}

func (e *Exec) handle(ctx context.Context, qj queue.Job, id RunIdentity, p *JobPayload, jerr error, progress func(string)) ([]byte, error) {
	if jerr != nil {
		return nil, fmt.Errorf("job %s: %w", qj.ID, jerr)
	}
	task := p.Task
	repo, err := e.repo(ctx, p)
	if err != nil {
		return nil, err
	}
	task.RepoDir = repo
	if e.WorkDir != "" {
		if err := os.MkdirAll(e.WorkDir, 0o755); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(e.Scratch, "run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	gr := e.Grader
	if gr != nil {
		g := *gr // this job's rules and paths, the coordinator's
		if p.Rules != "" {
			g.Rules = swebench.Rules(p.Rules)
		}
		g.Shells = confined(g.Shells, existingPaths(p.GradeHidden), existing(p.GradeCovered))
		gr = &g
	}
	r := &Runner{Out: dir, WorkDir: e.WorkDir, TempDir: e.TempDir, Agent: e.Agent, Grader: gr, Checkouts: e.Checkouts, Signer: e.Signer,
		VKey: e.VKey, Budgets: p.Budgets, ShowHints: p.ShowHints, Covered: append(existing(p.Covered), e.Covered...), ident: id}
	hidden := append([]string{e.Scratch, task.RepoDir}, p.Hidden...)
	if e.Grader != nil {
		hidden = append(hidden, e.Grader.Private()...) // other runs' gradings (see Runner.hidden)
	}
	var (
		res   bench.Result
		patch string
		keep  bool
	)
	if p.Grade {
		progress("grading")
		patch = p.Patch
		res, keep = r.gradeOne(ctx, &task, p.Arm.Name, p.Patch)
	} else {
		progress("running")
		res, patch, keep = r.runOne(ctx, job{task: &task, arm: p.Arm, repeat: p.Repeat, script: p.Script, progress: progress}, e.gate(p.Arm.Provider), hidden)
	}
	r.janitor.Wait()
	if !keep {
		return nil, queue.Retry(fmt.Errorf("run %s cut short: %w", qj.ID, context.Cause(ctx)))
	}
	if res.Ledger.Dir == "" {
		// Ended before its ledger was made: the error is signed alone.
		return nil, errors.New(cmp.Or(res.Error, "the run ended without a ledger"))
	}
	return e.pack(ctx, qj, id, ResultPayload{Result: res, Patch: patch})
}

// existingPaths are the absolute paths of paths that exist here.
func existingPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil && filepath.IsAbs(p) {
			out = append(out, p)
		}
	}
	return out
}

// existing are the absolute paths of dirs that are directories here.
func existing(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && filepath.IsAbs(d) {
			out = append(out, d)
		}
	}
	return out
}

// ErrBundleMismatch is the error of a job whose repository bundle, as the
// artifact store holds it, is not the one the job names (its SHA-256
// differs). It is final, not retried: the bundle is the coordinator's,
// stored once under its digest, and a delivery elsewhere would read the
// same store; the worker signs it, so the run is recorded as failed with
// the reason rather than run on a repository the coordinator did not send.
var ErrBundleMismatch = errors.New("the repository bundle is not the one the job names")

// repo is the task's repository as this worker sees it: the coordinator's
// path when it is here, else a clone of its bundle, made once, after the
// bundle's SHA-256 is found to be the one the job names.
func (e *Exec) repo(ctx context.Context, p *JobPayload) (string, error) {
	if fi, err := os.Stat(p.RepoDir); err == nil && fi.IsDir() {
		return p.RepoDir, nil
	}
	if p.RepoBundle == "" {
		return "", fmt.Errorf("the repository %s is not on this machine and the coordinator sent no bundle of it", p.RepoDir)
	}
	if len(p.RepoBundleSHA256) != 64 {
		return "", fmt.Errorf("%w: the job names bundle %s without its SHA-256", ErrBundleMismatch, p.RepoBundle)
	}
	key := p.RepoBundle + "@" + p.RepoBundleSHA256
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.repos[key]; ok {
		return d, nil
	}
	path, err := e.Queue.NewArtifactCache(filepath.Join(e.Scratch, "artifacts")).Path(ctx, p.RepoBundle)
	if err != nil {
		return "", queue.Retry(err)
	}
	sum, err := fileSHA256(path)
	if err != nil {
		return "", queue.Retry(err)
	}
	if sum != p.RepoBundleSHA256 {
		os.Remove(path) // fetched again by the next job that names it
		return "", fmt.Errorf("%w: %s has SHA-256 %s, the job names %s", ErrBundleMismatch, p.RepoBundle, sum, p.RepoBundleSHA256)
	}
	dst := filepath.Join(e.Scratch, "repos", "sha256-"+sum)
	if _, err := os.Stat(dst); err != nil {
		os.RemoveAll(dst + ".tmp")
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if _, err := (gitsafe.Git{Dir: filepath.Dir(dst)}).Output(ctx, "-c", "protocol.file.allow=always", "clone", "-q", "--mirror", path, dst+".tmp"); err != nil {
			return "", fmt.Errorf("cloning the bundle of %s: %w", p.RepoDir, err)
		}
		if err := os.Rename(dst+".tmp", dst); err != nil {
			return "", err
		}
	}
	if e.repos == nil {
		e.repos = map[string]string{}
	}
	e.repos[key] = dst
	return dst, nil
}

// fileSHA256 is the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Bundle is a repository's git bundle in the queue's artifact store: its
// name there ("repo/" and its SHA-256, so a bundle once stored is never
// replaced, and jobs published earlier keep theirs) and its SHA-256.
type Bundle struct {
	Name, SHA256 string
}

// PutBundles puts a git bundle of each task's repository in the queue's
// artifact store (for workers that do not share the coordinator's file
// system; workers may read the store, not write it) and returns each by
// repository directory.
func PutBundles(ctx context.Context, q *queue.Queue, tasks []bench.Task, tmp string) (map[string]Bundle, error) {
	out := map[string]Bundle{}
	for _, t := range tasks {
		if _, ok := out[t.RepoDir]; ok {
			continue
		}
		f := filepath.Join(tmp, fmt.Sprintf("bundle-%d", len(out)))
		if _, err := (gitsafe.Git{Dir: t.RepoDir}).Output(ctx, "bundle", "create", "-q", f, "--all"); err != nil {
			return nil, fmt.Errorf("bundling %s: %w", t.RepoDir, err)
		}
		sum, err := fileSHA256(f)
		if err != nil {
			return nil, err
		}
		b := Bundle{Name: "repo/" + sum, SHA256: sum}
		raw, _ := hex.DecodeString(sum)
		if a, err := q.StatArtifact(ctx, b.Name); err != nil || a.Digest != "SHA-256="+base64.URLEncoding.EncodeToString(raw) {
			r, err := os.Open(f)
			if err != nil {
				return nil, err
			}
			_, err = q.PutArtifact(ctx, b.Name, r)
			r.Close()
			if err != nil {
				return nil, err
			}
		}
		os.Remove(f)
		out[t.RepoDir] = b
	}
	return out, nil
}

// IsFullObjectID reports whether rev is a full git object id (40 or 64
// lower-case hex digits), which names one commit whatever a repository's
// branches and tags say.
func IsFullObjectID(rev string) bool {
	if len(rev) != 40 && len(rev) != 64 {
		return false
	}
	for _, c := range rev {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ResolveBase returns the full object id of the commit t.BaseCommit
// names in t.RepoDir (t.BaseCommit itself when it is one already), so
// that a job names exactly one commit: a revision name (a branch, a tag,
// an abbreviated id) means whatever the repository a worker is handed
// says it means.
func ResolveBase(ctx context.Context, t *bench.Task) (string, error) {
	if IsFullObjectID(t.BaseCommit) {
		return t.BaseCommit, nil
	}
	if t.RepoDir == "" {
		return "", fmt.Errorf("instance %s: base_commit %q is not a full object id, and the task has no repository to resolve it in", t.InstanceID, t.BaseCommit)
	}
	out, err := (gitsafe.Git{Dir: t.RepoDir}).Output(ctx, "rev-parse", "--verify", "--quiet", t.BaseCommit+"^{commit}")
	id := strings.TrimSpace(out)
	if err != nil || !IsFullObjectID(id) {
		return "", fmt.Errorf("instance %s: base_commit %q names no commit of %s (the coordinator resolves it to a full id before publishing): %v", t.InstanceID, t.BaseCommit, t.RepoDir, err)
	}
	return id, nil
}

// Verifier checks a worker's result before the coordinator accepts it.
// A result of any kind — resolved, not, an error — is accepted only with
// the run's ledger, verifying against one of the trusted keys and sealed,
// whose last entry is the grader's verdict naming this benchmark, this
// run (job id, instance, arm, repeat) and this job's digest, and only as
// the result agrees with that verdict (resolved, error, root).
type Verifier struct {
	Queue *queue.Queue
	// Keys are the trusted verifier keys (the installation's and
	// --trust-key's).
	Keys []string
	// Incoming is where verified ledgers wait to be accepted.
	Incoming string
	// Runs are the runs the coordinator published, by job id: what a
	// verdict must name.
	Runs map[string]ExpectedRun
	// Version is the coordinator's (zero: ThisVersion()): a verdict of a
	// worker whose grader or protocol version differs is refused, unless
	// AllowMixed, when it is accepted and its version recorded.
	Version    Version
	AllowMixed bool
	// MaxLedger bounds the size of an uploaded ledger archive the
	// verifier reads (0: DefaultMaxLedger); a result stating a larger one
	// is refused before anything is read.
	MaxLedger int64

	mu sync.Mutex
	// refused holds the uploads (name, size and SHA-256) read whole and
	// refused: another result stating one of them is refused without
	// reading it again, so a flood of small forged results naming one
	// large upload costs its reading once.
	refused map[queue.Upload]error
}

// ExpectedRun is what the coordinator published as one job.
type ExpectedRun struct {
	InstanceID string
	Arm        string
	Repeat     int
	// JobDigest is JobDigest of the job's payload.
	JobDigest string
}

// Verify implements the coordinator's Verify. It returns the signing
// key's name as the source of a result whose verdict names this very
// run, and no source for one that proves nothing about it (unsigned,
// signed by no trusted key, unsealed, another run's verdict replayed):
// only a trusted worker's own verdict of the run can count against the
// run.
func (v *Verifier) Verify(ctx context.Context, r queue.Result) (string, error) {
	exp, ok := v.Runs[r.JobID]
	if !ok {
		return "", fmt.Errorf("result of %s: no such run in this benchmark", r.JobID)
	}
	var p ResultPayload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return "", fmt.Errorf("result of %s: %w", r.JobID, err)
	}
	if len(p.Ledger) == 0 && p.LedgerSHA256 == "" {
		return "", fmt.Errorf("result of %s carries no signed ledger", r.JobID)
	}
	var archive io.Reader = bytes.NewReader(p.Ledger)
	var up *queue.Upload
	if len(p.Ledger) == 0 {
		u := queue.Upload{Name: LedgerUploadName(r.JobID, p.Result.Ledger.Root), Size: p.LedgerSize, SHA256: p.LedgerSHA256}
		v.mu.Lock()
		prev, seen := v.refused[u]
		v.mu.Unlock()
		if seen {
			return "", fmt.Errorf("result of %s: its ledger, already read and refused: %w", r.JobID, prev)
		}
		f, err := v.upload(ctx, r.JobID, &p)
		if err != nil {
			return "", fmt.Errorf("result of %s: its ledger: %w", r.JobID, err)
		}
		defer func() { f.Close(); os.Remove(f.Name()) }()
		archive, up = f, &u
	}
	// An upload read whole and refused is refused for good: what it holds
	// cannot change (its SHA-256 was checked), so neither can the verdict
	// on it.
	refuse := func(err error) {
		if up != nil {
			v.mu.Lock()
			if v.refused == nil {
				v.refused = map[queue.Upload]error{}
			}
			v.refused[*up] = err
			v.mu.Unlock()
		}
	}
	dir := v.incoming(r)
	os.RemoveAll(dir)
	if err := untar(archive, dir); err != nil {
		os.RemoveAll(dir)
		refuse(err)
		return "", fmt.Errorf("the run's ledger: %w", err)
	}
	source, err := v.check(dir, r.JobID, exp, &p.Result)
	if err != nil {
		os.RemoveAll(dir)
		if source == "" {
			refuse(err)
		}
		return source, err
	}
	return source, nil
}

// upload reads the ledger archive a result states it uploaded into a
// temporary file (rewound): the upload named after the run and the
// result's ledger root (no other), of the size and SHA-256 the result
// states, the size at most MaxLedger, checked before anything is read,
// and streamed, so a result naming a huge upload costs its size in disk,
// within the bound, not memory.
func (v *Verifier) upload(ctx context.Context, runID string, p *ResultPayload) (*os.File, error) {
	limit := v.MaxLedger
	if limit <= 0 {
		limit = DefaultMaxLedger
	}
	switch {
	case !validRoot(p.Result.Ledger.Root):
		return nil, fmt.Errorf("the result states no ledger root (%q)", p.Result.Ledger.Root)
	case p.LedgerSize <= 0 || p.LedgerSize > limit:
		return nil, fmt.Errorf("the result states an archive of %d bytes (at most %d are read)", p.LedgerSize, limit)
	case len(p.LedgerSHA256) != 64:
		return nil, fmt.Errorf("the result states no SHA-256 of its archive (%q)", p.LedgerSHA256)
	}
	if err := os.MkdirAll(v.Incoming, 0o700); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(v.Incoming, ".upload-*")
	if err != nil {
		return nil, err
	}
	u := queue.Upload{Name: LedgerUploadName(runID, p.Result.Ledger.Root), Size: p.LedgerSize, SHA256: p.LedgerSHA256}
	err = v.Queue.GetUpload(ctx, u, f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

func (v *Verifier) incoming(r queue.Result) string {
	return filepath.Join(v.Incoming, fmt.Sprintf("%d", r.Seq))
}

// verdictData is what Verifier reads of a bench.verdict entry.
type verdictData struct {
	Bench      string  `json:"bench"`
	Run        string  `json:"run"`
	JobDigest  string  `json:"job_digest"`
	InstanceID string  `json:"instance_id"`
	Arm        string  `json:"arm"`
	Repeat     int     `json:"repeat"`
	Resolved   bool    `json:"resolved"`
	Error      string  `json:"error"`
	Worker     Version `json:"worker_version"`
}

func (v *Verifier) check(dir, runID string, exp ExpectedRun, res *bench.Result) (string, error) {
	var errs []error
	for _, k := range v.Keys {
		rep, entries, err := ledger.Verify(dir, k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		// Only what a checkpoint signs counts: a verdict appended after
		// the last one proves nothing.
		if err := rep.CheckSealed(); err != nil {
			return "", fmt.Errorf("the run's ledger: %w", err)
		}
		if len(entries) == 0 || entries[len(entries)-1].Type != "bench.verdict" {
			return "", errors.New("the run's ledger does not end with the grader's verdict")
		}
		d, _ := json.Marshal(entries[len(entries)-1].Data)
		var got verdictData
		if err := json.Unmarshal(d, &got); err != nil {
			return "", fmt.Errorf("the run's verdict: %w", err)
		}
		want := verdictData{Bench: v.Queue.Name(), Run: runID, JobDigest: exp.JobDigest, InstanceID: exp.InstanceID, Arm: exp.Arm, Repeat: exp.Repeat}
		if got.Bench != want.Bench || got.Run != want.Run || got.JobDigest != want.JobDigest ||
			got.InstanceID != want.InstanceID || got.Arm != want.Arm || got.Repeat != want.Repeat {
			return "", fmt.Errorf("the ledger's verdict is of another run (benchmark %q, run %q, %s %s r%d, job %.12s), not of %s (job %.12s)",
				got.Bench, got.Run, got.InstanceID, got.Arm, got.Repeat, got.JobDigest, runID, exp.JobDigest)
		}
		own := v.Version
		if own == (Version{}) {
			own = ThisVersion()
		}
		if !own.Compatible(got.Worker) && !v.AllowMixed {
			// Refused, but not held against the run: a worker of the
			// right version may make it.
			return "", fmt.Errorf("the worker's version (%s) is not this coordinator's (%s): its grader or protocol differs (--allow-mixed-versions records such results)", got.Worker, own)
		}
		// From here on the verdict is the signer's word on this run: a
		// result that disagrees with it counts against the signer.
		source := KeyName(k)
		if res.WorkerVersion != got.Worker.String() {
			return source, fmt.Errorf("the result names worker version %q, its verdict %q", res.WorkerVersion, got.Worker)
		}
		if res.InstanceID != exp.InstanceID || res.Arm != exp.Arm || res.Repeat != exp.Repeat {
			return source, fmt.Errorf("the result names %s %s r%d, its verdict %s %s r%d", res.InstanceID, res.Arm, res.Repeat, got.InstanceID, got.Arm, got.Repeat)
		}
		if got.Resolved != res.Resolved || got.Error != res.Error {
			return source, fmt.Errorf("the ledger's verdict (resolved %t, error %q) is not the result's (resolved %t, error %q)", got.Resolved, got.Error, res.Resolved, res.Error)
		}
		if root := hex.EncodeToString(rep.Root); root != res.Ledger.Root {
			return source, fmt.Errorf("the ledger's root %s is not the result's %s", root, res.Ledger.Root)
		}
		return source, nil
	}
	return "", fmt.Errorf("the run's ledger verifies against no trusted key: %w", errors.Join(errs...))
}

// KeyName is a verifier key's name and hash (name+hash), without the key
// itself: how results' sources are reported.
func KeyName(vkey string) string {
	parts := strings.SplitN(vkey, "+", 3)
	if len(parts) < 3 {
		return vkey
	}
	return parts[0] + "+" + parts[1]
}

// tarDir archives the regular files and directories under dir.
func tarDir(dir string) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() && !info.IsDir() {
			return nil
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// untar unpacks regular files and directories into dir, refusing any
// name that leaves it.
func untar(archive io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(archive)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) || strings.Contains(h.Name, "\\") {
			return fmt.Errorf("archive entry %q leaves the directory", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, io.LimitReader(tr, h.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("archive entry %q is neither a file nor a directory", h.Name)
		}
	}
}
