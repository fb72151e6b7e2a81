// Package multiswe turns Multi-SWE-bench records (the JSONL files of the
// Hugging Face dataset ByteDance-Seed/Multi-SWE-bench, one pull request a
// line) into benchmark instances in SWE-bench's format, which `truss bench`
// reads.
//
// A record names a GitHub repository (org, repo), the pull request's base
// commit (base.sha), the issues it resolves, its fix (fix_patch) and its
// tests (test_patch), and the tests it turns to passing, by how each did on
// the base with the test patch (test) and with both patches (fix): f2p_tests
// (FAIL → PASS), s2p_tests (SKIP → PASS), n2p_tests (not run → PASS) and
// p2p_tests (PASS → PASS). Multi-SWE-bench counts a fix as resolving the
// instance when every test of those four maps passes with it (and no other
// test that passed with the test patch alone fails); so an instance's
// FAIL_TO_PASS is the union of the keys of f2p_tests, s2p_tests and
// n2p_tests, and its PASS_TO_PASS the keys of p2p_tests.
//
// The repositories are not fetched: each task's repo is org/repo, found
// under `truss bench --repos DIR` as DIR/org/repo or DIR/org__repo, which
// must hold base.sha. Each task's image is the instance's image as
// Multi-SWE-bench names it (mswebench/org_m_repo:pr-NUMBER, lower-cased),
// which `--env task` runs in.
package multiswe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/bench"
)

// Record is one line of a Multi-SWE-bench dataset file: the fields the
// import uses. Its other fields (state, run_result, test_patch_result,
// fix_patch_result, …) are read past.
type Record struct {
	Org    string `json:"org"`
	Repo   string `json:"repo"`
	Number int64  `json:"number"`
	Title  string `json:"title"`
	// Body is the pull request's description; null reads as "".
	Body           string  `json:"body"`
	Base           Base    `json:"base"`
	ResolvedIssues []Issue `json:"resolved_issues"`
	FixPatch       string  `json:"fix_patch"`
	TestPatch      string  `json:"test_patch"`
	// The tests the fix turns to passing, by their status on the base
	// with the test patch: FAIL, SKIP, not run (NONE); and the tests that
	// passed and still pass. FixedTests is the union of the first three.
	F2PTests   map[string]TestStatus `json:"f2p_tests"`
	S2PTests   map[string]TestStatus `json:"s2p_tests"`
	N2PTests   map[string]TestStatus `json:"n2p_tests"`
	P2PTests   map[string]TestStatus `json:"p2p_tests"`
	FixedTests map[string]TestStatus `json:"fixed_tests"`
	// InstanceID is org__repo-number in the published files; absent in
	// older ones.
	InstanceID string `json:"instance_id"`
	// Lang is the language, when the record has it (the published files
	// hold it in their directory's name instead: go, java, ts, …).
	Lang string `json:"lang"`
	// Hints, added to the dataset later, names what the fix and its tests
	// define (a string; an array of strings is joined by lines).
	Hints json.RawMessage `json:"hints"`

	// Line is the record's line in its file; not part of the format.
	Line int `json:"-"`
}

// Base is the commit the pull request is based on.
type Base struct {
	Label string `json:"label"`
	Ref   string `json:"ref"`
	SHA   string `json:"sha"`
}

// Issue is an issue the pull request resolves; a null body reads as "".
type Issue struct {
	Number int64  `json:"number"`
	Title  string `json:"title"`
	Body   string `json:"body"`
}

// TestStatus is a test's status in the three runs Multi-SWE-bench makes:
// on the base (run), with the test patch (test), with the test patch and
// the fix (fix): PASS, FAIL, SKIP or NONE (did not run).
type TestStatus struct {
	Run  string `json:"run"`
	Test string `json:"test"`
	Fix  string `json:"fix"`
}

// DefaultImagePrefix is the prefix of Multi-SWE-bench's instance images.
const DefaultImagePrefix = "mswebench"

// Options configure an import.
type Options struct {
	// Out is the directory written: tasks.jsonl. It must not hold a
	// tasks.jsonl yet.
	Out string
	// Only, when set, limits the import to these instances, each named by
	// its instance id (org__repo-number) or Multi-SWE-bench's own id
	// (org/repo:pr-number). An id no record has is an error.
	Only []string
	// Language is each task's language when its record has no lang; when
	// both are empty, the name of the input's directory is used if it is
	// one of the dataset's language directories (go, java, ts, …).
	Language string
	// ImagePrefix replaces DefaultImagePrefix in the images' names (a
	// registry that mirrors them); "" keeps it.
	ImagePrefix string
}

// Summary says what an import wrote.
type Summary struct {
	// Tasks is the number of instances written to TaskFile.
	Tasks int
	// Skipped are the instances left out because their record lists no
	// test that must turn to passing (Truss needs at least one).
	Skipped  []string
	TaskFile string
}

