// Package session persists transcripts so that a run can be resumed.
//
// A store is a directory holding one directory per session:
//
//	<store>/<id>/meta.json        Meta, rewritten atomically after each turn
//	<store>/<id>/transcript.jsonl one model.Item per line, appended
//	<store>/<id>/transcript-N.jsonl the transcript the Nth compaction replaced
//
// Items keep the provider's raw form, so a resumed session replays its
// history exactly to the same dialect.
package session

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/model"

	"github.com/trussdev/truss/internal/hostfs"
)

// Meta describes a session.
type Meta struct {
	ID        string    `json:"id"`
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	Workspace string    `json:"workspace"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Surface   string    `json:"surface"`
	Task      string    `json:"task"`
	// Script and SimDialect are, for the sim provider, the script file the
	// simulated model plays (an absolute path) and the dialect it speaks,
	// so that a resumed session plays on.
	Script     string      `json:"script,omitempty"`
	SimDialect string      `json:"sim_dialect,omitempty"`
	Status     string      `json:"status,omitempty"`
	Turns      int         `json:"turns"`
	Usage      model.Usage `json:"usage"`
}

// Store is a directory of sessions.
type Store struct{ Dir string }

// DefaultDir returns $TRUSS_HOME/sessions, else $XDG_DATA_HOME/truss/sessions,
// else ~/.local/share/truss/sessions.
func DefaultDir() (string, error) {
	if h := os.Getenv("TRUSS_HOME"); h != "" {
		return filepath.Join(h, "sessions"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "truss", "sessions"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("no session directory: set TRUSS_HOME: %w", err)
	}
	return filepath.Join(home, ".local", "share", "truss", "sessions"), nil
}

// Session is an open session.
type Session struct {
	Meta Meta
	dir  string
	f    *os.File
}

// ErrNotFound is returned for an unknown session id.
var ErrNotFound = errors.New("session not found")

// Create creates a new session with a fresh id: its directory, its
// transcript and its meta.json.
func (s Store) Create(m Meta) (*Session, error) {
	sess, err := s.Begin(m)
	if err != nil {
		return nil, err
	}
	return sess, sess.SaveMeta()
}

// Begin creates a new session with a fresh id, its directory and its
// transcript, but not its meta.json: the caller writes it with SaveMeta,
// and List shows the session from then on. A run's first request carries
// the id (the prompt's cache key) and need not wait for the write and its
// fsync.
func (s Store) Begin(m Meta) (*Session, error) {
	var b [3]byte
	rand.Read(b[:])
	now := time.Now().UTC()
	m.ID = now.Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
	m.Created, m.Updated = now, now
	dir := filepath.Join(s.Dir, m.ID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	sess := &Session{Meta: m, dir: dir}
	if err := sess.open(); err != nil {
		return nil, err
	}
	return sess, nil
}

// Served reports whether the session is the record of an MCP server
// (truss mcp serve): calls served, no conversation to resume.
func (m Meta) Served() bool { return m.Provider == "mcp" && m.Model == "-" }

// ErrServed is Open's error for a session that is an MCP server's record.
var ErrServed = errors.New("is the record of an MCP server (truss mcp serve), with no conversation to resume")

// Last is the reference to the session updated last (Resolve).
const Last = "last"

// Resolve returns the id of the session ref names among those keep
// accepts (nil: all): its whole id; Last, the one updated last; or a part
// of its id no other one's has — the random end a listing shows
// ("6b57e1") or a beginning ("20261207T1536"). A ref that names none is
// ErrNotFound; one that names several is an error listing them.
func (s Store) Resolve(ref string, keep func(Meta) bool) (string, error) {
	if ref == "" || strings.ContainsAny(ref, `/\`) || ref == "." || ref == ".." {
		return "", fmt.Errorf("session %q: %w", ref, ErrNotFound)
	}
	if b, err := os.ReadFile(filepath.Join(s.Dir, ref, "meta.json")); err == nil && ref != Last {
		var m Meta
		if json.Unmarshal(b, &m) == nil && (keep == nil || keep(m)) {
			return ref, nil
		}
	}
	ms, err := s.List()
	if err != nil {
		return "", err
	}
	var match []string
	for _, m := range ms { // newest first
		if keep != nil && !keep(m) {
			continue
		}
		if ref == Last {
			return m.ID, nil
		}
		if strings.HasPrefix(m.ID, ref) || strings.HasSuffix(m.ID, ref) {
			match = append(match, m.ID)
		}
	}
	switch len(match) {
	case 0:
		return "", fmt.Errorf("session %q: %w (see `truss sessions`)", ref, ErrNotFound)
	case 1:
		return match[0], nil
	}
	if len(match) > 5 {
		match = append(match[:5], "…")
	}
	return "", fmt.Errorf("session %q: several sessions match (%s); give more of the id", ref, strings.Join(match, ", "))
}

// Open opens an existing session and returns it with its transcript, to
// resume it: ref is resolved as Resolve does among the sessions that are
// not an MCP server's record; naming one of those is ErrServed.
func (s Store) Open(ref string) (*Session, []model.Item, error) {
	id, err := s.Resolve(ref, func(m Meta) bool { return !m.Served() })
	if errors.Is(err, ErrNotFound) {
		if sid, serr := s.Resolve(ref, nil); serr == nil {
			return nil, nil, fmt.Errorf("session %s %w", sid, ErrServed)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	dir := filepath.Join(s.Dir, id)
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("session %q: %w (see `truss sessions`)", id, ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	sess := &Session{dir: dir}
	if err := json.Unmarshal(b, &sess.Meta); err != nil {
		return nil, nil, fmt.Errorf("session %s: meta.json: %w", id, err)
	}
	items, err := readItems(filepath.Join(dir, "transcript.jsonl"))
	if err != nil {
		return nil, nil, fmt.Errorf("session %s: %w", id, err)
	}
	return sess, items, sess.open()
}

func readItems(path string) ([]model.Item, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var items []model.Item
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		var it model.Item
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			// A torn last line from a crash: keep what came before it.
			if !sc.Scan() {
				break
			}
			return nil, fmt.Errorf("transcript line %d: %w", n, err)
		}
		items = append(items, it)
	}
	return items, sc.Err()
}

func (s *Session) open() error {
	f, err := os.OpenFile(filepath.Join(s.dir, "transcript.jsonl"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("session %s: %w", s.Meta.ID, err)
	}
	s.f = f
	return nil
}

// Dir returns the session's directory.
func (s *Session) Dir() string { return s.dir }

// Append appends items to the transcript.
func (s *Session) Append(items ...model.Item) error {
	var buf []byte
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("session %s: %w", s.Meta.ID, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	if _, err := s.f.Write(buf); err != nil {
		return fmt.Errorf("session %s: append: %w", s.Meta.ID, err)
	}
	return nil
}

// Replace replaces the transcript with items, the conversation after a
// compaction (agent.EventCompacted), and keeps the one it replaces as
// transcript-N.jsonl (N = 1, 2, … for each compaction): the new transcript
// is written beside it and fsynced, the old one linked to its new name,
// and the new one renamed over transcript.jsonl, so that a crash at any
// point leaves a complete transcript.jsonl, the old or the new. Later
// Appends go to the new transcript; Open loads it.
func (s *Session) Replace(items []model.Item) error {
	var buf []byte
	for _, it := range items {
		b, err := json.Marshal(it)
		if err != nil {
			return fmt.Errorf("session %s: %w", s.Meta.ID, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	cur := filepath.Join(s.dir, "transcript.jsonl")
	for n := 1; ; n++ {
		err := os.Link(cur, filepath.Join(s.dir, fmt.Sprintf("transcript-%d.jsonl", n)))
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("session %s: keep the replaced transcript: %w", s.Meta.ID, err)
		}
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if err := hostfs.WriteFileAtomic(cur, buf, 0o600); err != nil {
		if oerr := s.open(); oerr != nil {
			return errors.Join(fmt.Errorf("session %s: replace the transcript: %w", s.Meta.ID, err), oerr)
		}
		return fmt.Errorf("session %s: replace the transcript: %w", s.Meta.ID, err)
	}
	return s.open()
}

// Transcripts returns the paths of the transcripts a session's
// compactions replaced, oldest first (transcript-1.jsonl, …).
func (s *Session) Transcripts() ([]string, error) {
	var out []string
	for n := 1; ; n++ {
		p := filepath.Join(s.dir, fmt.Sprintf("transcript-%d.jsonl", n))
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return out, nil
		} else if err != nil {
			return out, err
		}
		out = append(out, p)
	}
}

// SaveMeta writes meta.json atomically.
func (s *Session) SaveMeta() error {
	s.Meta.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(s.Meta, "", "  ")
	if err != nil {
		return err
	}
	if err := hostfs.WriteFileAtomic(filepath.Join(s.dir, "meta.json"), b, 0o600); err != nil {
		return fmt.Errorf("session %s: %w", s.Meta.ID, err)
	}
	return nil
}

// Close closes the transcript file.
func (s *Session) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// Remove closes the session and deletes it with everything in its
// directory (a session that never reached the model has nothing to keep).
func (s *Session) Remove() error {
	s.Close()
	return os.RemoveAll(s.dir)
}

// LedgerDir returns the directory for the ledger of a new run of the
// session: "ledger" for the first run, "ledger-N" (N the run's start in
// Unix nanoseconds) for each resumed one.
func (s *Session) LedgerDir(start time.Time) string {
	first := filepath.Join(s.dir, "ledger")
	if _, err := os.Stat(first); errors.Is(err, fs.ErrNotExist) {
		return first
	}
	return filepath.Join(s.dir, fmt.Sprintf("ledger-%d", start.UnixNano()))
}

// Ledgers returns the ledger directories of the session in dir, one per
// run, in the order the runs were made: "ledger", then the "ledger-N" of
// each resumed run by N.
func Ledgers(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type run struct {
		n   int64
		dir string
	}
	var runs []run
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		if name == "ledger" {
			runs = append(runs, run{-1, filepath.Join(dir, name)})
			continue
		}
		if rest, ok := strings.CutPrefix(name, "ledger-"); ok {
			if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n >= 0 {
				runs = append(runs, run{n, filepath.Join(dir, name)})
			}
		}
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].n < runs[j].n })
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.dir
	}
	return out, nil
}

// List returns the sessions' metadata, newest first.
func (s Store) List() ([]Meta, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ms []Meta
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(s.Dir, e.Name(), "meta.json"))
		if err != nil {
			continue
		}
		var m Meta
		if json.Unmarshal(b, &m) == nil {
			ms = append(ms, m)
		}
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Updated.After(ms[j].Updated) })
	return ms, nil
}
