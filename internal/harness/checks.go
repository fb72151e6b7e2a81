package harness

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/validate"
)

// BackgroundCheck is the project's checks run in the background after a task that
// changed files (ValidationOptions.Background): the verification boundary
// on the tree as the task left it. The next Run, Validate or Close cancels
// a check still running; a cancelled check is recorded in the ledger as
// cancelled, never as failed.
type BackgroundCheck struct {
	done    chan struct{}
	cancel  context.CancelFunc
	verdict *Verdict
}

// Done is closed when the check has ended, cancelled or not.
func (c *BackgroundCheck) Done() <-chan struct{} { return c.done }

// Verdict is the check's verdict once Done is closed (its Cancelled set
// when it was cancelled); nil before, and nil when there were no checks to
// run after all.
func (c *BackgroundCheck) Verdict() *Verdict {
	select {
	case <-c.done:
		return c.verdict
	default:
		return nil
	}
}

// Running reports whether the check has not ended yet.
func (c *BackgroundCheck) Running() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// Wait waits for the check to end, or ctx; it returns the verdict.
func (c *BackgroundCheck) Wait(ctx context.Context) (*Verdict, error) {
	select {
	case <-c.done:
		return c.verdict, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// checks is the session's background check, at most one at a time.
type checks struct {
	mu  sync.Mutex
	cur *BackgroundCheck
}

// startCheck starts the boundary in the background on the session's
// life (not a task's context, which ends with its Run).
func (s *Session) startCheck() *BackgroundCheck {
	s.stopCheck()
	ctx, cancel := context.WithCancel(s.life)
	c := &BackgroundCheck{done: make(chan struct{}), cancel: cancel}
	s.bg.mu.Lock()
	s.bg.cur = c
	s.bg.mu.Unlock()
	go func() {
		defer close(c.done)
		defer cancel()
		c.verdict = s.boundary(ctx, "in the background")
	}()
	return c
}

// stopCheck cancels the background check, if one runs, and waits until
// it has recorded itself.
func (s *Session) stopCheck() {
	s.bg.mu.Lock()
	c := s.bg.cur
	s.bg.cur = nil
	s.bg.mu.Unlock()
	if c != nil {
		c.cancel()
		<-c.done
	}
}

// changeCounter counts the completed calls whose results carry file
// changes (Session.changed), and keeps the test code they changed
// (Session.testCode).
func (s *Session) changeCounter() agent.Observer {
	return agent.ObserverFunc(func(ev agent.Event) {
		if ev.Type != agent.EventCallCompleted {
			return
		}
		counted := false
		for _, r := range ev.Results {
			if len(r.Changes) > 0 && !counted {
				s.changed.Add(1)
				counted = true
			}
			for _, c := range r.Changes {
				for _, p := range []string{c.Path, c.MovedTo} {
					if p != "" && validate.IsTestCode(p) {
						s.testCode.Lock()
						if s.testCode.paths == nil {
							s.testCode.paths = map[string]bool{}
						}
						s.testCode.paths[p] = true
						s.testCode.Unlock()
					}
				}
				if p := s.changedConfig(c); p != "" {
					s.testCode.Lock()
					if s.testCode.config == nil {
						s.testCode.config = map[string]bool{}
					}
					s.testCode.config[p] = true
					s.testCode.Unlock()
				}
			}
		}
	})
}

// changedConfig is the path of the test configuration c changed in what
// decides a run (validate.ConfigEssence): a file validate.IsTestConfig
// names, the root file the checks' command was detected from (a
// Makefile, package.json's scripts), or a file the command or a setup
// command runs or reads its recipe from (validate.CommandFiles: the
// makefile of a given `make test`, a ./run-tests.sh); "" when c changed
// none, or none in what decides a run (a go.mod's new requirement).
func (s *Session) changedConfig(c tool.FileChange) string {
	var files []string // what the command runs or reads its recipe from
	if r := s.w.runner; r != nil {
		if slices.Contains(validate.Markers(), r.Env.Source) {
			files = append(files, r.Env.Source)
		}
		for _, c := range append([]string{r.Env.Test}, r.Env.Setup...) {
			files = append(files, validate.CommandFiles(c)...)
		}
	}
	watched := func(p string) bool { return p != "" && (validate.IsTestConfig(p) || slices.Contains(files, p)) }
	switch {
	case c.MovedTo != "" && (watched(c.Path) || watched(c.MovedTo)):
		return cmp.Or(c.MovedTo, c.Path)
	case !watched(c.Path):
		return ""
	case c.Kind == tool.ChangeUpdate && (c.BeforeData != nil || c.Before == "") && (c.AfterData != nil || c.After == "") &&
		validate.ConfigEssence(c.Path, c.BeforeData) == validate.ConfigEssence(c.Path, c.AfterData):
		return ""
	}
	return c.Path
}
