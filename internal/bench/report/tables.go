package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// table is one section of the report, rendered alike as Markdown and HTML.
type table struct {
	ID, Title, Note string
	Head            []string
	Rows            [][]cell
	// Empty is said instead of the table when it has no rows.
	Empty string
	// After are paragraphs said after the table (text of the results:
	// escaped).
	After []string
}

// cell is a table cell. Text comes from the results (untrusted) unless Own
// is set: Own text is the report's (numbers, marks) and has nothing
// to escape for Markdown. Link is a file: URL built by ledgerURL; Tip a
// tooltip (HTML only); Class styles the cell (HTML only).
type cell struct {
	Text  string
	Own   bool
	Link  string
	Tip   string
	Class string
	// Marks, when set, replace Text: a sequence of linked marks (the
	// per-task table's runs).
	Marks []markCell
}

// Left reports, per column, whether it holds names (aligned left) rather
// than numbers (aligned right): the first column always, and any column
// with a name from the results.
func (t table) Left() []bool {
	left := make([]bool, len(t.Head))
	for i := range left {
		left[i] = i == 0
		for _, row := range t.Rows {
			if i < len(row) && !row[i].Own {
				left[i] = true
				break
			}
		}
	}
	return left
}

// Classes are the cell's HTML classes: its Class, and "t" (text, aligned
// left) for a name from the results.
// hash marks a cell that holds a digest, which may break anywhere.
func hash(c cell) cell {
	c.Class = strings.TrimSpace(c.Class + " hash")
	return c
}

func (c cell) Classes() string {
	switch {
	case c.Own:
		return c.Class
	case c.Class == "":
		return "t"
	default:
		return c.Class + " t"
	}
}

type markCell struct {
	Mark, Link, Tip, Class string
}

func own(s string) cell { return cell{Text: s, Own: true} }
func ownf(format string, args ...any) cell {
	return cell{Text: fmt.Sprintf(format, args...), Own: true}
}
func name(s string) cell { return cell{Text: s} }

