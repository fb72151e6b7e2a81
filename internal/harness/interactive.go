package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aymanbagabas/go-udiff"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
)

// What an interactive session asks of an open session, beyond Run: its
// live statistics, the workspace's changes, the ledger verified, a file to
// attach, and compaction (Compact, in harness.go).

// Stats is what an open session has used so far.
type Stats struct {
	// Usage is the session's usage so far, sub-agents' included, cost
	// included, brought up to date as each model response ends: a resumed session's earlier openings too (what it saved),
	// so the count goes on across /model, /surface, /sandbox and resume.
	Usage model.Usage
	// ContextTokens is the prompt of the last request (input and cache
	// tokens); ContextWindow the context the server gives a request (0:
	// unknown).
	ContextTokens, ContextWindow int64
	// Tasks is how many times Run was called; Turns how many model turns
	// the runs took.
	Tasks, Turns int
}

// stats is the live Stats, written by an observer during Run and read by
// Stats at any time.
type stats struct {
	mu sync.Mutex
	st Stats
}

// statsObserver keeps the session's Stats as the agent loop reports.
func (s *Session) statsObserver() agent.Observer {
	var base model.Usage // what the saved session used before this opening
	if s.sess != nil {
		base = s.sess.Meta.Usage
	}
	s.stats.mu.Lock()
	s.stats.st.ContextWindow = s.contextLimit()
	s.stats.st.Usage = base
	s.stats.mu.Unlock()
	return agent.ObserverFunc(func(ev agent.Event) {
		st := &s.stats
		st.mu.Lock()
		defer st.mu.Unlock()
		switch ev.Type {
		case agent.EventUser:
			st.st.Tasks++
		case agent.EventResponse:
			u := ev.Response.Usage
			st.st.ContextTokens = u.Input()
			st.st.Turns++
		}
		switch ev.Type {
		case agent.EventResponse, agent.EventCompacted, agent.EventTurnCompleted, agent.EventRunCompleted:
			// As each model response (or compaction's summary) ends, not
			// after the turn's tools ran: a sub-agent's usage comes with
			// its call's turn.
			if s.agent != nil {
				st.st.Usage = base
				st.st.Usage.Add(s.agent.Usage()) // the loop's goroutine: no race with Run
			}
		}
	})
}

// Stats returns what the session has used so far. It is safe to call at
// any time, also while Run runs.
func (s *Session) Stats() Stats {
	s.stats.mu.Lock()
	defer s.stats.mu.Unlock()
	return s.stats.st
}

// LedgerState is a ledger verified.
type LedgerState struct {
	Dir    string
	Report *ledger.Report
}

// VerifyLedger seals what the session recorded so far and verifies its
// ledger with this installation's key: every entry, payload and signed
// checkpoint. It returns an error when no ledger is written or it does not
// verify.
func (s *Session) VerifyLedger(ctx context.Context) (LedgerState, error) {
	if s.isClosed() {
		return LedgerState{}, ErrClosed
	}
	if err := s.prepared(ctx); err != nil {
		return LedgerState{}, err
	}
	if s.lw == nil {
		return LedgerState{}, errors.New("this session writes no ledger")
	}
	if err := ctx.Err(); err != nil {
		return LedgerState{}, err
	}
	s.rec.Flush()
	if _, _, _, err := s.lw.Seal(); err != nil {
		return LedgerState{}, fmt.Errorf("seal the ledger: %w", err)
	}
	kd, err := s.keyDir()
	if err != nil {
		return LedgerState{}, err
	}
	_, vkey, err := ledger.LoadOrCreateKey(kd)
	if err != nil {
		return LedgerState{}, err
	}
	rep, _, err := ledger.Verify(s.lw.Dir(), vkey)
	if err != nil {
		return LedgerState{Dir: s.lw.Dir(), Report: rep}, fmt.Errorf("the ledger %s does not verify: %w", s.lw.Dir(), err)
	}
	return LedgerState{Dir: s.lw.Dir(), Report: rep}, nil
}

// MaxAttach is the largest file ReadFile returns.
const MaxAttach = 256 << 10

