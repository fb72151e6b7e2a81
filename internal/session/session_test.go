package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

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
