package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Task is one benchmark instance in SWE-bench's format, with Truss's
// optional fields (test_cmd, setup_cmd, image). Fields of the public
// datasets Truss does not use (created_at, patch, …) are accepted and
// ignored, except Patch, the reference fix, which importers fill and tests
// grade.
type Task struct {
	InstanceID string `json:"instance_id"`
	// Repo is a local path to a git repository (absolute, or relative to
	// the task file) or owner/name under the --repos directory.
	Repo       string `json:"repo"`
	BaseCommit string `json:"base_commit"`
	// ProblemStatement is what the agent is asked to do; HintsText is
	// shown with it when the runner is asked to.
	ProblemStatement string `json:"problem_statement"`
	HintsText        string `json:"hints_text,omitempty"`
	// Patch is the reference (gold) fix, when the task set has one.
	Patch string `json:"patch,omitempty"`
	// TestPatch adds or changes the hidden tests; it is applied only when
	// grading, over the model's changes.
	TestPatch string `json:"test_patch"`
	// FailToPass must pass after the fix (they fail before it);
	// PassToPass must still pass. In the file, each is a JSON array of
	// strings or a string holding one, as the public datasets store them.
	FailToPass TestList `json:"FAIL_TO_PASS"`
	PassToPass TestList `json:"PASS_TO_PASS"`

	Version                string `json:"version,omitempty"`
	EnvironmentSetupCommit string `json:"environment_setup_commit,omitempty"`

	// TestCmd runs the tests (else they are detected as validate does);
	// SetupCmd prepares the environment before them. Image names the
	// environment the task's commands expect (a container image), recorded
	// with each run.
	TestCmd  string   `json:"test_cmd,omitempty"`
	SetupCmd Commands `json:"setup_cmd,omitempty"`
	Image    string   `json:"image,omitempty"`
	// Workdir is where the task's image keeps the repository, where the
	// run's workspace and its grading checkout are mounted in a container
	// of that image ("": --env-workdir, else the image's WORKDIR):
	// Multi-SWE-bench's images keep it at /home/REPO.
	Workdir string `json:"workdir,omitempty"`
	// JUnit says the task's test command writes a JUnit XML report where
	// $TRUSS_BENCH_JUNIT names (pytest --junitxml, go-junit-report,
	// Maven): only then does the grader set the variable, and the report
	// is the per-test verdicts' source. Without it no report is read,
	// whatever the graded code writes.
	JUnit bool `json:"junit,omitempty"`

	// RepoDir is the repository's directory, resolved when the task was
	// loaded; Line is the task's line in its file. Neither is part of
	// the format.
	RepoDir string `json:"-"`
	Line    int    `json:"-"`
}

// Tests returns every listed test: FAIL_TO_PASS then PASS_TO_PASS.
func (t *Task) Tests() []string {
	return append(append([]string(nil), t.FailToPass...), t.PassToPass...)
}

// TestList is a list of test names, read from a JSON array of strings or
// from a string holding such an array.
type TestList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *TestList) UnmarshalJSON(b []byte) error {
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		*l = list
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("want a JSON array of test names or a string holding one")
	}
	if strings.TrimSpace(s) == "" {
		*l = nil
		return nil
	}
	if err := json.Unmarshal([]byte(s), &list); err != nil {
		return fmt.Errorf("the string does not hold a JSON array of test names: %v", err)
	}
	*l = list
	return nil
}

// Commands are shell commands, read from a string (one command, possibly
// of many lines) or an array of strings.
type Commands []string

// UnmarshalJSON implements json.Unmarshaler.
func (c *Commands) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*c = nil
		if strings.TrimSpace(s) != "" {
			*c = Commands{s}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return errors.New("want a command string or an array of them")
	}
	*c = list
	return nil
}

