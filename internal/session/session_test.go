package session

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
)

func TestRoundTrip(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	s, err := st.Create(Meta{Workspace: "/w", Provider: "ollama", Model: "m", Task: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	items := []model.Item{
		{Kind: model.KindUser, Text: "fix"},
		{Kind: model.KindToolCall, Provider: "ollama", Raw: []byte(`{"id":"c1"}`), Call: &model.ToolCall{ID: "c1", Name: "bash", Kind: model.ToolFunction, Input: `{"command":"ls"}`}},
		{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: "c1", Name: "bash", Text: "a\tb\n"}},
	}
	if err := s.Append(items...); err != nil {
		t.Fatal(err)
	}
	s.Meta.Turns = 1
	s.SaveMeta()
	s.Close()
	s2, got, err := st.Open(s.Meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if len(got) != 3 || got[1].Call.Input != `{"command":"ls"}` || string(got[1].Raw) != `{"id":"c1"}` || got[2].Result.Text != "a\tb\n" || s2.Meta.Turns != 1 {
		t.Fatalf("got %+v", got)
	}
	// A torn final line (a crash in the middle of a write) is dropped.
	f, _ := os.OpenFile(filepath.Join(st.Dir, s.Meta.ID, "transcript.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"kind":"us`)
	f.Close()
	if _, got, err = st.Open(s.Meta.ID); err != nil || len(got) != 3 {
		t.Fatalf("torn tail: %v %d", err, len(got))
	}
	list, _ := st.List()
	if len(list) != 1 || list[0].ID != s.Meta.ID {
		t.Fatalf("list %+v", list)
	}
	for _, bad := range []string{"nope", "../x", ""} {
		if _, _, err := st.Open(bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("open %q: %v", bad, err)
		}
	}
}

// TestReplace: a compaction's transcript replaces the session's (Open
// loads it, later Appends extend it) and each replaced one is kept, in
// order, as transcript-N.jsonl.
func TestReplace(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	s, err := st.Create(Meta{Task: "fix"})
	if err != nil {
		t.Fatal(err)
	}
	user := func(text string) model.Item { return model.Item{Kind: model.KindUser, Text: text} }
	if err := s.Append(user("fix"), user("a"), user("b")); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace([]model.Item{user("fix"), user("summary 1")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(user("c")); err != nil {
		t.Fatal(err)
	}
	if err := s.Replace([]model.Item{user("fix"), user("summary 2")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(user("d")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	texts := func(items []model.Item) string {
		var out []string
		for _, it := range items {
			out = append(out, it.Text)
		}
		return strings.Join(out, ",")
	}
	s2, got, err := st.Open(s.Meta.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if texts(got) != "fix,summary 2,d" {
		t.Errorf("resumed %q", texts(got))
	}
	old, err := s2.Transcripts()
	if err != nil || len(old) != 2 {
		t.Fatalf("kept %v %v", old, err)
	}
	for i, want := range []string{"fix,a,b", "fix,summary 1,c"} {
		items, err := readItems(old[i])
		if err != nil || texts(items) != want {
			t.Errorf("%s: %q %v, want %q", old[i], texts(items), err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(s2.Dir(), ".transcript.jsonl.tmp")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the temporary file is left: %v", err)
	}
	// A session whose transcript cannot be written keeps the one it had.
	if err := os.Chmod(s2.Dir(), 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(s2.Dir(), 0o700)
	if os.Getuid() != 0 {
		if err := s2.Replace([]model.Item{user("x")}); err == nil {
			t.Error("Replace in a read-only directory succeeded")
		}
		if _, got, _ := st.Open(s.Meta.ID); texts(got) != "fix,summary 2,d" {
			t.Errorf("after a failed Replace: %q", texts(got))
		}
	}
}

// TestResolve: a session is named by its whole id, by "last", or by a
// part of its id no other session's has (its random end, a beginning); a
// part several share is refused with them listed; an MCP server's record
// cannot be resumed, and Open says why.
func TestResolve(t *testing.T) {
	st := Store{Dir: t.TempDir()}
	mk := func(id string, updated time.Time, served bool) {
		m := Meta{ID: id, Updated: updated, Provider: "sim", Model: "sim-claude"}
		if served {
			m.Provider, m.Model = "mcp", "-"
		}
		if err := os.MkdirAll(filepath.Join(st.Dir, id), 0o700); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(st.Dir, id, "meta.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 12, 7, 15, 0, 0, 0, time.UTC)
	mk("20261207T150000-aaaaaa", t0, false)
	mk("20261207T151000-bbbbbb", t0.Add(10*time.Minute), false)
	mk("20261207T152000-cccccc", t0.Add(20*time.Minute), true) // the newest: a server's
	resumable := func(m Meta) bool { return !m.Served() }
	for _, tc := range []struct {
		ref  string
		keep func(Meta) bool
		want string // "" for an error containing werr
		werr string
	}{
		{"20261207T150000-aaaaaa", resumable, "20261207T150000-aaaaaa", ""},
		{"aaaaaa", resumable, "20261207T150000-aaaaaa", ""},
		{"20261207T1510", resumable, "20261207T151000-bbbbbb", ""},
		{"last", resumable, "20261207T151000-bbbbbb", ""},
		{"last", nil, "20261207T152000-cccccc", ""},
		{"cccccc", resumable, "", "session not found"},
		{"20261207T152000-cccccc", resumable, "", "session not found"},
		{"20261207T15", nil, "", "several sessions match (20261207T152000-cccccc, 20261207T151000-bbbbbb, 20261207T150000-aaaaaa)"},
		{"zzz", nil, "", "session not found"},
		{"../x", nil, "", "session not found"},
	} {
		got, err := st.Resolve(tc.ref, tc.keep)
		if tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.ref, got, err, tc.want)
		}
		if tc.want == "" && (err == nil || !strings.Contains(err.Error(), tc.werr)) {
			t.Errorf("Resolve(%q) = %q, %v; want an error with %q", tc.ref, got, err, tc.werr)
		}
	}
	if _, _, err := st.Open("cccccc"); !errors.Is(err, ErrServed) {
		t.Errorf("Open of a server's record: %v, want ErrServed", err)
	}
	s, _, err := st.Open("bbbbbb")
	if err != nil || s.Meta.ID != "20261207T151000-bbbbbb" {
		t.Fatalf("Open(bbbbbb) = %v, %v", s, err)
	}
	s.Close()
}
