package runner

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/termsafe"
)

// Progress is the state of a benchmark when a run started, took a step
// or finished (Event).
type Progress struct {
	// Event is what happened to Last's run: EventFinished (the zero
	// value), EventStarted or EventNote.
	Event string
	// Note is the worker's note of an EventNote ("turn 3", "grading");
	// Worker the worker running it.
	Note, Worker string
	Done, Total  int
	// Last is the run that started, took a step or finished (only its
	// key is set unless it finished).
	Last bench.Result
	// Resolved counts resolved runs per arm, old and new.
	Resolved map[string]int
	CostUSD  float64
	// Elapsed is the time since this Run began; RanNow the runs it
	// finished, Remaining those still to make.
	Elapsed   time.Duration
	RanNow    int
	Remaining int
	Parallel  int
}

// ETA estimates the time left from this Run's pace so far.
func (p Progress) ETA() time.Duration {
	if p.RanNow == 0 {
		return 0
	}
	return time.Duration(float64(p.Elapsed) / float64(p.RanNow) * float64(p.Remaining))
}

// The events of a Progress.
const (
	EventFinished = ""
	EventStarted  = "started"
	EventNote     = "note"
)

// Line is the progress as one line of text: done/total, the run that
// finished and its verdict, resolved per arm, cost, ETA; for a run that
// started or took a step, the run and what it is doing. It is safe to
// print on a terminal: names (instance ids, arms, workers) are shown as
// termsafe.Name shows them, notes and errors without their control
// sequences.
func (p Progress) Line() string {
	run := fmt.Sprintf("%s %s #%d", termsafe.Name(p.Last.InstanceID), termsafe.Name(p.Last.Arm), p.Last.Repeat)
	switch p.Event {
	case EventStarted:
		return fmt.Sprintf("[%d/%d] %s: started on %s", p.Done, p.Total, run, termsafe.Name(cmp.Or(p.Worker, "a worker")))
	case EventNote:
		return fmt.Sprintf("[%d/%d] %s: %s", p.Done, p.Total, run, firstLine(p.Note))
	}
	verdict := "not resolved"
	switch {
	case p.Last.Error != "":
		verdict = "error: " + firstLine(p.Last.Error)
	case !p.Last.PatchApplied:
		verdict = "not resolved: patch failed"
	case p.Last.Resolved:
		verdict = "resolved"
	}
	arms := make([]string, 0, len(p.Resolved))
	for a, n := range p.Resolved {
		arms = append(arms, fmt.Sprintf("%s %d", termsafe.Name(a), n))
	}
	slices.Sort(arms)
	eta := "—"
	if p.Remaining == 0 {
		eta = "0s"
	} else if d := p.ETA(); d > 0 {
		eta = d.Round(time.Second).String()
	}
	return fmt.Sprintf("[%d/%d] %s: %s (%.1fs) | resolved: %s | cost $%.4f | ETA %s",
		p.Done, p.Total, run, verdict, p.Last.WallS,
		cmp.Or(strings.Join(arms, ", "), "none"), p.CostUSD, eta)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = termsafe.String(s)
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// Scripts finds the simulated model's script of each instance in a
// directory: INSTANCE_ID.SURFACE.json when the arm's surface has one of
// its own, else INSTANCE_ID.json, else DefaultScript.
type Scripts struct {
	Dir string
}

// For returns the script of an instance on a surface.
func (s *Scripts) For(instanceID, surface string) (*sim.Script, error) {
	if s == nil || s.Dir == "" {
		return DefaultScript(), nil
	}
	var names []string
	if surface != "" {
		names = append(names, instanceID+"."+surface+".json")
	}
	names = append(names, instanceID+".json")
	for _, n := range names {
		p := filepath.Join(s.Dir, n)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		sc, err := sim.LoadScript(p)
		if err != nil {
			return nil, fmt.Errorf("sim script %s: %w", p, err)
		}
		return sc, nil
	}
	return DefaultScript(), nil
}

// DefaultScript is what the simulated model plays for an instance without
// a script: it looks at the repository and ends without changing
// anything.
func DefaultScript() *sim.Script {
	return &sim.Script{Steps: []sim.Step{
		{Say: "I read the problem; let me look at the repository.", Actions: []sim.Action{{Kind: sim.ActList, Path: "."}}},
		{Say: "I have no script for this task, so I end here without changing anything."},
	}}
}