// LineError is an error in one line of a JSONL input file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ParseTasks reads tasks from JSONL (one object a line; blank lines are
// skipped) and checks each: instance_id, repo and base_commit present,
// instance ids unique, at least one FAIL_TO_PASS test. name is the input's
// name in errors. A line that lacks a required field and has none of
// SWE-bench's own fields is not taken for a broken task: its error names
// the known format it looks like (a Multi-SWE-bench record, a HumanEvalFix
// problem, a prediction) and what to do with it, else the required fields
// it lacks. Repositories are not resolved (LoadTasks does).
func ParseTasks(r io.Reader, name string) ([]Task, error) {
	var tasks []Task
	seen := map[string]int{}
	err := eachLine(r, name, func(n int, line []byte) error {
		var t Task
		if err := decodeLine(line, &t); err != nil {
			if ferr := foreignFormat(line); ferr != nil {
				return ferr
			}
			return flexibleFieldError(line, err, "FAIL_TO_PASS", "PASS_TO_PASS", "setup_cmd")
		}
		if strings.TrimSpace(t.InstanceID) == "" || strings.TrimSpace(t.Repo) == "" || strings.TrimSpace(t.BaseCommit) == "" || len(t.FailToPass) == 0 {
			if ferr := foreignFormat(line); ferr != nil {
				return ferr
			}
		}
		switch {
		case strings.TrimSpace(t.InstanceID) == "":
			return errors.New("instance_id is missing or empty")
		case strings.TrimSpace(t.Repo) == "":
			return fmt.Errorf("instance %s: repo is missing or empty", t.InstanceID)
		case strings.TrimSpace(t.BaseCommit) == "":
			return fmt.Errorf("instance %s: base_commit is missing or empty", t.InstanceID)
		case strings.HasPrefix(t.BaseCommit, "-") || strings.ContainsAny(t.BaseCommit, " \t\n:"):
			return fmt.Errorf("instance %s: base_commit %q is not a revision", t.InstanceID, t.BaseCommit)
		case len(t.FailToPass) == 0:
			return fmt.Errorf("instance %s: FAIL_TO_PASS lists no test", t.InstanceID)
		case strings.ContainsAny(t.InstanceID, "/\\\x00") || t.InstanceID == "." || t.InstanceID == "..":
			return fmt.Errorf("instance_id %q cannot name a file (it holds a slash or is . or ..)", t.InstanceID)
		}
		if prev, ok := seen[t.InstanceID]; ok {
			return fmt.Errorf("instance %s again (first on line %d)", t.InstanceID, prev)
		}
		for _, name := range t.Tests() {
			if strings.TrimSpace(name) == "" {
				return fmt.Errorf("instance %s: an empty test name", t.InstanceID)
			}
		}
		seen[t.InstanceID] = n
		t.Line = n
		tasks = append(tasks, t)
		return nil
	})
	return tasks, err
}

// LoadTasks reads a task file and resolves each task's repository: a path
// (absolute, or relative to the task file's directory), or owner/name
// under reposDir (as reposDir/owner/name or reposDir/owner__name). The
// repository must be a directory; whether it holds base_commit is found
// when a workspace is made.
func LoadTasks(path, reposDir string) ([]Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tasks, err := ParseTasks(f, path)
	if err != nil {
		return nil, err
	}
	base := filepath.Dir(path)
	for i := range tasks {
		t := &tasks[i]
		dir, err := resolveRepo(t.Repo, base, reposDir)
		if err != nil {
			return nil, &LineError{File: path, Line: t.Line, Err: fmt.Errorf("instance %s: %w", t.InstanceID, err)}
		}
		t.RepoDir = dir
	}
	return tasks, nil
}

// resolveRepo finds a task's repository.
func resolveRepo(repo, base, reposDir string) (string, error) {
	isDir := func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
	var tried []string
	try := func(p string) bool {
		abs, err := filepath.Abs(p)
		if err == nil {
			p = abs
		}
		tried = append(tried, p)
		return isDir(p)
	}
	if filepath.IsAbs(repo) {
		if try(repo) {
			return filepath.Clean(repo), nil
		}
		return "", fmt.Errorf("repository %s is not a directory", repo)
	}
	explicit := strings.HasPrefix(repo, "./") || strings.HasPrefix(repo, "../")
	owner, name, ok := strings.Cut(repo, "/")
	ownerName := !explicit && ok && owner != "" && name != "" && !strings.Contains(name, "/")
	if ownerName && reposDir != "" {
		for _, p := range []string{filepath.Join(reposDir, owner, name), filepath.Join(reposDir, owner+"__"+name)} {
			if try(p) {
				return tried[len(tried)-1], nil
			}
		}
	}
	if p := filepath.Join(base, filepath.FromSlash(repo)); try(p) {
		return tried[len(tried)-1], nil
	}
	msg := fmt.Sprintf("repository %q not found (looked in %s)", repo, strings.Join(tried, ", "))
	if ownerName && reposDir == "" {
		msg += "; give --repos DIR for owner/name repositories"
	}
	return "", errors.New(msg)
}

// Prediction is one line of a predictions file in SWE-bench's format.
type Prediction struct {
	InstanceID      string `json:"instance_id"`
	ModelNameOrPath string `json:"model_name_or_path"`
	ModelPatch      string `json:"model_patch"`
	Line            int    `json:"-"`
}