// Task is an imported instance: a task in SWE-bench's format, and its
// language in a field that bench.ParseTasks reads past.
type Task struct {
	bench.Task
	Language string `json:"language,omitempty"`
}

// Import reads Multi-SWE-bench records from r (name is the input's name in
// errors, and its directory may give the language, see Options.Language)
// and writes their instances to opts.Out/tasks.jsonl, in the records'
// order. A malformed record fails the import, naming its line; nothing is
// written then.
func Import(ctx context.Context, r io.Reader, name string, opts Options) (*Summary, error) {
	if opts.Out == "" {
		return nil, errors.New("multiswe: no output directory")
	}
	recs, err := ParseRecords(r, name)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s holds no record", name)
	}
	if len(opts.Only) > 0 {
		if recs, err = only(recs, opts.Only, name); err != nil {
			return nil, err
		}
	}
	taskFile := filepath.Join(opts.Out, "tasks.jsonl")
	if _, err := os.Stat(taskFile); err == nil {
		return nil, fmt.Errorf("%s exists: import into an empty directory", taskFile)
	}
	lang := opts.Language
	if lang == "" {
		lang = dirLanguage(name)
	}
	sum := &Summary{TaskFile: taskFile}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range recs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t, ok := Convert(&recs[i], lang, opts.ImagePrefix)
		if !ok {
			sum.Skipped = append(sum.Skipped, t.InstanceID)
			continue
		}
		if err := enc.Encode(t); err != nil {
			return nil, fmt.Errorf("%s: %w", t.InstanceID, err)
		}
		sum.Tasks++
	}
	if sum.Tasks == 0 {
		return nil, fmt.Errorf("%s: no record lists a test that must turn to passing (%d left out)", name, len(sum.Skipped))
	}
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	if err := bench.WriteFileAtomic(taskFile, buf.Bytes()); err != nil {
		return nil, err
	}
	return sum, nil
}

// only keeps the records named in ids, by instance id or Multi-SWE-bench's
// id; an id that names no record is an error.
func only(recs []Record, ids []string, name string) ([]Record, error) {
	found := map[string]bool{}
	var kept []Record
	for _, r := range recs {
		id, msb := r.ID(), r.MultiSWEID()
		if slices.Contains(ids, id) || slices.Contains(ids, msb) {
			found[id], found[msb] = true, true
			kept = append(kept, r)
		}
	}
	var missing []string
	for _, id := range ids {
		if !found[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s has no instance %s", name, strings.Join(missing, ", "))
	}
	return kept, nil
}

// languageDir reports whether dir is one of the published dataset's
// directories, each named for its files' language.
func languageDir(dir string) bool {
	switch dir {
	case "c", "cpp", "go", "java", "js", "rust", "ts", "python":
		return true
	}
	return false
}

// dirLanguage is the language that name's directory names, else "".
func dirLanguage(name string) string {
	if d := filepath.Base(filepath.Dir(name)); languageDir(d) {
		return d
	}
	return ""
}

// ID is the record's instance id: its instance_id, else
// org__repo-number as the published files name instances.
func (r *Record) ID() string {
	if strings.TrimSpace(r.InstanceID) != "" {
		return r.InstanceID
	}
	return r.Org + "__" + r.Repo + "-" + strconv.FormatInt(r.Number, 10)
}

// MultiSWEID is Multi-SWE-bench's own id of the instance,
// org/repo:pr-number, which its reports and patch files use.
func (r *Record) MultiSWEID() string {
	return r.Org + "/" + r.Repo + ":pr-" + strconv.FormatInt(r.Number, 10)
}

// Image is the name of the instance's image as Multi-SWE-bench's harness
// builds and publishes it: prefix/org_m_repo:pr-number, the name
// lower-cased; prefix "" is DefaultImagePrefix.
func Image(org, repo string, number int64, prefix string) string {
	if prefix == "" {
		prefix = DefaultImagePrefix
	}
	return strings.ToLower(prefix+"/"+org+"_m_"+repo) + ":pr-" + strconv.FormatInt(number, 10)
}

// ProblemStatement is what the agent is asked to do, as Multi-SWE-bench's
// own agents (MagentLess, MopenHands) build it: the first resolved issue's
// title, a newline and its body; for a record without resolved issues,
// the pull request's title and body.
func (r *Record) ProblemStatement() string {
	if len(r.ResolvedIssues) > 0 {
		return r.ResolvedIssues[0].Title + "\n" + r.ResolvedIssues[0].Body
	}
	return r.Title + "\n" + r.Body
}

// FailToPass are the tests a fix must turn to passing: the keys of
// f2p_tests, s2p_tests and n2p_tests, sorted.
func (r *Record) FailToPass() []string {
	set := map[string]bool{}
	for _, m := range []map[string]TestStatus{r.F2PTests, r.S2PTests, r.N2PTests} {
		for k := range m {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// PassToPass are the tests a fix must keep passing: the keys of p2p_tests,
// sorted.
func (r *Record) PassToPass() []string {
	return slices.Sorted(maps.Keys(r.P2PTests))
}

// Convert makes a record's task: lang is its language when the record has
// none, prefix its image's prefix (see Image). ok is false when the
// record lists no test that must turn to passing; the task then holds
// only its instance id. r must have passed ParseRecords' checks.
func Convert(r *Record, lang, prefix string) (t *Task, ok bool) {
	id := r.ID()
	f2p := r.FailToPass()
	if len(f2p) == 0 {
		return &Task{Task: bench.Task{InstanceID: id}}, false
	}
	if r.Lang != "" {
		lang = r.Lang
	}
	hints, _ := hintsText(r.Hints)
	return &Task{
		Task: bench.Task{
			InstanceID:       id,
			Repo:             r.Org + "/" + r.Repo,
			BaseCommit:       r.Base.SHA,
			ProblemStatement: r.ProblemStatement(),
			HintsText:        hints,
			Patch:            r.FixPatch,
			TestPatch:        r.TestPatch,
			FailToPass:       bench.TestList(f2p),
			PassToPass:       append(bench.TestList{}, r.PassToPass()...),
			Image:            Image(r.Org, r.Repo, r.Number, prefix),
			// The images keep the repository at /home/REPO
			// (multi_swe_bench/harness/repos/…: workdir).
			Workdir: "/home/" + r.Repo,
		},
		Language: lang,
	}, true
}

// hintsText reads the hints field: absent or null, a string, or an array
// of strings (joined by newlines).
func hintsText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New("field hints: want a string or an array of strings")
	}
	return strings.Join(list, "\n"), nil
}

// ghName is an org or repository name as GitHub allows them.
var ghName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

// ParseRecords reads Multi-SWE-bench records from JSONL (blank lines are
// skipped) and checks each: org and repo GitHub names, number positive,
// base.sha a revision, a problem statement, no empty test name, an
// instance id that can name a file and that no other record has. An
// error is a *bench.LineError naming the line.
func ParseRecords(r io.Reader, name string) ([]Record, error) {
	var recs []Record
	seen := map[string]int{}
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, rerr := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			rec, err := parseRecord(line)
			if err == nil {
				if prev, ok := seen[rec.ID()]; ok {
					err = fmt.Errorf("instance %s again (first on line %d)", rec.ID(), prev)
				}
			}
			if err != nil {
				return nil, &bench.LineError{File: name, Line: n, Err: err}
			}
			rec.Line = n
			seen[rec.ID()] = n
			recs = append(recs, *rec)
		}
		if rerr == io.EOF {
			return recs, nil
		}
		if rerr != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n, rerr)
		}
	}
}

