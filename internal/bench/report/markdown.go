package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/trussdev/truss/internal/termsafe"
)

// text makes untrusted text (warnings, sentences about the results) safe
// for a terminal and inert in Markdown.
func text(s string) string { return mdEscape(termsafe.String(s)) }

// nameText makes an untrusted name or value of a table cell (instance ids,
// arm names, models, stop reasons, verdict sources and notes, errors,
// settings, ledger paths) safe for a terminal, every byte of it shown
// (termsafe.Name: an escape sequence is written out, not dropped, so two
// names never look the same), and inert in Markdown.
func nameText(s string) string { return mdEscape(termsafe.Name(s)) }

// summary is the report's opening sentence, unescaped.
func (r *Report) summary() (runs, tasks int, how string) {
	for _, a := range r.Arms {
		runs += a.Runs + a.RunErrors
	}
	how = "No bench.json: every pair of arms is compared."
	if r.Manifest != nil {
		how = "Arms of the same provider and model are compared (bench.json)."
	}
	return runs, len(r.Tasks), how
}

// Markdown writes the report as Markdown (GitHub's tables), every name from
// the results neutralised for a terminal (termsafe) and escaped for
// Markdown.
func (r *Report) Markdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	runs, tasks, how := r.summary()
	p("# Benchmark report\n\n")
	p("%d %s of %d %s on %d %s, from %s. %s\n", runs, plural(runs, "run", "runs"), tasks, plural(tasks, "task", "tasks"),
		len(r.Arms), plural(len(r.Arms), "arm", "arms"), text(r.Dir), how)
	if len(r.Warnings) > 0 {
		p("\nWarnings:\n\n")
		for _, w := range r.Warnings {
			p("- %s\n", text(w))
		}
	}
	for _, t := range r.tables() {
		p("\n## %s\n\n", t.Title)
		if t.Note != "" {
			p("%s\n\n", t.Note)
		}
		if len(t.Rows) == 0 && t.Empty != "" {
			p("%s\n", t.Empty)
			continue
		}
		head := make([]string, len(t.Head))
		sep := make([]string, len(t.Head))
		left := t.Left()
		for i, h := range t.Head {
			head[i] = text(h)
			sep[i] = "---:"
			if left[i] {
				sep[i] = "---"
			}
		}
		p("| %s |\n| %s |\n", strings.Join(head, " | "), strings.Join(sep, " | "))
		for _, row := range t.Rows {
			cells := make([]string, len(row))
			for i, c := range row {
				cells[i] = mdCell(c)
			}
			p("| %s |\n", strings.Join(cells, " | "))
		}
		for _, a := range t.After {
			p("\n%s\n", text(a))
		}
	}
	return bw.Flush()
}

func mdCell(c cell) string {
	if len(c.Marks) > 0 {
		marks := make([]string, len(c.Marks))
		for i, m := range c.Marks {
			marks[i] = m.Mark
		}
		return strings.Join(marks, " ")
	}
	s := c.Text
	if !c.Own {
		s = nameText(s)
	}
	if c.Class == "total" {
		s = "**" + s + "**"
	}
	if c.Link != "" {
		s = "[" + s + "](" + c.Link + ")"
	}
	return s
}

// mark is a run's one-character outcome.
func mark(run RunRef) string {
	m := "✗"
	switch {
	case run.Error != "":
		return "!"
	case run.Resolved:
		m = "✓"
	case !run.PatchApplied:
		m = "⊘"
	}
	if run.Flags != "" {
		m += "⚑"
	}
	return m
}

// outcome is a run's outcome in words, with its error if it has one
// (untrusted: the caller escapes it).
func outcome(run RunRef) string {
	o := "not resolved"
	switch {
	case run.Error != "":
		return "error: " + run.Error
	case run.Resolved:
		o = "resolved"
	case !run.PatchApplied:
		o = "not resolved: patch failed"
	}
	if run.Flags != "" {
		o += " ⚑" // why: in the tip and the grade notes
	}
	return o
}