// ParsePredictions reads predictions from JSONL. instance_id and
// model_name_or_path are required; model_patch may be empty or null (an
// empty patch, graded like any other). An instance predicted twice by the
// same model is an error.
func ParsePredictions(r io.Reader, name string) ([]Prediction, error) {
	var preds []Prediction
	seen := map[[2]string]int{}
	err := eachLine(r, name, func(n int, line []byte) error {
		var p Prediction
		if err := decodeLine(line, &p); err != nil {
			return err
		}
		switch {
		case strings.TrimSpace(p.InstanceID) == "":
			return errors.New("instance_id is missing or empty")
		case strings.TrimSpace(p.ModelNameOrPath) == "":
			return fmt.Errorf("instance %s: model_name_or_path is missing or empty", p.InstanceID)
		}
		k := [2]string{p.InstanceID, p.ModelNameOrPath}
		if prev, ok := seen[k]; ok {
			return fmt.Errorf("instance %s of %s again (first on line %d)", p.InstanceID, p.ModelNameOrPath, prev)
		}
		seen[k] = n
		p.Line = n
		preds = append(preds, p)
		return nil
	})
	return preds, err
}

// eachLine calls fn with each non-blank line and its number; fn's error
// becomes a LineError.
func eachLine(r io.Reader, name string, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			if ferr := fn(n, line); ferr != nil {
				return &LineError{File: name, Line: n, Err: ferr}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
}

// foreignFormat says what a line is that is a JSON object without any of
// the fields only a task in SWE-bench's format (or Truss's additions to
// it) has, and what to do with it: a Multi-SWE-bench record (org, number
// and base), a HumanEvalFix problem (task_id and buggy_solution), a
// prediction (model_patch or model_name_or_path), else an object that
// lacks the required fields it names. It returns nil for a line that is
// not a JSON object or that holds one of those fields (a task, broken or
// not, whose own errors stand).
func foreignFormat(line []byte) error {
	taskKeys := []string{"base_commit", "problem_statement", "FAIL_TO_PASS", "PASS_TO_PASS",
		"environment_setup_commit", "hints_text", "test_cmd", "setup_cmd"}
	required := []string{"instance_id", "repo", "base_commit", "FAIL_TO_PASS"}
	var raw map[string]json.RawMessage
	if json.Unmarshal(line, &raw) != nil {
		return nil
	}
	has := func(keys ...string) bool {
		for _, k := range keys {
			if _, ok := raw[k]; !ok {
				return false
			}
		}
		return true
	}
	for _, k := range taskKeys {
		if has(k) {
			return nil
		}
	}
	switch {
	case has("org", "number", "base"):
		return errors.New("not a task in SWE-bench's format: this looks like a Multi-SWE-bench record (org, repo, number, base.sha): " +
			"import it first with `truss bench import multi-swe-bench FILE --out DIR`")
	case has("task_id", "buggy_solution"):
		return errors.New("not a task in SWE-bench's format: this looks like a HumanEvalFix/HumanEvalPack record (task_id, buggy_solution): " +
			"import it with `truss bench import humanevalfix FILE --out DIR`")
	case has("model_patch") || has("model_name_or_path"):
		return errors.New("not a task: this is a predictions file (instance_id, model_patch, model_name_or_path): " +
			"pass it as --predictions to `truss bench grade`, with the tasks as --tasks")
	}
	var missing []string
	for _, k := range required {
		if !has(k) {
			missing = append(missing, k)
		}
	}
	return fmt.Errorf("not a task in SWE-bench's format: missing %s", strings.Join(missing, ", "))
}

// flexibleFieldError names the field whose own decoder failed (encoding/json
// returns such errors without the field), else returns err.
func flexibleFieldError(line []byte, err error, fields ...string) error {
	var raw map[string]json.RawMessage
	if json.Unmarshal(line, &raw) != nil {
		return err
	}
	for _, f := range fields {
		v, ok := raw[f]
		if !ok {
			continue
		}
		var ferr error
		if f == "setup_cmd" {
			var c Commands
			ferr = json.Unmarshal(v, &c)
		} else {
			var l TestList
			ferr = json.Unmarshal(v, &l)
		}
		if ferr != nil {
			return fmt.Errorf("field %s: %v", f, ferr)
		}
	}
	return err
}

// decodeLine decodes one JSON object, saying where a syntax error is and
// which field has the wrong type.
func decodeLine(line []byte, v any) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("invalid JSON at column %d: %v", se.Offset, se)
		case errors.As(err, &te):
			return fmt.Errorf("field %s: want %s, not a JSON %s", te.Field, te.Type, te.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("invalid JSON: the object is cut short")
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}
