package report

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/trussdev/truss/internal/bench"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// sampleDir is a results directory with three arms (two of one model), two
// repeats, a run error, a torn last line and hostile names.
const sampleDir = "testdata/sample"

func loadSample(t testing.TB) *Report {
	t.Helper()
	d, err := Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	return Analyze(d, Options{})
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (go test -update rewrites it); got:\n%s", path, got)
	}
}

func TestGoldenMarkdown(t *testing.T) {
	var buf bytes.Buffer
	if err := loadSample(t).Markdown(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "sample.md", buf.Bytes())
}

func TestGoldenHTML(t *testing.T) {
	var buf bytes.Buffer
	if err := loadSample(t).HTML(&buf); err != nil {
		t.Fatal(err)
	}
	golden(t, "sample.html", buf.Bytes())
}

// TestSampleFigures checks the analysis of the sample against counts made
// directly from its lines.
func TestSampleFigures(t *testing.T) {
	d, err := Load(sampleDir)
	if err != nil {
		t.Fatal(err)
	}
	rep := Analyze(d, Options{})
	if len(rep.Arms) != 3 || rep.Arms[0].Name != "typed" || rep.Arms[1].Name != "generic" {
		t.Fatalf("arms not in the manifest's order: %+v", rep.Arms)
	}
	if len(rep.Pairs) != 1 || rep.Pairs[0].A != "typed" || rep.Pairs[0].B != "generic" || rep.Pairs[0].Model != "sim:sim-claude" {
		t.Fatalf("want the one pair of the same model, got %+v", rep.Pairs)
	}
	if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "incomplete last line") {
		t.Errorf("warnings %q, want the torn line's", d.Warnings)
	}
	for _, a := range rep.Arms {
		runs, errs, resolved := 0, 0, 0
		for _, r := range d.Results {
			if r.Arm != a.Name {
				continue
			}
			if r.Error != "" {
				errs++
				continue
			}
			runs++
			if r.Resolved {
				resolved++
			}
		}
		if a.Runs != runs || a.RunErrors != errs || a.ResolvedRuns != resolved {
			t.Errorf("%s: runs %d errors %d resolved %d, want %d %d %d", a.Name, a.Runs, a.RunErrors, a.ResolvedRuns, runs, errs, resolved)
		}
		if a.Lo > a.Rate || a.Hi < a.Rate {
			t.Errorf("%s: interval [%v, %v] misses the rate %v", a.Name, a.Lo, a.Hi, a.Rate)
		}
	}
	p := rep.Pairs[0]
	if n := p.Both + p.OnlyA + p.OnlyB + p.Neither; n != 15 {
		t.Errorf("paired table counts %d pairs, want 15 (16 less the generic arm's run error)", n)
	}
	if !(p.Lo <= p.Diff && p.Diff <= p.Hi) {
		t.Errorf("Δ %v outside its interval [%v, %v]", p.Diff, p.Lo, p.Hi)
	}
}

func result(id, arm string, repeat int, resolved bool) bench.Result {
	return bench.Result{InstanceID: id, Arm: arm, Repeat: repeat, Resolved: resolved, PatchApplied: true}
}

// TestAnalyzeRepeats: a task's repeats are averaged before the tasks are,
// and the paired table pairs repeat r with repeat r.
func TestAnalyzeRepeats(t *testing.T) {
	d := &Data{Dir: "x", Results: []bench.Result{
		result("t1", "a", 1, true), result("t1", "a", 2, true), result("t1", "a", 3, true),
		result("t2", "a", 1, false),
		result("t1", "b", 1, true), result("t1", "b", 2, false), result("t1", "b", 3, false),
		result("t2", "b", 1, true),
		result("t3", "b", 1, true), // only b: not in the pair
	}}
	rep := Analyze(d, Options{})
	// No manifest: arms by name, every pair compared.
	a, b := rep.Arms[0], rep.Arms[1]
	if a.Name != "a" || a.Rate != 0.5 || a.Tasks != 2 {
		t.Errorf("a: %s rate %v over %d tasks, want 0.5 over 2", a.Name, a.Rate, a.Tasks)
	}
	if want := (1.0/3 + 1 + 1) / 3; math.Abs(b.Rate-want) > 1e-12 {
		t.Errorf("b: rate %v, want %v", b.Rate, want)
	}
	if lo, hi := Wilson(0.5, 2, Z95); a.Lo != lo || a.Hi != hi {
		t.Errorf("a's interval is over runs, not tasks")
	}
	p := rep.Pairs[0]
	if p.Both != 1 || p.OnlyA != 2 || p.OnlyB != 1 || p.Neither != 0 || p.Tasks != 2 {
		t.Errorf("pair %+v, want both 1, only A 2, only B 1, neither 0 over 2 tasks", p)
	}
	if want := 0.5 - (1.0/3+1)/2; math.Abs(p.Diff-want) > 1e-12 {
		t.Errorf("Δ %v, want %v", p.Diff, want)
	}
}

