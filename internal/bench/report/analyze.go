// Package report analyses a benchmark's results directory (results.jsonl and
// the bench.json manifest) and renders the analysis as Markdown for the
// terminal and as a self-contained HTML page with SVG charts.
//
// The statistics (docs/bench.md, "Report and statistics"): per arm, the
// resolved rate — each task's repeats averaged, then averaged over tasks —
// with a Wilson 95 % interval over tasks; per pair of arms of the same model,
// the paired table and an exact McNemar test over (task, repeat) pairs, and
// the difference in resolved rate with a percentile bootstrap 95 % interval
// over tasks. Runs that ended with an error (a failure other than the
// model's work) are counted per arm and left out of every other figure.
package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/bench"
)

// Options tune the analysis; the zero value is the default.
type Options struct {
	// Resamples is the bootstrap's number of resamples (default 10,000).
	Resamples int
	// Seed seeds the bootstrap (default 1): the same results and seed give
	// the same intervals.
	Seed uint64
}

// DefaultResamples and DefaultSeed are the bootstrap's defaults.
const (
	DefaultResamples = 10000
	DefaultSeed      = 1
)

// Report is the analysis of a results directory.
type Report struct {
	// Dir is the results directory as given.
	Dir      string
	Manifest *Manifest
	// Arms in the manifest's order, then arms missing from it by name.
	Arms []ArmStats
	// Pairs compared: arms of the same provider and model, and every arm
	// the manifest does not describe with every other.
	Pairs []PairStats
	// Tasks by instance id, each with a cell per arm (in Arms' order).
	Tasks     []TaskRow
	Warnings  []string
	Resamples int
	Seed      uint64
	// Pages are the runs' session pages (truss ledger export --html) by
	// ledger directory, each a path relative to the HTML report; a run
	// with a page is linked to it rather than to its ledger directory.
	Pages map[string]string
}

// ArmStats are one arm's figures over its finished runs (runs without an
// error).
type ArmStats struct {
	Name string
	// Provider, Model and Surface come from the manifest ("" without one).
	Provider, Model, Surface string

	// Runs finished; RunErrors ended with an error and count nowhere else.
	Runs, RunErrors int
	// Tasks with at least one finished run.
	Tasks int
	// ResolvedRuns is the number of resolved runs; Rate the resolved rate
	// (each task's share of resolved repeats, averaged over tasks), Lo and
	// Hi its Wilson 95 % interval over tasks (all NaN when the arm finished
	// no task).
	ResolvedRuns int
	// FlaggedResolved counts the resolved runs whose grading flagged them
	// (bench.Result.Flagged): resolved by the tests, to be looked at.
	FlaggedResolved int
	Rate, Lo, Hi    float64
	// PatchFailed counts runs whose patch did not apply.
	PatchFailed int

	// CostUSD is the total; CostPerResolved the total divided by resolved
	// runs (NaN with none). TurnsPerRun is the mean over runs,
	// TurnsResolved the mean over resolved runs (NaN with none).
	CostUSD, CostPerResolved float64
	// CostUnknownRuns counts the runs whose model had no known prices
	// (their cost is not in CostUSD; CostPerResolved is NaN with any).
	CostUnknownRuns            int
	TurnsPerRun, TurnsResolved float64
	Tokens                     bench.Tokens
	// Mean seconds per run.
	WallS, ModelS, ToolS, HarnessS float64

	// Totals over runs.
	ToolCalls       map[string]int
	CapabilityCalls map[string]int
	Edits           bench.Edits
	Errors          bench.Errors
	StopReasons     map[string]int

	// Validation: runs that ran the tests (or validate) before finishing,
	// runs whose last such run passed, runs that finished failing, and
	// the total number of validation runs.
	RanTests, LastPassed, FinishedFailing, ValidationRuns int
}

// ToolCallsTotal is the number of tool calls over the arm's runs.
func (a *ArmStats) ToolCallsTotal() int { return sumValues(a.ToolCalls) }

// EditsTotal is the number of file edits over the arm's runs.
func (a *ArmStats) EditsTotal() int { return a.Edits.Editor + a.Edits.Patch + a.Edits.Shell }

