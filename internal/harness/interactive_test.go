package harness

import (
	"context"
	"errors"
	"github.com/trussdev/truss/internal/session"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/compact"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// TestChangeLogDiff: the diff of a run's changes is each file's first
// content against its last, an added file from /dev/null, a deleted one
// to it, a renamed one both, a file changed back left out.
func TestChangeLogDiff(t *testing.T) {
	ch := func(path string, kind tool.ChangeKind, before, after string) tool.FileChange {
		c := tool.FileChange{Path: path, Kind: kind}
		if kind != tool.ChangeAdd {
			c.Before, c.BeforeData = tool.Digest([]byte(before)), []byte(before)
		}
		if kind != tool.ChangeDelete {
			c.After, c.AfterData = tool.Digest([]byte(after)), []byte(after)
		}
		return c
	}
	moved := ch("old.txt", tool.ChangeUpdate, "o\n", "o\n")
	moved.MovedTo = "new.txt"
	var l ChangeLog
	for _, cs := range [][]tool.FileChange{
		{ch("a.txt", tool.ChangeUpdate, "one\n", "two\n")},
		{ch("a.txt", tool.ChangeUpdate, "two\n", "three\n"), ch("b.txt", tool.ChangeAdd, "", "bee\n")},
		{ch("c.txt", tool.ChangeDelete, "sea\n", "")},
		{ch("d.txt", tool.ChangeUpdate, "x\n", "y\n")},
		{ch("d.txt", tool.ChangeUpdate, "y\n", "x\n")},
		{moved},
		// A bulk change's bytes are the tracker's manifest, not a file.
		{{Path: ".pytest_cache", Kind: tool.ChangeAdd, Files: 3, Bytes: 6, After: "m", AfterData: []byte("add file - 73cb 2 \".pytest_cache/v/cache/lastfailed\"\n")}},
		{ch("empty.txt", tool.ChangeAdd, "", ""), {Path: "cur", Kind: tool.ChangeAdd, LinkAfter: "v2"}},
	} {
		l.Observe(agent.Event{Type: agent.EventCallCompleted, Results: []tool.Result{{Changes: cs}}})
	}
	l.Observe(agent.Event{Type: agent.EventCallStarted, Results: []tool.Result{{Changes: []tool.FileChange{ch("e.txt", tool.ChangeAdd, "", "e\n")}}}})
	got := l.Diff()
	for _, want := range []string{
		"--- a/a.txt\n+++ b/a.txt\n", "-one\n+three\n",
		"--- /dev/null\n+++ b/b.txt\n", "+bee\n",
		"--- a/c.txt\n+++ /dev/null\n", "-sea\n",
		"--- a/old.txt\n+++ /dev/null\n", "--- /dev/null\n+++ b/new.txt\n",
		"--- /dev/null\n+++ b/.pytest_cache\n(3 files changed beneath it, 6 bytes after)\n",
		"--- /dev/null\n+++ b/empty.txt\n(an empty file)\n",
		"--- /dev/null\n+++ b/cur\n(a link to v2)\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the diff lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"a/d.txt", "e.txt", "two", "lastfailed"} {
		if strings.Contains(got, not) {
			t.Errorf("the diff holds %q:\n%s", not, got)
		}
	}
	if strings.Index(got, "a.txt") > strings.Index(got, "b.txt") {
		t.Errorf("files not in the order first changed:\n%s", got)
	}
	if (&ChangeLog{}).Diff() != "" {
		t.Error("an empty log has a diff")
	}
}

// TestSessionInteractive: Stats follows the runs, ReadFile reads only the
// workspace's text files, VerifyLedger verifies what was recorded so far,
// Compact says it is not available.
func TestSessionInteractive(t *testing.T) {
	o := fixture(t, twoRuns)
	o.Validation.Off = true
	ctx := context.Background()
	s, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st := s.Stats(); st.Tasks != 0 || st.Usage.InputTokens != 0 || st.ContextWindow <= 0 {
		t.Errorf("stats before a run: %+v", st)
	}
	out, err := s.Run(ctx, "view it")
	if err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Tasks != 1 || st.Turns != 2 || st.Usage != out.Usage || st.ContextTokens <= 0 {
		t.Errorf("stats after a run: %+v (outcome usage %+v)", st, out.Usage)
	}
	rel, b, err := s.ReadFile("a.txt")
	if err != nil || rel != "a.txt" || string(b) != "one\n" {
		t.Errorf("ReadFile = %q, %q, %v", rel, b, err)
	}
	for _, bad := range []string{"../x", "/etc/passwd", ".", "missing.txt"} {
		if _, _, err := s.ReadFile(bad); err == nil {
			t.Errorf("ReadFile(%q) read it", bad)
		}
	}
	ls, err := s.VerifyLedger(ctx)
	if err != nil || ls.Report.Entries == 0 || ls.Report.Sealed != ls.Report.Entries || len(ls.Report.Root) == 0 {
		t.Errorf("VerifyLedger = %+v, %v", ls, err)
	}
	// Two short tasks leave nothing but the pinned task and the latest
	// message to keep, or something to summarize; either way no error
	// but compact's own.
	if _, err := s.Compact(ctx); err != nil && !errors.Is(err, compact.ErrNothingToCompact) {
		t.Errorf("Compact: %v", err)
	}
	s.Close()
	if _, err := s.VerifyLedger(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("VerifyLedger after Close: %v", err)
	}
}

// TestStatsFollowEachResponse: a session's usage is brought up to date as
// each model response ends, before the response's tools run (not only when
// the turn or the task ends), the cache's tokens counted.
func TestStatsFollowEachResponse(t *testing.T) {
	o := fixture(t, twoRuns)
	o.Validation.Off = true
	o.SimDialect = "anthropic"
	var s *Session
	var seen []model.Usage // Stats' usage as each call started
	var responses model.Usage
	o.Observers = append(o.Observers, agent.ObserverFunc(func(ev agent.Event) {
		switch ev.Type {
		case agent.EventResponse:
			responses.Add(ev.Response.Usage)
		case agent.EventCallStarted:
			seen = append(seen, s.Stats().Usage)
			if got := s.Stats().Usage; got.Total() != responses.Total() || got.Input() != responses.Input() {
				t.Errorf("Stats while call %s ran: %+v, the responses so far used %+v", ev.Call.ID, got, responses)
			}
		}
	}))
	ctx := context.Background()
	var err error
	s, err = Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(ctx, "view it")
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 1 || seen[0].Total() == 0 || seen[0].CacheWriteTokens == 0 || seen[0].Total() >= out.Usage.Total() {
		t.Errorf("usage as the call ran %+v, at the end %+v", seen, out.Usage)
	}
}

// TestResumableLeavesOutServers: an MCP server's record of this workspace
// is no conversation to resume, so /resume does not offer it.
func TestResumableLeavesOutServers(t *testing.T) {
	dir, ws := t.TempDir(), t.TempDir()
	for _, m := range []session.Meta{
		{ID: "20261207T150000-aaaaaa", Workspace: ws, Provider: "sim", Model: "sim-claude"},
		{ID: "20261207T151000-bbbbbb", Workspace: ws, Provider: "mcp", Model: "-", Task: "truss mcp serve"},
	} {
		s, err := (session.Store{Dir: dir}).Create(m)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	s := &Session{opts: Options{SessionDir: dir}, w: &workspace{root: ws}}
	ms, err := s.Resumable()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Provider != "sim" {
		t.Errorf("resumable: %+v, want the sim session alone", ms)
	}
}