// tables returns the report's sections in order.
func (r *Report) tables() []table {
	var ts []table
	if m := r.Manifest; m != nil && (m.Tasks != "" || m.Repeats > 0 || len(m.Settings) > 0) {
		t := table{ID: "settings", Title: "Settings", Note: "Recorded in bench.json, the same for every arm.", Head: []string{"setting", "value"}}
		if m.Tasks != "" {
			t.Rows = append(t.Rows, []cell{own("tasks"), name(m.Tasks)})
		}
		if m.Repeats > 0 {
			t.Rows = append(t.Rows, []cell{own("repeats"), ownf("%d", m.Repeats)})
		}
		for _, k := range slices.Sorted(maps.Keys(m.Settings)) {
			t.Rows = append(t.Rows, []cell{name(k), name(m.Settings[k])})
		}
		ts = append(ts, t)
	}

	t := table{ID: "resolved", Title: "Resolved",
		Note: "Rate: each task's resolved share of its repeats, averaged over tasks; 95 % Wilson interval over tasks. Cost per resolved: all the arm's cost divided by its resolved runs.",
		Head: []string{"arm", "model", "surface", "tasks", "runs", "resolved runs", "rate", "95 % CI", "cost / resolved", "turns / run", "turns / resolved", "run errors"}}
	for _, a := range r.Arms {
		t.Rows = append(t.Rows, []cell{name(a.Name), modelCell(a), dash(a.Surface), ownf("%d", a.Tasks), ownf("%d", a.Runs), own(resolvedRuns(a)),
			own(pct(a.Rate)), own(interval(a.Lo, a.Hi)), own(usd(a.CostPerResolved)), own(num(a.TurnsPerRun)), own(num(a.TurnsResolved)), ownf("%d", a.RunErrors)})
	}
	ts = append(ts, t)

	t = table{ID: "pairs", Title: "Paired comparisons",
		Note:  fmt.Sprintf("Paired table over the (task, repeat) pairs both arms finished; exact McNemar test (two-sided binomial on the discordant pairs); Δ = rate A − rate B on the tasks both arms finished, with a percentile bootstrap 95 %% interval over tasks (%d resamples, seed %d).", r.Resamples, r.Seed),
		Head:  []string{"A", "B", "model", "tasks", "both", "only A", "only B", "neither", "McNemar p", "Δ rate", "95 % CI"},
		Empty: "No two arms share a model."}
	for _, p := range r.Pairs {
		t.Rows = append(t.Rows, []cell{name(p.A), name(p.B), dash(p.Model), ownf("%d", p.Tasks), ownf("%d", p.Both), ownf("%d", p.OnlyA),
			ownf("%d", p.OnlyB), ownf("%d", p.Neither), own(pvalue(p.P)), own(pp(p.Diff)), own(ppInterval(p.Lo, p.Hi))})
		if d := p.Disagreement(); d != "" {
			t.After = append(t.After, p.A+" against "+p.B+": "+d)
		}
	}
	ts = append(ts, t)

	countTable := func(id, title, note string, keys []keyed, f func(*ArmStats) map[string]int) table {
		t := table{ID: id, Title: title, Note: note, Head: []string{"name"}, Empty: "None recorded."}
		for _, a := range r.Arms {
			t.Head = append(t.Head, a.Name)
		}
		for _, k := range keys {
			row := []cell{name(k.Key)}
			for i := range r.Arms {
				row = append(row, own(perRun(f(&r.Arms[i])[k.Key], r.Arms[i].Runs)))
			}
			t.Rows = append(t.Rows, row)
		}
		if len(keys) > 0 {
			row := []cell{{Text: "all", Own: true, Class: "total"}}
			for i := range r.Arms {
				row = append(row, cell{Text: perRun(sumValues(f(&r.Arms[i])), r.Arms[i].Runs), Own: true, Class: "total"})
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	ts = append(ts, countTable("tools", "Tool mix", "Calls per run, by the tool name the model used.", r.toolKeys(), func(a *ArmStats) map[string]int { return a.ToolCalls }))
	ts = append(ts, countTable("capabilities", "Capabilities", "Calls per run, by capability.", r.capabilityKeys(), func(a *ArmStats) map[string]int { return a.CapabilityCalls }))

	t = table{ID: "edits", Title: "Edit channels", Note: "Files changed per run, by the channel that changed them (from the ledger), and each channel's share of the edits.",
		Head: []string{"arm", "editor", "patch", "shell", "editor share", "patch share", "shell share"}}
	for _, a := range r.Arms {
		e, n := a.Edits, a.EditsTotal()
		t.Rows = append(t.Rows, []cell{name(a.Name), own(perRun(e.Editor, a.Runs)), own(perRun(e.Patch, a.Runs)), own(perRun(e.Shell, a.Runs)),
			own(share(e.Editor, n)), own(share(e.Patch, n)), own(share(e.Shell, n))})
	}
	ts = append(ts, t)

	t = table{ID: "validation", Title: "Validation", Note: "Share of runs in which the agent ran the task's tests or validate before finishing, whose last such run passed, and that finished after a failing run.",
		Head: []string{"arm", "ran tests", "last passed", "finished failing", "validation runs / run"}}
	for _, a := range r.Arms {
		t.Rows = append(t.Rows, []cell{name(a.Name), own(share(a.RanTests, a.Runs)), own(share(a.LastPassed, a.Runs)), own(share(a.FinishedFailing, a.Runs)), own(perRun(a.ValidationRuns, a.Runs))})
	}
	ts = append(ts, t)

	t = table{ID: "errors", Title: "Errors and stops", Note: "Per run: tool errors, invalid calls and retries; runs whose patch did not apply; runs that ended with an error (left out of every other figure); why runs stopped.",
		Head: []string{"arm", "tool errors / run", "invalid calls / run", "retries / run", "patch failed", "run errors", "stop reasons"}}
	for _, a := range r.Arms {
		var stops []string
		for _, k := range union(a.StopReasons) {
			stops = append(stops, fmt.Sprintf("%s %d", k.Key, k.Count))
		}
		t.Rows = append(t.Rows, []cell{name(a.Name), own(perRun(a.Errors.Tool, a.Runs)), own(perRun(a.Errors.InvalidCalls, a.Runs)), own(perRun(a.Errors.Retries, a.Runs)),
			ownf("%d", a.PatchFailed), ownf("%d", a.RunErrors), dash(strings.Join(stops, ", "))})
	}
	ts = append(ts, t)

	t = table{ID: "cost", Title: "Cost", Note: "Totals over the runs, and the cost per run.",
		Head: []string{"arm", "cost", "cost / run", "uncached input", "output tokens", "cache read", "cache write"}}
	for _, a := range r.Arms {
		costRun := 0.0
		if a.Runs > 0 {
			costRun = a.CostUSD / float64(a.Runs)
		}
		cost, perRun := usd(a.CostUSD), usd(costRun)
		switch {
		case a.CostUnknownRuns > 0 && a.CostUnknownRuns == a.Runs:
			cost, perRun = "unknown", "unknown"
		case a.CostUnknownRuns > 0:
			cost, perRun = fmt.Sprintf("%s and %d runs' unknown", cost, a.CostUnknownRuns), "—"
		}
		t.Rows = append(t.Rows, []cell{name(a.Name), own(cost), own(perRun), own(tokens(a.Tokens.Input)), own(tokens(a.Tokens.Output)),
			own(tokens(a.Tokens.CacheRead)), own(tokens(a.Tokens.CacheWrite))})
	}
	ts = append(ts, t)

	t = table{ID: "time", Title: "Time", Note: "Mean seconds per run: the whole run, waiting for the model, the agent's tool calls (its commands and validation), and what is left without the grading's tests: the harness's and the runner's own cost.",
		Head: []string{"arm", "wall s / run", "model s / run", "tools s / run", "harness s / run"}}
	for _, a := range r.Arms {
		t.Rows = append(t.Rows, []cell{name(a.Name), own(num(a.WallS)), own(num(a.ModelS)), own(num(a.ToolS)), own(num(a.HarnessS))})
	}
	ts = append(ts, t)

	t = table{ID: "tasks", Title: "Tasks", Note: "One mark per repeat: ✓ resolved, ✗ not resolved, ⊘ patch did not apply, ! run error; ⚑ flagged by the grading (the patch changed test configuration, or a test binary reported tests it was not asked for).", Head: []string{"task"}}
	for _, a := range r.Arms {
		t.Head = append(t.Head, a.Name)
	}
	for _, task := range r.Tasks {
		row := []cell{name(task.InstanceID)}
		for i, c := range task.Cells {
			mc := cell{Own: true, Text: "—"}
			for _, run := range c.Runs {
				mc.Marks = append(mc.Marks, markCell{Mark: mark(run), Link: r.runURL(run), Class: markClass(run),
					Tip: fmt.Sprintf("%s · %s · repeat %d: %s%s · verdicts from %s · ledger %s", task.InstanceID, r.Arms[i].Name, run.Repeat, outcome(run), flagTip(run), cmpOr(run.VerdictSource, "—"), cmpOr(run.Ledger.Root, "—"))})
			}
			row = append(row, mc)
		}
		t.Rows = append(t.Rows, row)
	}
	ts = append(ts, t)

	t = table{ID: "runs", Title: "Runs and ledgers", Note: "Verdicts from: the source of the grading's per-test verdicts (go test -json, pytest, junit, exit status, or the SWE-bench log parser), with what the grader noted on them. Verify a run's ledger with truss ledger verify LEDGER.",
		Head: []string{"task", "arm", "repeat", "result", "verdicts from", "grade notes", "turns", "cost", "ledger", "root"}}
	if len(r.Pages) > 0 {
		t.Note = "Verdicts from: the source of the grading's per-test verdicts (go test -json, pytest, junit, exit status, or the SWE-bench log parser), with what the grader noted on them. Verify a run's ledger with truss ledger verify LEDGER, and its page (which shows the session and verifies itself in the browser) with truss ledger verify PAGE."
		t.Head = append(t.Head, "page")
	}
	for _, task := range r.Tasks {
		for i, c := range task.Cells {
			for _, run := range c.Runs {
				ledger := own("—")
				if run.Ledger.Dir != "" {
					ledger = cell{Text: run.Ledger.Dir, Link: ledgerURL(run.Ledger.Dir)}
				}
				row := []cell{name(task.InstanceID), name(r.Arms[i].Name), ownf("%d", run.Repeat),
					{Text: outcome(run), Own: run.Error == "", Class: markClass(run)}, dash(run.VerdictSource), dash(strings.Join(run.GradeNotes, "; ")), ownf("%d", run.Turns), own(usd(run.CostUSD)), ledger, hash(dash(run.Ledger.Root))}
				if len(r.Pages) > 0 {
					pg := own("—")
					if p, ok := r.Pages[run.Ledger.Dir]; ok && run.Ledger.Dir != "" {
						pg = cell{Text: p, Link: pageURL(p)}
					}
					row = append(row, pg)
				}
				t.Rows = append(t.Rows, row)
			}
		}
	}
	ts = append(ts, t)
	return ts
}

func modelCell(a ArmStats) cell {
	if a.Model == "" {
		return own("—")
	}
	return name(a.Provider + ":" + a.Model)
}

// dash is an untrusted cell, "—" when empty.
func dash(s string) cell {
	if s == "" {
		return own("—")
	}
	return name(s)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func markClass(run RunRef) string {
	switch {
	case run.Error != "":
		return "err"
	case run.Resolved:
		return "ok"
	default:
		return "no"
	}
}

// runURL is the link of a run's mark: its session page when the report
// has one, else its ledger directory.
func (r *Report) runURL(run RunRef) string {
	if p, ok := r.Pages[run.Ledger.Dir]; ok && run.Ledger.Dir != "" {
		return pageURL(p)
	}
	return ledgerURL(run.Ledger.Dir)
}

// resolvedRuns is an arm's resolved runs, with how many of them the
// grading flagged.
func resolvedRuns(a ArmStats) string {
	if a.FlaggedResolved > 0 {
		return fmt.Sprintf("%d (%d flagged)", a.ResolvedRuns, a.FlaggedResolved)
	}
	return fmt.Sprintf("%d", a.ResolvedRuns)
}

// flagTip is why a run is flagged, for its mark's tip ("" when it is
// not).
func flagTip(run RunRef) string {
	if run.Flags == "" {
		return ""
	}
	return " (flagged: " + run.Flags + ")"
}