// PairStats compare two arms on the tasks both finished.
type PairStats struct {
	A, B string
	// Model is "provider:model" when the manifest says both arms run it,
	// "" when the pair is compared for want of a manifest entry.
	Model string
	// The paired table over (task, repeat) pairs both arms finished.
	Both, OnlyA, OnlyB, Neither int
	// P is the exact McNemar two-sided p-value of OnlyA against OnlyB
	// (NaN when the arms have no (task, repeat) pair in common).
	P float64
	// Tasks both arms finished; RateA and RateB their resolved rates on
	// those tasks; Diff = RateA − RateB with its bootstrap 95 % interval
	// [Lo, Hi] over tasks (NaN with no common task).
	Tasks        int
	RateA, RateB float64
	Diff, Lo, Hi float64
}

// Disagreement explains, when the exact test and the interval disagree at
// the 5 % level (one calls the difference significant, the other does
// not), why they do and which to believe; "" when they agree or either is
// missing.
func (p *PairStats) Disagreement() string {
	if math.IsNaN(p.P) || math.IsNaN(p.Lo) || math.IsNaN(p.Hi) {
		return ""
	}
	test := p.P < 0.05
	ci := p.Lo > 0 || p.Hi < 0
	pairs := p.Both + p.OnlyA + p.OnlyB + p.Neither
	switch {
	case test == ci:
		return ""
	case test && pairs > p.Tasks:
		return fmt.Sprintf("McNemar's p is below 0.05 but the interval holds zero. The test counts each of the %d (task, repeat) pairs as independent, and repeats of one task are not: it overstates the evidence of %d tasks. The interval, over tasks, is the one to believe; run more tasks rather than more repeats.", pairs, p.Tasks)
	case test:
		return fmt.Sprintf("McNemar's p is below 0.05 but the interval holds zero: on %d tasks the percentile bootstrap is coarse, its bounds falling on the few values a resample can take. The exact test is the one to believe here.", p.Tasks)
	default:
		return fmt.Sprintf("The interval leaves out zero but McNemar's p is %s: with %d tasks the percentile bootstrap is too narrow (a resample cannot vary more than the %d tasks do), while the exact test needs more discordant pairs (%d and %d here) to call a difference. The exact test is the one to believe: run more tasks.", pvalue(p.P), p.Tasks, p.Tasks, p.OnlyA, p.OnlyB)
	}
}

// TaskRow is one task's runs, a cell per arm.
type TaskRow struct {
	InstanceID string
	Cells      []TaskCell
}

// TaskCell is one arm's runs of a task, by repeat.
type TaskCell struct {
	Runs []RunRef
}

// RunRef is one run, as the per-task table shows and links it.
type RunRef struct {
	Repeat       int
	Resolved     bool
	PatchApplied bool
	// Error is the run's error, if it ended with one.
	Error   string
	Turns   int
	CostUSD float64
	// Ledger is the run's ledger: its directory (absolute) and root.
	Ledger bench.LedgerRef
	// VerdictSource is where the grading's verdicts came from (go test
	// -json, pytest, junit, exit status, swebench:PARSER; "" for a run
	// never graded) and GradeNotes what the grader noted on them
	// (bench.Result's verdict_source and grade_notes).
	VerdictSource string
	GradeNotes    []string
	// Flags says why the run is flagged (bench.Result.Flags; "" when it
	// is not).
	Flags string
}

