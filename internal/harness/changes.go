package harness

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/trussdev/truss/internal/changes"
	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/tool"
)

// trackers are the session's change trackers, one per workspace directory
// an agent works in: the top agent and the sub-agents in its workspace
// share one, a sub-agent in an isolated copy has its own. They live until
// the session closes.
type trackers struct {
	mu  sync.Mutex
	dir map[string]*changes.Tracker // nil value: tracking is off there
	top *changes.Tracker
}

// tracker returns the change tracker of dir, opening it on first use; nil
// when changes cannot be tracked there (the session goes on and says so)
// or when the session writes no ledger to record them in (a single
// `truss tool call`, --no-ledger): the baseline walk is then not worth
// its start-up.
func (s *Session) tracker(dir string) *changes.Tracker {
	if !s.recording() {
		return nil
	}
	ts := &s.trackers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t, ok := ts.dir[dir]; ok {
		return t
	}
	if ts.dir == nil {
		ts.dir = map[string]*changes.Tracker{}
	}
	roots := []string{dir}
	top := s.w != nil && dir == s.w.ws.Dir()
	if top {
		for _, d := range s.opts.WritableDirs {
			if abs, err := filepath.Abs(d); err == nil {
				roots = append(roots, abs)
			}
		}
	}
	// The baseline is taken once the first request has left (startGate),
	// or at once when a call or a check waits for it.
	opts := changes.Options{Defer: s.start.held()}
	if s.w != nil && s.w.cfg != nil {
		opts.Ignore = s.w.cfg.Changes.Ignore
	}
	// The workspace's .git as the session found it: a tracker opened
	// later runs git on that one only, never on a repository that
	// appeared since; an isolated copy's tracker runs no git.
	var at gitsafe.Repo
	if top {
		at = s.dotGit
	}
	opts.Repo = &at
	if s.w != nil {
		opts.GitPath = s.w.hostPath
	}
	// The store of before-contents lives beside the saved sessions, which
	// the sandbox hides, else in the session's private directory (never in
	// the commands' temporary directory); it is one unnamed file there,
	// removed with the tracker.
	if sd, err := s.sessionDir(); err == nil && !s.opts.NoSession {
		opts.StoreDir = filepath.Join(sd, ".changes")
	} else if s.w != nil && s.w.priv != "" {
		opts.StoreDir = filepath.Join(s.w.priv, "changes-"+strconv.Itoa(len(ts.dir)))
	}
	t, err := changes.Open(s.life, roots, opts)
	if errors.Is(err, changes.ErrStoreInRoot) {
		// The sessions are inside the tracked root: the store goes to the
		// system's temporary directory, where it still has no name.
		opts.StoreDir = ""
		t, err = changes.Open(s.life, roots, opts)
	}
	if err != nil {
		s.warn(fmt.Sprintf("the changes commands make in %s are not recorded: %v", dir, err))
		t = nil
	}
	ts.dir[dir] = t
	if top {
		ts.top = t
	}
	return t
}

// recording reports whether the session writes a ledger, as openLedger
// decides.
func (s *Session) recording() bool {
	o := &s.opts
	return !o.NoLedger && (o.Ledger != nil || s.sess != nil || o.LedgerDir != "")
}

// settle is the recorder's last scan before the session ends: what the
// top workspace's commands changed after their calls returned.
func (s *Session) settle() ([]tool.FileChange, error) {
	s.trackers.mu.Lock()
	t := s.trackers.top
	s.trackers.mu.Unlock()
	if t == nil {
		return nil, nil
	}
	return t.ScanAll(context.WithoutCancel(s.life))
}

// close closes every tracker.
func (ts *trackers) close() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, t := range ts.dir {
		if t != nil {
			t.Close()
		}
	}
	ts.dir, ts.top = nil, nil
}
