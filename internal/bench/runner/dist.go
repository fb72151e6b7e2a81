package runner

import (
	"archive/tar"
	"bytes"
	"context"
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
	// the artifact holding a git bundle of it, for workers that do not.
	RepoDir    string    `json:"repo_dir"`
	RepoBundle string    `json:"repo_bundle,omitempty"`
	Arm        bench.Arm `json:"arm"`
	Repeat     int       `json:"repeat"`
	Budgets    Budgets   `json:"budgets"`
	ShowHints  bool      `json:"show_hints,omitempty"`
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
	// Rules are the SWE-bench harness's rules the coordinator grades
	// SWE-bench records under ("": the grader's default).
	Rules string `json:"rules,omitempty"`
}

// ResultPayload is a worker's result of one run: the result line, the
// model's patch and the run's signed ledger, as a tar archive inline or,
// when large, in the queue's artifact store.
type ResultPayload struct {
	Result         bench.Result `json:"result"`
	Patch          string       `json:"patch"`
	Ledger         []byte       `json:"ledger,omitempty"`
	LedgerArtifact string       `json:"ledger_artifact,omitempty"`
}

// inlineLedger is the largest ledger archive sent inside a result message.
const inlineLedger = 512 << 10

// JobID is the queue's id of a run.
func JobID(k bench.RunKey) string { return fmt.Sprintf("%s/%s/r%d", k.InstanceID, k.Arm, k.Repeat) }

