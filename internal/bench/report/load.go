package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/trussdev/truss/internal/bench"

	"github.com/trussdev/truss/internal/hostfs"
)

// ResultsFile and ManifestFile are the names of the results and of the
// manifest in a results directory.
const (
	ResultsFile  = "results.jsonl"
	ManifestFile = "bench.json"
)

// ManifestVersion is the manifest format this package writes and reads.
const ManifestVersion = 1

// Manifest describes the arms of a benchmark run; `truss bench run` writes
// it as DIR/bench.json (WriteManifest) before its first run. The report
// reads it to know which arms share a model, and so which pairs of arms to
// compare. Without a manifest (a `truss bench grade` directory) every pair
// of arms is compared.
type Manifest struct {
	// Version is ManifestVersion.
	Version int `json:"version"`
	// Arms in the order the run was asked for; the report lists them so.
	Arms []Arm `json:"arms"`
	// Tasks is the task file the run read, as given.
	Tasks string `json:"tasks,omitempty"`
	// Repeats is the number of runs per task and arm.
	Repeats int `json:"repeats,omitempty"`
	// Settings are the run's settings shared by every arm (budgets, system
	// prompt digest, sandbox, …), name → value, shown in the report as
	// recorded.
	Settings map[string]string `json:"settings,omitempty"`
}

// Arm is one arm of a run: the name in results.jsonl's "arm" and what it
// runs. Arms with the same Provider and Model are compared pairwise.
type Arm struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Surface is the tool surface (generic, anthropic, openai, auto, …).
	Surface string `json:"surface,omitempty"`
}

// ParseManifest decodes and checks a manifest: the version is known, every
// arm has a name, a provider and a model, and names are unique.
func ParseManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	if dec.More() {
		return nil, errors.New("manifest: more than one JSON value")
	}
	if m.Version != ManifestVersion {
		return nil, fmt.Errorf("manifest: version %d, this truss reads version %d", m.Version, ManifestVersion)
	}
	seen := make(map[string]bool, len(m.Arms))
	for i, a := range m.Arms {
		switch {
		case a.Name == "":
			return nil, fmt.Errorf("manifest: arm %d has no name", i+1)
		case a.Provider == "" || a.Model == "":
			return nil, fmt.Errorf("manifest: arm %q needs a provider and a model", a.Name)
		case seen[a.Name]:
			return nil, fmt.Errorf("manifest: arm %q is listed twice", a.Name)
		}
		seen[a.Name] = true
	}
	return &m, nil
}

// ReadManifest reads DIR/bench.json. When there is none the error wraps
// fs.ErrNotExist.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// WriteManifest writes m as DIR/bench.json atomically (a temporary file in
// DIR renamed over it), after the checks ParseManifest makes. Version 0 is
// taken as ManifestVersion.
func WriteManifest(dir string, m Manifest) error {
	if m.Version == 0 {
		m.Version = ManifestVersion
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if _, err := ParseManifest(data); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, ManifestFile), append(data, '\n'))
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, synced and renamed over path: readers see the old file or the
// new one, never a part.
func writeFileAtomic(path string, data []byte) error {
	return hostfs.WriteFileAtomic(path, data, 0o644)
}

// LineError is a line of results.jsonl that is not a result.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ReadResults reads results.jsonl: one JSON object per line, each a
// bench.Result with an instance_id, an arm and a repeat ≥ 1. Blank lines
// are skipped. A last line without its newline that does not decode is the
// trace of an interrupted write: it is dropped and reported in warnings.
// Any other bad line is a *LineError.
func ReadResults(r io.Reader) (results []bench.Result, warnings []string, err error) {
	br := bufio.NewReader(r)
	for line := 1; ; line++ {
		raw, rerr := br.ReadBytes('\n')
		if rerr != nil && rerr != io.EOF {
			return nil, nil, rerr
		}
		torn := rerr == io.EOF // no newline: the file's last line
		if len(bytes.TrimSpace(raw)) > 0 {
			res, perr := parseResult(raw)
			switch {
			case perr == nil:
				results = append(results, res)
			case torn:
				warnings = append(warnings, fmt.Sprintf("line %d: dropped an incomplete last line (%d bytes without a newline, an interrupted write)", line, len(raw)))
			default:
				return nil, nil, &LineError{Line: line, Err: perr}
			}
		}
		if rerr == io.EOF {
			return results, warnings, nil
		}
	}
}

func parseResult(raw []byte) (bench.Result, error) {
	var res bench.Result
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&res); err != nil {
		return res, err
	}
	if dec.More() {
		return res, errors.New("more than one JSON value on the line")
	}
	switch {
	case res.InstanceID == "":
		return res, errors.New(`no "instance_id"`)
	case res.Arm == "":
		return res, errors.New(`no "arm"`)
	case res.Repeat < 1:
		return res, fmt.Errorf(`"repeat" is %d, repeats count from 1`, res.Repeat)
	}
	return res, nil
}

// Data is what a results directory holds.
type Data struct {
	// Dir is the results directory as given.
	Dir string
	// Results in file order, a later line for the same instance, arm and
	// repeat replacing the earlier one.
	Results []bench.Result
	// Manifest is nil when the directory has none.
	Manifest *Manifest
	// Warnings about the input that did not stop the report.
	Warnings []string
}

// Load reads a results directory: DIR/results.jsonl (required, with at
// least one result) and DIR/bench.json (optional). Relative ledger
// directories are taken relative to DIR and made absolute.
func Load(dir string) (*Data, error) {
	path := filepath.Join(dir, ResultsFile)
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no results file (is %s a directory written by truss bench run or grade?)", path, dir)
		}
		return nil, err
	}
	defer f.Close()
	results, warnings, err := ReadResults(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(results) == 0 {
		return nil, fmt.Errorf("%s: no results yet", path)
	}
	d := &Data{Dir: dir, Warnings: warnings}
	m, err := ReadManifest(dir)
	switch {
	case err == nil:
		d.Manifest = m
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	d.Results, d.Warnings = dedupe(results, d.Warnings)
	for i := range d.Results {
		l := &d.Results[i].Ledger
		if l.Dir != "" && !filepath.IsAbs(l.Dir) {
			l.Dir = filepath.Join(abs, l.Dir)
		}
	}
	return d, nil
}

// dedupe keeps the last result of each (instance, arm, repeat), in the place
// of the first, and says how many were replaced.
func dedupe(results []bench.Result, warnings []string) ([]bench.Result, []string) {
	type key struct {
		id, arm string
		repeat  int
	}
	at := make(map[key]int, len(results))
	out := results[:0:0]
	replaced := 0
	for _, r := range results {
		k := key{r.InstanceID, r.Arm, r.Repeat}
		if i, ok := at[k]; ok {
			out[i] = r
			replaced++
			continue
		}
		at[k] = len(out)
		out = append(out, r)
	}
	if replaced > 0 {
		warnings = append(warnings, fmt.Sprintf("%d %s repeated an earlier line's instance, arm and repeat; the later line counts", replaced, plural(replaced, "line", "lines")))
	}
	return out, warnings
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