// parseRecord decodes and checks one record.
func parseRecord(line []byte) (*Record, error) {
	line = bytes.TrimSpace(line)
	if line[0] != '{' {
		return nil, errors.New("not a JSON object")
	}
	var r Record
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&r); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, fmt.Errorf("field %s: want %s, not a JSON %s", te.Field, te.Type, te.Value)
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value on the line")
	}
	if _, err := hintsText(r.Hints); err != nil {
		return nil, err
	}
	for f, v := range map[string]string{"org": r.Org, "repo": r.Repo} {
		if !goodName(v) {
			return nil, fmt.Errorf("%s %q is not a GitHub name", f, v)
		}
	}
	id := r.ID()
	switch {
	case r.Number <= 0:
		return nil, fmt.Errorf("number %d is not a pull request's", r.Number)
	case strings.TrimSpace(r.Base.SHA) == "":
		return nil, fmt.Errorf("instance %s: base.sha is missing or empty", id)
	case strings.HasPrefix(r.Base.SHA, "-") || strings.ContainsAny(r.Base.SHA, " \t\r\n:"):
		return nil, fmt.Errorf("instance %s: base.sha %q is not a revision", id, r.Base.SHA)
	case strings.ContainsAny(id, "/\\\x00") || id == "." || id == "..":
		return nil, fmt.Errorf("instance_id %q cannot name a file (it holds a slash or is . or ..)", id)
	case strings.TrimSpace(r.ProblemStatement()) == "":
		return nil, fmt.Errorf("instance %s: no problem statement (no resolved issue, and no title or body)", id)
	}
	for _, m := range []map[string]TestStatus{r.F2PTests, r.S2PTests, r.N2PTests, r.P2PTests} {
		for k := range m {
			if strings.TrimSpace(k) == "" {
				return nil, fmt.Errorf("instance %s: an empty test name", id)
			}
		}
	}
	return &r, nil
}

// goodName reports whether s is an org or repository name as GitHub
// allows them (and not . or ..).
func goodName(s string) bool {
	return ghName.MatchString(s) && s != "." && s != ".."
}