// Analyze computes the report of loaded results.
func Analyze(d *Data, opt Options) *Report {
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	if opt.Seed == 0 {
		opt.Seed = DefaultSeed
	}
	rep := &Report{Dir: d.Dir, Manifest: d.Manifest, Warnings: slices.Clone(d.Warnings), Resamples: opt.Resamples, Seed: opt.Seed}

	// Group: arm → task → runs.
	byArm := map[string]map[string][]bench.Result{}
	taskSet := map[string]bool{}
	for _, r := range d.Results {
		if byArm[r.Arm] == nil {
			byArm[r.Arm] = map[string][]bench.Result{}
		}
		byArm[r.Arm][r.InstanceID] = append(byArm[r.Arm][r.InstanceID], r)
		taskSet[r.InstanceID] = true
	}

	// Arm order and models.
	known := map[string]Arm{}
	var names []string
	if d.Manifest != nil {
		for _, a := range d.Manifest.Arms {
			known[a.Name] = a
			if byArm[a.Name] != nil {
				names = append(names, a.Name)
			} else {
				rep.Warnings = append(rep.Warnings, "arm "+quote(a.Name)+" of bench.json has no results")
			}
		}
	}
	var unknown []string
	for name := range byArm {
		if _, ok := known[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if d.Manifest != nil && len(unknown) > 0 {
		rep.Warnings = append(rep.Warnings, "bench.json does not describe "+quoteList(unknown)+": compared with every other arm")
	}
	names = append(names, unknown...)

	tasks := make([]string, 0, len(taskSet))
	for id := range taskSet {
		tasks = append(tasks, id)
	}
	slices.Sort(tasks)

	// Per arm: each task's share of resolved finished runs.
	shares := make([]map[string]float64, len(names))
	for i, name := range names {
		a := known[name]
		st := ArmStats{Name: name, Provider: a.Provider, Model: a.Model, Surface: a.Surface,
			ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}, StopReasons: map[string]int{}}
		shares[i] = map[string]float64{}
		var turnsResolved, wall, model, tool, harness float64
		turns := 0
		for _, id := range tasks {
			runs := byArm[name][id]
			done, resolved := 0, 0
			for _, r := range runs {
				if r.Error != "" {
					st.RunErrors++
					continue
				}
				done++
				st.Runs++
				if r.Resolved {
					resolved++
					turnsResolved += float64(r.Turns)
				}
				if !r.PatchApplied {
					st.PatchFailed++
				}
				st.CostUSD += r.CostUSD
				if r.CostUnknown {
					st.CostUnknownRuns++
				}
				if r.Resolved && r.Flagged() {
					st.FlaggedResolved++
				}
				turns += r.Turns
				st.Tokens.Input += r.Tokens.Input
				st.Tokens.Output += r.Tokens.Output
				st.Tokens.CacheRead += r.Tokens.CacheRead
				st.Tokens.CacheWrite += r.Tokens.CacheWrite
				wall += r.WallS
				model += r.ModelS
				tool += r.ToolS
				harness += r.HarnessS
				addCounts(st.ToolCalls, r.ToolCalls)
				addCounts(st.CapabilityCalls, r.CapabilityCalls)
				st.Edits.Editor += r.Edits.Editor
				st.Edits.Patch += r.Edits.Patch
				st.Edits.Shell += r.Edits.Shell
				st.Errors.Tool += r.Errors.Tool
				st.Errors.InvalidCalls += r.Errors.InvalidCalls
				st.Errors.Retries += r.Errors.Retries
				st.StopReasons[cmp.Or(r.StopReason, "(none)")]++
				if r.Validation.RanTests {
					st.RanTests++
				}
				if r.Validation.LastPassed {
					st.LastPassed++
				}
				if r.Validation.FinishedFailing {
					st.FinishedFailing++
				}
				st.ValidationRuns += r.Validation.Runs
			}
			if done > 0 {
				st.Tasks++
				st.ResolvedRuns += resolved
				shares[i][id] = float64(resolved) / float64(done)
			}
		}
		st.Rate, st.Lo, st.Hi = math.NaN(), math.NaN(), math.NaN()
		if st.Tasks > 0 {
			sum := 0.0
			for _, s := range shares[i] {
				sum += s
			}
			st.Rate = sum / float64(st.Tasks)
			st.Lo, st.Hi = Wilson(st.Rate, st.Tasks, Z95)
		}
		st.CostPerResolved, st.TurnsResolved = math.NaN(), math.NaN()
		if st.ResolvedRuns > 0 {
			st.CostPerResolved = st.CostUSD / float64(st.ResolvedRuns)
			if st.CostUnknownRuns > 0 {
				st.CostPerResolved = math.NaN()
			}
			st.TurnsResolved = turnsResolved / float64(st.ResolvedRuns)
		}
		st.TurnsPerRun, st.WallS, st.ModelS, st.ToolS, st.HarnessS = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		if st.Runs > 0 {
			n := float64(st.Runs)
			st.TurnsPerRun, st.WallS, st.ModelS, st.ToolS, st.HarnessS = float64(turns)/n, wall/n, model/n, tool/n, harness/n
		}
		rep.Arms = append(rep.Arms, st)
	}

	// Pairs.
	for i := range names {
		for j := i + 1; j < len(names); j++ {
			ai, iok := known[names[i]]
			aj, jok := known[names[j]]
			model := ""
			if iok && jok {
				if ai.Provider != aj.Provider || ai.Model != aj.Model {
					continue
				}
				model = ai.Provider + ":" + ai.Model
			}
			rep.Pairs = append(rep.Pairs, pair(names[i], names[j], model, byArm, shares[i], shares[j], tasks, opt))
		}
	}

	// Per-task table.
	for _, id := range tasks {
		row := TaskRow{InstanceID: id, Cells: make([]TaskCell, len(names))}
		for i, name := range names {
			runs := slices.Clone(byArm[name][id])
			slices.SortFunc(runs, func(a, b bench.Result) int { return cmp.Compare(a.Repeat, b.Repeat) })
			for _, r := range runs {
				row.Cells[i].Runs = append(row.Cells[i].Runs, RunRef{Repeat: r.Repeat, Resolved: r.Resolved, PatchApplied: r.PatchApplied,
					Error: r.Error, Turns: r.Turns, CostUSD: r.CostUSD, Ledger: r.Ledger, VerdictSource: r.VerdictSource, GradeNotes: r.GradeNotes, Flags: r.Flags()})
			}
		}
		rep.Tasks = append(rep.Tasks, row)
	}
	return rep
}

// pair compares arms a and b on the tasks both finished.
func pair(a, b, model string, byArm map[string]map[string][]bench.Result, sa, sb map[string]float64, tasks []string, opt Options) PairStats {
	p := PairStats{A: a, B: b, Model: model}
	var xa, xb []float64
	for _, id := range tasks {
		ra, okA := sa[id]
		rb, okB := sb[id]
		if !okA || !okB {
			continue
		}
		xa, xb = append(xa, ra), append(xb, rb)
		// Repeat r of a against repeat r of b.
		resolvedB := map[int]bool{}
		for _, r := range byArm[b][id] {
			if r.Error == "" {
				resolvedB[r.Repeat] = r.Resolved
			}
		}
		for _, r := range byArm[a][id] {
			if r.Error != "" {
				continue
			}
			rb, ok := resolvedB[r.Repeat]
			if !ok {
				continue
			}
			switch {
			case r.Resolved && rb:
				p.Both++
			case r.Resolved:
				p.OnlyA++
			case rb:
				p.OnlyB++
			default:
				p.Neither++
			}
		}
	}
	p.Tasks = len(xa)
	p.P = math.NaN() // no pair: nothing to test
	if p.Both+p.OnlyA+p.OnlyB+p.Neither > 0 {
		p.P = McNemarExact(p.OnlyA, p.OnlyB)
	}
	p.RateA, p.RateB, p.Diff = math.NaN(), math.NaN(), math.NaN()
	p.Lo, p.Hi = BootstrapDiff(xa, xb, opt.Resamples, opt.Seed, 0.05)
	if p.Tasks > 0 {
		p.RateA, p.RateB = mean(xa), mean(xb)
		p.Diff = p.RateA - p.RateB
	}
	return p
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

func addCounts(dst, src map[string]int) {
	for k, v := range src {
		dst[k] += v
	}
}

func sumValues(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// quote quotes an untrusted name for a warning; renderers escape it again
// for their medium.
func quote(s string) string { return "“" + s + "”" }

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	return strings.Join(q, ", ")
}

// keyed is a name and a count, for ordered tables and charts.
type keyed struct {
	Key   string
	Count int
}

// union returns the keys of the given count maps ordered by total count,
// largest first, then by key.
func union(maps ...map[string]int) []keyed {
	tot := map[string]int{}
	for _, m := range maps {
		addCounts(tot, m)
	}
	out := make([]keyed, 0, len(tot))
	for k, v := range tot {
		out = append(out, keyed{k, v})
	}
	slices.SortFunc(out, func(a, b keyed) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// toolKeys and capabilityKeys order the rows of those tables over every
// arm.
func (r *Report) toolKeys() []keyed {
	return r.keys(func(a *ArmStats) map[string]int { return a.ToolCalls })
}

func (r *Report) capabilityKeys() []keyed {
	return r.keys(func(a *ArmStats) map[string]int { return a.CapabilityCalls })
}

func (r *Report) keys(f func(*ArmStats) map[string]int) []keyed {
	ms := make([]map[string]int, len(r.Arms))
	for i := range r.Arms {
		ms[i] = f(&r.Arms[i])
	}
	return union(ms...)
}
