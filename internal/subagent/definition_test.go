package subagent

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
)

func TestParseDefinition(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     *Definition
		err      string
	}{
		{name: "full", in: "---\nname: reviewer\ndescription: Reviews a change.\ntools: [read_file, bash]\nmodel: claude-haiku-4-5\nbudget: {max_turns: 10, max_tokens: 2000, max_cost_usd: 0.5, max_wall: 5m}\n---\nYou review.\n\nCarefully.\n",
			want: &Definition{Name: "reviewer", Description: "Reviews a change.", Tools: []string{"read_file", "bash"}, Model: "claude-haiku-4-5",
				Budget: agent.Budget{MaxTurns: 10, MaxTokens: 2000, MaxCost: 0.5, MaxWall: 5 * time.Minute}, Prompt: "You review.\n\nCarefully.", Path: "x.md"}},
		{name: "comma tools and name from file", in: "---\ndescription: d\ntools: read_file, list_dir\n---\nbody",
			want: &Definition{Name: "x", Description: "d", Tools: []string{"read_file", "list_dir"}, Prompt: "body", Path: "x.md"}},
		{name: "crlf", in: "---\r\ndescription: d\r\n---\r\nbody\r\n",
			want: &Definition{Name: "x", Description: "d", Prompt: "body", Path: "x.md"}},
		{name: "no front matter", in: "just text", err: "starts with a '---' line"},
		{name: "unclosed", in: "---\ndescription: d\nbody", err: "no closing '---'"},
		{name: "unknown key", in: "---\ndescription: d\ncolour: red\n---\nbody", err: "field colour not found"},
		{name: "no description", in: "---\nname: a\n---\nbody", err: "needs a description"},
		{name: "empty body", in: "---\ndescription: d\n---\n", err: "body"},
		{name: "bad name", in: "---\nname: Big Name\ndescription: d\n---\nbody", err: "agent name"},
		{name: "bad wall", in: "---\ndescription: d\nbudget: {max_wall: soon}\n---\nbody", err: "max_wall"},
		{name: "negative", in: "---\ndescription: d\nbudget: {max_turns: -1}\n---\nbody", err: "negative"},
		{name: "tools map", in: "---\ndescription: d\ntools: {a: b}\n---\nbody", err: "tools must be"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ParseDefinition("x.md", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d, tc.want) {
				t.Errorf("got %+v\nwant %+v", d, tc.want)
			}
		})
	}
}

func TestParseDefinitions(t *testing.T) {
	if defs, err := ParseDefinitions(nil); err != nil || defs != nil {
		t.Fatalf("none: %v %v", defs, err)
	}
	files := []Source{
		{".truss/agents/b.md", []byte("---\ndescription: B\n---\nbe b")},
		{".truss/agents/a.md", []byte("---\ndescription: A\n---\nbe a")},
	}
	defs, err := ParseDefinitions(files)
	if err != nil || len(defs) != 2 || defs[0].Name != "a" || defs[1].Name != "b" || defs[0].Path != ".truss/agents/a.md" {
		t.Fatalf("%+v %v", defs, err)
	}
	files = append(files, Source{".truss/agents/c.md", []byte("---\nname: a\ndescription: another A\n---\nbe a")})
	if _, err := ParseDefinitions(files); err == nil || !strings.Contains(err.Error(), `both define the agent "a"`) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := ParseDefinitions([]Source{{".truss/agents/x.md", []byte("no front matter")}}); err == nil {
		t.Fatal("a bad file is no error")
	}
}

func FuzzParseDefinition(f *testing.F) {
	f.Add([]byte("---\nname: reviewer\ndescription: Reviews.\ntools: [a, b]\nbudget: {max_turns: 3, max_wall: 1m}\n---\nbody\n"))
	f.Add([]byte("---\ndescription: d\n---"))
	f.Add([]byte("---\n---\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseDefinition("f.md", b)
		if err != nil {
			return
		}
		if d.Description == "" || d.Prompt == "" || !validName(d.Name) || d.Budget.MaxTurns < 0 || d.Budget.MaxWall < 0 {
			t.Fatalf("accepted an invalid definition: %+v", d)
		}
	})
}