// ReadFile reads a text file of the workspace (a path relative to its
// root, or absolute inside it) for attaching to a task. It returns the
// path relative to the root. Paths outside the workspace are refused,
// and so, as readAttachment says, are links, FIFOs, sockets, devices,
// directories, binary files and files over MaxAttach (errors.Is tells
// the hostfs refusal: hostfs.ErrLink, ErrNotRegular, ErrTooLarge,
// ErrBusy).
func (s *Session) ReadFile(name string) (string, []byte, error) {
	if s.isClosed() {
		return "", nil, ErrClosed
	}
	p, err := s.w.ws.Resolve(name)
	if err != nil {
		return "", nil, err
	}
	b, err := readAttachment(p)
	if err != nil {
		return "", nil, err
	}
	return p.Display(), b, nil
}

// readAttachment reads the file p names for ReadFile. A command may
// change the workspace between p's resolution and this read, so the
// path is not trusted: the file is opened by its name relative to p's
// root through a strict hostfs.Root (attachments are Truss's own reads:
// no symbolic link at all, wherever it leads), without blocking (a
// FIFO, socket or device is refused, as is an open a file lease would
// make wait), and read up to MaxAttach bytes.
func readAttachment(p fs.Resolved) ([]byte, error) {
	r, err := hostfs.OpenRoot(p.RootDir())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Display(), err)
	}
	defer r.Close()
	f, err := r.Open(filepath.ToSlash(p.Rel))
	if err != nil {
		return nil, attachErr(p, err)
	}
	defer f.Close()
	b, err := f.ReadAll(MaxAttach)
	if err != nil {
		return nil, attachErr(p, err)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return nil, fmt.Errorf("%s is a binary file; only text files can be attached", p.Display())
	}
	return b, nil
}

// attachErr words a hostfs error of reading p for the user.
func attachErr(p fs.Resolved, err error) error {
	var he *hostfs.Error
	if hostfs.IsNotExist(err) {
		return fmt.Errorf("%s: no such file in the workspace (%w)", p.Display(), iofs.ErrNotExist)
	}
	if !hostfs.Refused(err) || !errors.As(err, &he) {
		return fmt.Errorf("%s: %w", p.Display(), err)
	}
	if errors.Is(err, hostfs.ErrTooLarge) {
		return fmt.Errorf("%s %w: at most %d bytes can be attached", p.Display(), he.Err, MaxAttach)
	}
	return fmt.Errorf("%s %w; only a regular file of the workspace, named without symbolic links, can be attached", p.Display(), he.Err)
}

// ChangeLog is an agent.Observer that keeps every file change the calls
// of the runs it observes made (the changes travel with the results: the
// editors' and those found after commands), so that Diff shows the
// workspace's changes since it began observing, from the bytes the
// executors read and wrote. Give the same ChangeLog to every session
// opened for one conversation (a session re-opened with another model)
// to keep them all. It is safe for concurrent use.
type ChangeLog struct {
	mu    sync.Mutex
	files map[string]*fileState
	order int
}

type fileState struct {
	first          int
	before, after  []byte
	existed, exist bool
	unknown        bool // a change without its contents (a symlink)
	// note says what changed where the change is not one file's text:
	// a bulk change's count of files (its bytes are the tracker's
	// manifest), a link's target, a FIFO.
	note string
}

