package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/hostfs"
)

// RunKey names one run: a task, an arm and a repeat.
type RunKey struct {
	InstanceID string
	Arm        string
	Repeat     int
}

// Key returns the run r is the result of.
func (r *Result) Key() RunKey { return RunKey{r.InstanceID, r.Arm, r.Repeat} }

// Journal is an append-only JSONL file written one whole line at a time:
// each Append is a single write of the line and its newline, synced before
// it returns. Opening it cuts a torn last line (a write a crash cut short)
// so that the file holds only whole lines.
type Journal struct {
	mu   sync.Mutex
	f    *os.File
	path string
}

// OpenJournal opens (creating) the file at path for appending, after
// removing a torn last line. It returns the whole lines already there.
func OpenJournal(path string) (*Journal, [][]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	whole := data
	if i := bytes.LastIndexByte(data, '\n'); i+1 != len(data) {
		whole = data[:i+1]
		if err := f.Truncate(int64(len(whole))); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("cut the torn last line of %s: %w", path, err)
		}
	}
	if _, err := f.Seek(0, 2); err != nil {
		f.Close()
		return nil, nil, err
	}
	var lines [][]byte
	for _, l := range bytes.Split(whole, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			lines = append(lines, l)
		}
	}
	return &Journal{f: f, path: path}, lines, nil
}

// Append writes v as one JSON line and syncs it.
func (j *Journal) Append(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("append to %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", j.path, err)
	}
	return nil
}

// Close closes the file.
func (j *Journal) Close() error { return j.f.Close() }

// ResultsFile is DIR/results.jsonl: the results of the runs finished so
// far, appended as each finishes.
type ResultsFile struct {
	*Journal
	dir  string // absolute
	mu   sync.Mutex
	done map[RunKey]Result
}

// ResultsName is the results file's name in its directory.
const ResultsName = "results.jsonl"

// OpenResults opens DIR/results.jsonl, creating DIR, and reads the runs
// it already holds.
func OpenResults(dir string) (*ResultsFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ResultsName)
	j, lines, err := OpenJournal(path)
	if err != nil {
		return nil, err
	}
	rf := &ResultsFile{Journal: j, dir: abs, done: map[RunKey]Result{}}
	for i, l := range lines {
		var r Result
		if err := json.Unmarshal(l, &r); err != nil {
			j.Close()
			return nil, fmt.Errorf("%s: result %d: %w", path, i+1, err)
		}
		rf.done[r.Key()] = r
	}
	return rf, nil
}

// Done returns the result of a finished run.
func (rf *ResultsFile) Done(k RunKey) (Result, bool) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	r, ok := rf.done[k]
	return r, ok
}

// Results returns every result read or appended, in no order.
func (rf *ResultsFile) Results() []Result {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	out := make([]Result, 0, len(rf.done))
	for _, r := range rf.done {
		out = append(out, r)
	}
	return out
}

// Add appends a result. A run already in the file is an error: a
// finished run is never run, nor written, twice. A ledger directory under
// the results directory is written relative to it (where report.Load
// looks for it), whatever directory it was given from, so that the
// results stay right when the directory moves.
func (rf *ResultsFile) Add(r Result) error {
	if d := r.Ledger.Dir; d != "" {
		if abs, err := filepath.Abs(d); err == nil {
			if rel, err := filepath.Rel(rf.dir, abs); err == nil && filepath.IsLocal(rel) {
				r.Ledger.Dir = filepath.ToSlash(rel)
			}
		}
	}
	rf.mu.Lock()
	if _, ok := rf.done[r.Key()]; ok {
		rf.mu.Unlock()
		return fmt.Errorf("run %s/%s/%d is already in the results", r.InstanceID, r.Arm, r.Repeat)
	}
	rf.done[r.Key()] = r
	rf.mu.Unlock()
	return rf.Append(r)
}

// PredictionsName is the predictions file of an arm's repeat in SWE-bench's
// format: predictions-ARM.jsonl for the first repeat, and
// predictions-ARM.repeatN.jsonl for repeat N > 1 (the official evaluator
// takes one prediction per instance a file). Characters other than
// letters, digits, '-', '_' and '.' in the arm's name become '_'.
func PredictionsName(arm string, repeat int) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, arm)
	if repeat > 1 {
		return "predictions-" + safe + ".repeat" + strconv.Itoa(repeat) + ".jsonl"
	}
	return "predictions-" + safe + ".jsonl"
}

// OpenPredictions opens a predictions file for appending, keeping only the
// predictions whose run has a result (keep): a prediction written just
// before a crash, whose result was not, is dropped, since the run will be
// made again. The file is rewritten atomically when a line is dropped.
func OpenPredictions(path string, keep func(instanceID string) bool) (*Journal, error) {
	j, lines, err := OpenJournal(path)
	if err != nil {
		return nil, err
	}
	var kept [][]byte
	for _, l := range lines {
		var p Prediction
		if json.Unmarshal(l, &p) == nil && keep(p.InstanceID) {
			kept = append(kept, l)
		}
	}
	if len(kept) == len(lines) {
		return j, nil
	}
	j.Close()
	var buf bytes.Buffer
	for _, l := range kept {
		buf.Write(l)
		buf.WriteByte('\n')
	}
	if err := WriteFileAtomic(path, buf.Bytes()); err != nil {
		return nil, err
	}
	j, _, err = OpenJournal(path)
	return j, err
}

// WriteFileAtomic writes a file through a synced temporary file renamed
// into place.
func WriteFileAtomic(path string, data []byte) error {
	return hostfs.WriteFileAtomic(path, data, 0o644)
}