func TestAnalyzePairsByModel(t *testing.T) {
	d := &Data{Dir: "x", Manifest: &Manifest{Version: 1, Arms: []Arm{
		{Name: "c", Provider: "anthropic", Model: "m1"},
		{Name: "a", Provider: "anthropic", Model: "m1", Surface: "generic"},
		{Name: "b", Provider: "openai", Model: "m1"},
		{Name: "never", Provider: "openai", Model: "m1"},
	}}, Results: []bench.Result{
		result("t", "a", 1, true), result("t", "b", 1, true), result("t", "c", 1, false), result("t", "z", 1, false),
	}}
	rep := Analyze(d, Options{})
	var names []string
	for _, a := range rep.Arms {
		names = append(names, a.Name)
	}
	if got := strings.Join(names, " "); got != "c a b z" {
		t.Errorf("arms %q, want the manifest's order then the others: c a b z", got)
	}
	var pairs []string
	for _, p := range rep.Pairs {
		pairs = append(pairs, p.A+"-"+p.B+"@"+p.Model)
	}
	// c and a share anthropic:m1; b is another provider's m1; z is not in
	// the manifest and is compared with every arm.
	if got := strings.Join(pairs, " "); got != "c-a@anthropic:m1 c-z@ a-z@ b-z@" {
		t.Errorf("pairs %q", got)
	}
	if len(rep.Warnings) != 2 {
		t.Errorf("warnings %q, want one for the arm without results and one for z", rep.Warnings)
	}
}

func TestBootstrapDeterministicReport(t *testing.T) {
	a, b := loadSample(t), loadSample(t)
	if a.Pairs[0].Lo != b.Pairs[0].Lo || a.Pairs[0].Hi != b.Pairs[0].Hi {
		t.Fatal("two analyses of the same results differ")
	}
	d, _ := Load(sampleDir)
	c := Analyze(d, Options{Seed: 99})
	if c.Seed != 99 || c.Resamples != DefaultResamples {
		t.Errorf("options not recorded: seed %d resamples %d", c.Seed, c.Resamples)
	}
}

func TestReadResults(t *testing.T) {
	good := `{"instance_id":"a","arm":"x","repeat":1,"resolved":true}`
	tests := []struct {
		name     string
		in       string
		n        int
		warnings int
		err      string
	}{
		{"one line", good + "\n", 1, 0, ""},
		{"no final newline but whole", good, 1, 0, ""},
		{"blank lines", "\n" + good + "\n\n" + good + "\n", 2, 0, ""},
		{"torn last line", good + "\n" + `{"instance_id":"b","ar`, 1, 1, ""},
		{"torn line of spaces", good + "\n   ", 1, 0, ""},
		{"bad line in the middle", good + "\n{\"instance_id\":\n" + good + "\n", 0, 0, "line 2:"},
		{"bad complete last line", good + "\n{oops}\n", 0, 0, "line 2:"},
		{"no instance", `{"arm":"x","repeat":1}` + "\n", 0, 0, `line 1: no "instance_id"`},
		{"no arm", `{"instance_id":"a","repeat":1}` + "\n", 0, 0, `line 1: no "arm"`},
		{"repeat zero", `{"instance_id":"a","arm":"x"}` + "\n", 0, 0, `"repeat" is 0`},
		{"wrong type", `{"instance_id":"a","arm":"x","repeat":"1"}` + "\n", 0, 0, "line 1:"},
		{"two values", good + good + "\n", 0, 0, "more than one JSON value"},
		{"empty", "", 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, warn, err := ReadResults(strings.NewReader(tt.in))
			if tt.err != "" {
				var le *LineError
				if err == nil || !strings.Contains(err.Error(), tt.err) || !errors.As(err, &le) {
					t.Fatalf("err %v, want a *LineError containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != tt.n || len(warn) != tt.warnings {
				t.Errorf("%d results, %d warnings (%q); want %d, %d", len(res), len(warn), warn, tt.n, tt.warnings)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	write := func(t *testing.T, dir, name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("missing results", func(t *testing.T) {
		_, err := Load(t.TempDir())
		if err == nil || !strings.Contains(err.Error(), "no results file") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("empty results", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, ResultsFile, "")
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "no results yet") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("bad line names file and line", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, ResultsFile, "{}\n")
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, ResultsFile)+": line 1:") {
			t.Errorf("err %v", err)
		}
	})
	t.Run("bad manifest", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, ResultsFile, `{"instance_id":"a","arm":"x","repeat":1}`+"\n")
		write(t, dir, ManifestFile, `{"version":1,"arms":[{"name":"x"}]}`)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), `arm "x" needs a provider and a model`) {
			t.Errorf("err %v", err)
		}
	})
	t.Run("relative ledgers and duplicates", func(t *testing.T) {
		dir := t.TempDir()
		write(t, dir, ResultsFile, `{"instance_id":"a","arm":"x","repeat":1,"ledger":{"dir":"runs/1/ledger"}}`+"\n"+
			`{"instance_id":"a","arm":"x","repeat":1,"resolved":true,"ledger":{"dir":"runs/1b/ledger"}}`+"\n")
		d, err := Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Results) != 1 || !d.Results[0].Resolved || d.Results[0].Ledger.Dir != filepath.Join(dir, "runs/1b/ledger") {
			t.Errorf("results %+v", d.Results)
		}
		if len(d.Warnings) != 1 || !strings.Contains(d.Warnings[0], "later line counts") {
			t.Errorf("warnings %q", d.Warnings)
		}
		if d.Manifest != nil {
			t.Errorf("manifest %+v without a file", d.Manifest)
		}
	})
}

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{Arms: []Arm{{Name: "typed", Provider: "sim", Model: "sim-claude", Surface: "anthropic"}}, Repeats: 3,
		Settings: map[string]string{"max_turns": "40"}}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != ManifestVersion || got.Arms[0] != m.Arms[0] || got.Repeats != 3 || got.Settings["max_turns"] != "40" {
		t.Errorf("read back %+v", got)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("the directory holds %d files, want only %s", len(entries), ManifestFile)
	}
	if err := WriteManifest(dir, Manifest{Arms: []Arm{{Name: "a", Provider: "p", Model: "m"}, {Name: "a", Provider: "p", Model: "m"}}}); err == nil {
		t.Error("a manifest with a name twice was written")
	}
	if _, err := ReadManifest(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("no manifest: err %v, want fs.ErrNotExist", err)
	}
	for _, bad := range []string{`{"version":2,"arms":[]}`, `{"version":1,"arms":[],"extra":1}`, `{"version":1}{}`, `[]`} {
		if _, err := ParseManifest([]byte(bad)); err == nil {
			t.Errorf("ParseManifest(%s) accepted it", bad)
		}
	}
}

