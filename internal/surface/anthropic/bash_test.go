package anthropic

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

func intp(n int) *int { return &n }

// TestBashEncode: every result has visible text, since the Messages API
// refuses an empty or whitespace-only text block.
func TestBashEncode(t *testing.T) {
	c := model.ToolCall{ID: "toolu_1", Name: "bash", Input: `{"command":"mkdir x"}`}
	tests := []struct {
		name    string
		r       tool.Result
		want    string
		isError bool
	}{
		{"no output", tool.Result{Op: tool.OpExec, ExitCode: intp(0)}, NoOutput, false},
		{"only whitespace", tool.Result{Op: tool.OpExec, Stdout: "\n", Stderr: "  \n", ExitCode: intp(0)}, NoOutput, false},
		{"stdout", tool.Result{Op: tool.OpExec, Stdout: "hi\n", ExitCode: intp(0)}, "hi", false},
		{"stdout and stderr", tool.Result{Op: tool.OpExec, Stdout: "out\n", Stderr: "warn\n", ExitCode: intp(0)}, "out\nwarn", false},
		{"failure without output", tool.Result{Op: tool.OpExec, ExitCode: intp(1), Err: &tool.Error{Kind: tool.ErrExit}}, "Exit code: 1", true},
		{"restart", tool.Result{Op: tool.OpRestart}, "tool has been restarted.", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bash{}.Encode(c, []tool.Result{tt.r})
			if got.Text != tt.want || got.IsError != tt.isError || got.CallID != c.ID {
				t.Fatalf("got %+v, want %q (error %v)", got, tt.want, tt.isError)
			}
		})
	}
}

// TestMalformedInput: input that is not JSON is answered as such, with
// where it broke, on each typed tool; it is never read as an empty object.
func TestMalformedInput(t *testing.T) {
	bindings := []surface.Binding{Bash{}, NewEditor("text_editor_20250728"), Memory{}}
	tests := []struct {
		input string
		want  []string
	}{
		{`{"command": "go test ./...", "restart": tru`, []string{"is not valid JSON: it ends at byte 43 before the JSON value is complete", `after "t ./...\", \"restart\": tru"`}},
		{`{"command": "ls" "path": "/x"}`, []string{"is not valid JSON", "invalid character '\"' after object key:value pair", "at byte 18 of 30", `after "{\"command\": \"ls\" \""`}},
		{`["ls"]`, []string{"the input must be a JSON object, got array"}},
		{`{"command": 7}`, []string{"`command` must be of type string, got number"}},
	}
	for _, b := range bindings {
		for _, tt := range tests {
			name := b.Spec().Name
			_, err := b.Decode(model.ToolCall{ID: "toolu_1", Name: name, Input: tt.input})
			if err == nil {
				t.Errorf("%s accepted %s", name, tt.input)
				continue
			}
			res := surface.DecodeFailure(b, model.ToolCall{ID: "toolu_1", Name: name, Input: tt.input}, err)
			if !res.IsError || !strings.HasPrefix(res.Text, "Invalid input for the "+name+" tool: ") {
				t.Errorf("%s: %+v", name, res)
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("%s %s: %q lacks %q", name, tt.input, res.Text, w)
				}
			}
		}
	}
}

func FuzzDecodeInput(f *testing.F) {
	f.Add(`{"command": "ls"}`)
	f.Add(`{"command": "go test ./...", "restart": tru`)
	f.Add(`["x"]`)
	f.Add("{\"command\": \"\xff\"")
	f.Fuzz(func(t *testing.T, input string) {
		var in struct {
			Command *string `json:"command"`
			Restart bool    `json:"restart"`
		}
		err := decodeInput("bash", input, &in)
		if err != nil && !json.Valid([]byte(orEmpty(input))) && !strings.Contains(err.Error(), "is not valid JSON") {
			t.Fatalf("%q: %v", input, err)
		}
	})
}

// TestNoBlankResult: no binding of the surface answers with blank text,
// whatever an executor returns.
func TestNoBlankResult(t *testing.T) {
	c := model.ToolCall{ID: "toolu_1", Name: "str_replace_based_edit_tool", Input: `{"command":"view","path":"a"}`}
	for _, r := range []tool.Result{{Op: "file.other"}, {Op: "file.other", Output: " \n"}} {
		if got := NewEditor("text_editor_20250728").Encode(c, []tool.Result{r}); strings.TrimSpace(got.Text) == "" {
			t.Errorf("blank result for %+v", r)
		}
	}
}

// TestEditorBoundsNotes: a view of a file past the file tools' bound shows
// the lines it read and the note after them; an undo past the bounded
// history says why in Truss's words, and an undo without any history
// keeps the reference's.
func TestEditorBoundsNotes(t *testing.T) {
	ed := NewEditor("text_editor_20250124")
	view := model.ToolCall{ID: "toolu_1", Name: "str_replace_editor", Input: `{"command":"view","path":"/repo/big"}`}
	r := tool.Result{Op: tool.OpView, File: &tool.FileView{Path: "/repo/big", Content: "a\nb", StartLine: 1, TotalLines: 2, Note: "big is 300 bytes"}}
	if got := ed.Encode(view, []tool.Result{r}).Text; got != "Here's the result of running `cat -n` on /repo/big:\n     1\ta\n     2\tb\n<NOTE>big is 300 bytes</NOTE>\n" {
		t.Errorf("view: %q", got)
	}
	ranged := model.ToolCall{ID: "toolu_3", Name: "str_replace_editor", Input: `{"command":"view","path":"/repo/big","view_range":[900,910]}`}
	past := &tool.Error{Kind: tool.ErrInvalidRange, Reason: "past_bound", Limit: 800, Message: "the start line 900 is outside the file's lines [1, 800]: big is 300 bytes"}
	if got := ed.Encode(ranged, []tool.Result{{Op: tool.OpView, Err: past}}).Text; got != past.Message {
		t.Errorf("a range past what a view reads: %q", got)
	}
	undo := model.ToolCall{ID: "toolu_2", Name: "str_replace_editor", Input: `{"command":"undo_edit","path":"/repo/f"}`}
	for _, tc := range []struct {
		err  *tool.Error
		want string
	}{
		{&tool.Error{Kind: tool.ErrNotFound, Reason: "history_dropped", Message: "No edit history left for /repo/f: …"}, "No edit history left for /repo/f: …"},
		{&tool.Error{Kind: tool.ErrNotFound, Message: "no edit history found for /repo/f"}, "No edit history found for /repo/f."},
	} {
		if got := ed.Encode(undo, []tool.Result{{Op: tool.OpUndo, Err: tc.err}}).Text; got != tc.want {
			t.Errorf("undo: %q, want %q", got, tc.want)
		}
	}
}