// Exec runs the jobs of a queue on a worker: each a run of its own, in a
// fresh workspace, graded, its verdict signed into its ledger.
type Exec struct {
	Queue     *queue.Queue
	Agent     Agent
	Grader    *grade.Grader
	Checkouts *bench.Templates
	Signer    note.Signer
	VKey      string
	// Scratch is the worker's directory: the runs' ledgers before they
	// are sent, the repositories fetched as bundles. It is hidden from
	// the agents' commands.
	Scratch string
	// WorkDir is where workspaces are made ("" for the temporary
	// directory).
	WorkDir string
	// ProviderCap bounds the runs of a provider in the agent loop at
	// once on this worker (absent: no bound beyond the worker's slots).
	ProviderCap map[string]int

	mu    sync.Mutex
	gates map[string]*Gate
	repos map[string]string // bundle artifact → local clone
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

// Handle is the queue.Handler of a benchmark's runs.
func (e *Exec) Handle(ctx context.Context, qj queue.Job, progress func(string)) ([]byte, error) {
	var p JobPayload
	if err := json.Unmarshal(qj.Payload, &p); err != nil {
		return nil, fmt.Errorf("job %s: %w", qj.ID, err)
	}
	task := p.Task
	repo, err := e.repo(ctx, &p)
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
	if gr != nil && p.Rules != "" {
		g := *gr // this job's rules, the coordinator's
		g.Rules = swebench.Rules(p.Rules)
		gr = &g
	}
	r := &Runner{Out: dir, WorkDir: e.WorkDir, Agent: e.Agent, Grader: gr, Checkouts: e.Checkouts, Signer: e.Signer,
		VKey: e.VKey, Budgets: p.Budgets, ShowHints: p.ShowHints}
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
	out := ResultPayload{Result: res, Patch: patch}
	if res.Ledger.Dir != "" {
		archive, err := tarDir(res.Ledger.Dir)
		if err != nil {
			return nil, fmt.Errorf("packing the run's ledger: %w", err)
		}
		if len(archive) <= inlineLedger {
			out.Ledger = archive
		} else {
			name := "ledger/" + qj.ID + "/" + res.Ledger.Root
			if _, err := e.Queue.PutArtifact(ctx, name, bytes.NewReader(archive)); err != nil {
				return nil, queue.Retry(err)
			}
			out.LedgerArtifact = name
		}
		out.Result.Ledger.Dir = ""
	}
	return json.Marshal(out)
}

// repo is the task's repository as this worker sees it: the coordinator's
// path when it is here, else a clone of its bundle, made once.
func (e *Exec) repo(ctx context.Context, p *JobPayload) (string, error) {
	if fi, err := os.Stat(p.RepoDir); err == nil && fi.IsDir() {
		return p.RepoDir, nil
	}
	if p.RepoBundle == "" {
		return "", fmt.Errorf("the repository %s is not on this machine and the coordinator sent no bundle of it", p.RepoDir)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if d, ok := e.repos[p.RepoBundle]; ok {
		return d, nil
	}
	path, err := e.Queue.NewArtifactCache(filepath.Join(e.Scratch, "artifacts")).Path(ctx, p.RepoBundle)
	if err != nil {
		return "", queue.Retry(err)
	}
	dst := filepath.Join(e.Scratch, "repos", filepath.Base(path))
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
	e.repos[p.RepoBundle] = dst
	return dst, nil
}

// PutBundles puts a git bundle of each task's repository in the queue's
// artifact store (for workers that do not share the coordinator's file
// system) and returns the artifact's name by repository directory.
func PutBundles(ctx context.Context, q *queue.Queue, tasks []bench.Task, tmp string) (map[string]string, error) {
	out := map[string]string{}
	for _, t := range tasks {
		if _, ok := out[t.RepoDir]; ok {
			continue
		}
		f := filepath.Join(tmp, fmt.Sprintf("bundle-%d", len(out)))
		if _, err := (gitsafe.Git{Dir: t.RepoDir}).Output(ctx, "bundle", "create", "-q", f, "--all"); err != nil {
			return nil, fmt.Errorf("bundling %s: %w", t.RepoDir, err)
		}
		b, err := os.Open(f)
		if err != nil {
			return nil, err
		}
		name := "repo/" + hex.EncodeToString([]byte(t.RepoDir))
		if len(name) > 200 {
			name = name[:200]
		}
		_, err = q.PutArtifact(ctx, name, b)
		b.Close()
		os.Remove(f)
		if err != nil {
			return nil, err
		}
		out[t.RepoDir] = name
	}
	return out, nil
}

// Verifier checks a worker's result before the coordinator accepts it:
// the run's ledger verifies against one of the trusted keys, its last
// entry is the grader's verdict of that very run, and its root is the one
// the result names.
type Verifier struct {
	Queue *queue.Queue
	// Keys are the trusted verifier keys (the installation's and
	// --trust-key's).
	Keys []string
	// Incoming is where verified ledgers wait to be accepted.
	Incoming string
}

// Verify implements the coordinator's Verify: results without a payload
// (a job given up, a handler's error) claim nothing and pass.
func (v *Verifier) Verify(ctx context.Context, r queue.Result) error {
	if r.Error != "" || r.GaveUp {
		return nil
	}
	var p ResultPayload
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		return fmt.Errorf("result of %s: %w", r.JobID, err)
	}
	if p.Result.Error != "" && len(p.Ledger) == 0 && p.LedgerArtifact == "" {
		return nil
	}
	archive := p.Ledger
	if p.LedgerArtifact != "" {
		var b bytes.Buffer
		if _, err := v.Queue.GetArtifact(ctx, p.LedgerArtifact, &b); err != nil {
			return err
		}
		archive = b.Bytes()
	}
	dir := v.incoming(r)
	os.RemoveAll(dir)
	if err := untar(archive, dir); err != nil {
		return fmt.Errorf("the run's ledger: %w", err)
	}
	if err := v.check(dir, &p.Result); err != nil {
		os.RemoveAll(dir)
		return err
	}
	return nil
}

func (v *Verifier) incoming(r queue.Result) string {
	return filepath.Join(v.Incoming, fmt.Sprintf("%d", r.Seq))
}

func (v *Verifier) check(dir string, res *bench.Result) error {
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
			return fmt.Errorf("the run's ledger: %w", err)
		}
		if len(entries) == 0 || entries[len(entries)-1].Type != "bench.verdict" {
			return errors.New("the run's ledger does not end with the grader's verdict")
		}
		d, _ := json.Marshal(entries[len(entries)-1].Data)
		var got struct {
			InstanceID string `json:"instance_id"`
			Arm        string `json:"arm"`
			Repeat     int    `json:"repeat"`
			Resolved   bool   `json:"resolved"`
		}
		json.Unmarshal(d, &got)
		if got.InstanceID != res.InstanceID || got.Arm != res.Arm || got.Repeat != res.Repeat || got.Resolved != res.Resolved {
			return fmt.Errorf("the ledger's verdict (%s %s r%d resolved %t) is not the result's", got.InstanceID, got.Arm, got.Repeat, got.Resolved)
		}
		if root := hex.EncodeToString(rep.Root); root != res.Ledger.Root {
			return fmt.Errorf("the ledger's root %s is not the result's %s", root, res.Ledger.Root)
		}
		return nil
	}
	return fmt.Errorf("the run's ledger verifies against no trusted key: %w", errors.Join(errs...))
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
func untar(archive []byte, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(bytes.NewReader(archive))
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