// hostile are the sample's untrusted names, none of which may reach either
// output as markup.
var hostile = []string{`<script>`, `<img src=x onerror=alert(1)>`, "\x1b[31m"}

func TestEscaping(t *testing.T) {
	rep := loadSample(t)
	var md, page bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, h := range hostile {
		if strings.Contains(md.String(), h) {
			t.Errorf("Markdown holds %q unescaped", h)
		}
		if strings.Contains(page.String(), h) {
			t.Errorf("HTML holds %q unescaped", h)
		}
	}
	for _, line := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(line, "| evil") {
			// The instance id's "|" must not add a column.
			cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
			if cells != 5 && cells != 11 {
				t.Errorf("row %q has %d separators", line, cells)
			}
		}
	}

	// The page parses to the elements it was written with: no script, no
	// image, no element from a name, no external reference.
	doc, err := html.Parse(bytes.NewReader(page.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "script", "img", "iframe", "object", "embed", "link", "base", "form":
				t.Errorf("the page holds a <%s> element", n.Data)
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") {
					t.Errorf("<%s> has an event handler %s", n.Data, a.Key)
				}
				if (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "file:///") {
					t.Errorf("<%s %s=%q> refers outside the page", n.Data, a.Key, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

func TestMdEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"django__django-11099", "django__django-11099"},
		{"_private_", `\_private\_`},
		{"a|b", `a\|b`},
		{"[x](y)", `\[x\]\(y\)`},
		{"<b>&amp;", `\<b\>\&amp;`},
		{"line\nbreak", "line break"},
		{"**bold** `code`", `\*\*bold\*\* \` + "`" + `code\` + "`"},
		{"__init__", `\_\_init\_\_`},
		{"a_b_c", "a_b_c"},
	}
	for _, tt := range tests {
		if got := mdEscape(tt.in); got != tt.want {
			t.Errorf("mdEscape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLedgerURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"/var/lib/truss/l", "file:///var/lib/truss/l"},
		{"/a b/(x)[y]<z>\"'", "file:///a%20b/%28x%29%5By%5D%3Cz%3E%22%27"},
	}
	for _, tt := range tests {
		if got := ledgerURL(tt.in); got != tt.want {
			t.Errorf("ledgerURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzReadResults(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(sampleDir, ResultsFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"instance_id":"a","arm":"x","repeat":1}`))
	f.Add([]byte("\n\n{"))
	f.Fuzz(func(t *testing.T, in []byte) {
		res, _, err := ReadResults(bytes.NewReader(in))
		if err != nil {
			return
		}
		for _, r := range res {
			if r.InstanceID == "" || r.Arm == "" || r.Repeat < 1 {
				t.Fatalf("accepted an invalid result %+v", r)
			}
		}
		// Whatever is read renders.
		if len(res) > 0 {
			rep := Analyze(&Data{Dir: "d", Results: res}, Options{Resamples: 50})
			if err := rep.Markdown(&bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			var page bytes.Buffer
			if err := rep.HTML(&page); err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(page.Bytes(), []byte("NaN")) || bytes.Contains(page.Bytes(), []byte("Inf")) {
				t.Fatal("the page holds a NaN or an infinite number")
			}
		}
	})
}

// TestNoFinishedRuns: an arm whose every run failed, and a pair with no
// task in common, render dashes, never NaN.
func TestNoFinishedRuns(t *testing.T) {
	failed := result("t1", "b", 1, false)
	failed.Error = "checkout failed"
	rep := Analyze(&Data{Dir: "d", Results: []bench.Result{result("t1", "a", 1, true), failed, result("t2", "c", 1, true)}}, Options{})
	var md, page bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{md.String(), page.String()} {
		if strings.Contains(out, "NaN") || strings.Contains(out, "Inf") {
			t.Errorf("output holds NaN:\n%s", out)
		}
	}
	if !strings.Contains(md.String(), "| b | — | — | 0 | 0 | 0 | — | — | — | — | — | 1 |") {
		t.Errorf("the failed arm's row is not all dashes:\n%s", md.String())
	}
	// No calls and no edits anywhere: only the resolved chart is drawn.
	if n := strings.Count(page.String(), "<figure"); n != 1 {
		t.Errorf("%d charts for results without behaviour, want the resolved rate's alone", n)
	}
	// No common task: nothing was tested, and the p-value says so.
	for _, p := range rep.Pairs {
		if p.Tasks != 0 || !math.IsNaN(p.Diff) || !math.IsNaN(p.P) {
			t.Errorf("pair %s-%s: %+v", p.A, p.B, p)
		}
	}
	if !strings.Contains(md.String(), "| a | b | — | 0 | 0 | 0 | 0 | 0 | — | — | — |") {
		t.Errorf("a pair without a common task does not show its p-value as a dash:\n%s", md.String())
	}
}

// TestDisagreement: when the exact test and the bootstrap interval
// disagree, the report says why and which to believe.
func TestDisagreement(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    PairStats
		want string // "" for no note
	}{
		{"agree, both significant", PairStats{OnlyA: 10, P: 0.002, Tasks: 10, Lo: 0.4, Hi: 0.9}, ""},
		{"agree, neither", PairStats{OnlyA: 2, OnlyB: 1, P: 1, Tasks: 10, Lo: -0.2, Hi: 0.3}, ""},
		{"few tasks, narrow interval", PairStats{OnlyA: 3, P: 0.25, Tasks: 3, Lo: 1, Hi: 1}, "the percentile bootstrap is too narrow"},
		{"repeats counted as pairs", PairStats{OnlyA: 9, Both: 1, P: 0.0039, Tasks: 2, Lo: -0.5, Hi: 1}, "repeats of one task are not"},
		{"no test", PairStats{P: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.p.Disagreement()
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("Disagreement() = %q, want one holding %q", got, tc.want)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	data, err := os.ReadFile(filepath.Join(sampleDir, ManifestFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, in []byte) {
		m, err := ParseManifest(in)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, a := range m.Arms {
			if a.Name == "" || a.Provider == "" || a.Model == "" || seen[a.Name] {
				t.Fatalf("accepted an invalid arm %+v", a)
			}
			seen[a.Name] = true
		}
	})
}

// TestVerdictSourceShown: each run's verdict source and grade notes are in
// the runs table of both outputs, and a name's escape sequence is written
// out on the terminal (termsafe.Name), not dropped, so that two names
// never look alike.
func TestVerdictSourceShown(t *testing.T) {
	rep := loadSample(t)
	var md, page bytes.Buffer
	if err := rep.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := rep.HTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| verdicts from | grade notes |",
		`| typed | 1 | resolved | go test -json | TestTwo \(junit failed, go test -json passed\); note \\x1b\[2J\<b\>x\</b\> |`,
		`| swebench:django |`,
		`\*\\x1b\[31m |`,
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q", want)
		}
	}
	for _, want := range []string{`<th class="t">verdicts from</th>`, "go test -json", "TestTwo (junit failed, go test -json passed)", "verdicts from swebench:django"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}