// Observe implements agent.Observer.
func (l *ChangeLog) Observe(ev agent.Event) {
	if ev.Type != agent.EventCallCompleted {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range ev.Results {
		for _, c := range r.Changes {
			l.record(c)
		}
	}
}

func (l *ChangeLog) record(c tool.FileChange) {
	if l.files == nil {
		l.files = map[string]*fileState{}
	}
	state := func(p string, existed bool, before []byte) *fileState {
		f, ok := l.files[p]
		if !ok {
			l.order++
			f = &fileState{first: l.order, existed: existed, before: before}
			l.files[p] = f
		}
		return f
	}
	noData := (c.Before != "" && c.BeforeData == nil) || (c.After != "" && c.AfterData == nil)
	f := state(c.Path, c.Kind != tool.ChangeAdd, c.BeforeData)
	if note := termsafe.Line(c.Note()); note != "" {
		f.note, f.exist = note, c.Kind != tool.ChangeDelete
		return
	}
	f.unknown = f.unknown || noData
	if c.MovedTo != "" {
		f.after, f.exist = nil, false
		g := state(c.MovedTo, false, nil)
		g.after, g.exist = c.AfterData, true
		g.unknown = g.unknown || noData
		return
	}
	f.after, f.exist = c.AfterData, c.Kind != tool.ChangeDelete
}

// Diff returns the changes as one unified diff, files in the order they
// were first changed; "" when nothing changed.
func (l *ChangeLog) Diff() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	paths := make([]string, 0, len(l.files))
	for p := range l.files {
		paths = append(paths, p)
	}
	sort.Slice(paths, func(i, j int) bool { return l.files[paths[i]].first < l.files[paths[j]].first })
	var b bytes.Buffer
	for _, p := range paths {
		f := l.files[p]
		if f.existed == f.exist && bytes.Equal(f.before, f.after) && !f.unknown && f.note == "" {
			continue
		}
		a, z := "a/"+termsafe.Name(p), "b/"+termsafe.Name(p) // names from the workspace, shown on a terminal
		if !f.existed {
			a = "/dev/null"
		}
		if !f.exist {
			z = "/dev/null"
		}
		switch {
		case f.note != "":
			fmt.Fprintf(&b, "--- %s\n+++ %s\n(%s)\n", a, z, f.note)
			continue
		case f.unknown:
			fmt.Fprintf(&b, "--- %s\n+++ %s\n(changed; its contents were not read)\n", a, z)
			continue
		}
		d := udiff.Unified(a, z, string(f.before), string(f.after))
		if d == "" { // an empty file made or removed: no line to show
			d = fmt.Sprintf("--- %s\n+++ %s\n(an empty file)\n", a, z)
		}
		b.WriteString(d)
	}
	return b.String()
}

// Resumable lists the saved sessions of this session's workspace but
// itself and MCP servers' records, most recently used first: what a
// resume may continue here.
func (s *Session) Resumable() ([]session.Meta, error) {
	dir := s.opts.SessionDir
	if dir == "" {
		var err error
		if dir, err = session.DefaultDir(); err != nil {
			return nil, err
		}
	}
	ms, err := (session.Store{Dir: dir}).List()
	if err != nil {
		return nil, err
	}
	var out []session.Meta
	here := workedIn(s.w.root)
	for _, m := range ms {
		if m.ID != s.sessionID && here(m) {
			out = append(out, m)
		}
	}
	return out, nil
}

// Files lists workspace paths that begin with prefix, for completing an
// attachment's path (@path): prefix is slash-separated and relative to
// the workspace's root; the listing is of the directory it names (its
// part up to the last "/"), the entries whose names begin with the rest.
// Directories end in "/". Only regular files and directories are listed
// (a link is not, as ReadFile refuses links), names beginning with "."
// only when the rest does, and at most max, sorted. The directory is read
// through a strict hostfs.Root: no link is followed on the way to it, and
// nothing is opened but directories. It is safe to call while a task
// runs; ctx ends the listing early.
func (s *Session) Files(ctx context.Context, prefix string, max int) ([]string, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	dir, base := path.Split(prefix)
	if path.IsAbs(dir) || slices.Contains(strings.Split(dir, "/"), "..") {
		return nil, fmt.Errorf("%q is not a path inside the workspace", prefix)
	}
	root, err := hostfs.OpenRoot(s.w.ws.Dir())
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if d := strings.TrimSuffix(dir, "/"); d != "" {
		sub, err := root.OpenDir(d)
		if err != nil {
			return nil, err
		}
		defer sub.Close()
		root = sub
	}
	var out []string
	keep := func(name string) bool {
		return strings.HasPrefix(name, base) && (!strings.HasPrefix(name, ".") || strings.HasPrefix(base, "."))
	}
	err = root.ReadDirMatching(keep, func(name string, info hostfs.Info) {
		switch {
		case len(out) >= max || ctx.Err() != nil:
		case info.IsDir():
			out = append(out, dir+name+"/")
		case info.IsRegular():
			out = append(out, dir+name)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, ctx.Err()
}
