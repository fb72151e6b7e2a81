package patch

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/tool"
	tfs "github.com/trussdev/truss/internal/tool/fs"
)

var update = flag.Bool("update", false, "rewrite the expected contents of testdata/edits from what the engine writes")

// editCase is one edit of the corpus in testdata/edits: a file as it was,
// the same change as a Responses update_file operation and as a Codex
// envelope, and what each surface leaves in the file. The two expected
// contents differ only where the appliers do: the operation keeps the
// file's final newline or its absence, the envelope always ends the file
// with one.
type editCase struct {
	Note      string `json:"note"`
	Path      string `json:"path"`
	Before    string `json:"before"`
	Operation struct {
		Type string `json:"type"`
		Path string `json:"path"`
		Diff string `json:"diff"`
	} `json:"operation"`
	Envelope string `json:"envelope"`
	OpenAI   string `json:"openai"`
	Codex    string `json:"codex"`
}

// TestEdits applies every edit of the corpus through the executor both
// OpenAI surfaces call — the operation as the openai surface's
// apply_patch_call decodes it, the envelope as the codex surface's
// custom tool call does — each to a fresh copy of the file, and compares
// the file's bytes with the expected ones. With -update the expected
// contents are rewritten from the results (check the diff before
// committing it).
func TestEdits(t *testing.T) {
	files, err := filepath.Glob("testdata/edits/*.json")
	if err != nil || len(files) == 0 {
		t.Fatal("no edits in testdata/edits")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c editCase
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			op := c.Operation
			openai := applyEdit(t, c, tool.Call{ID: "op", Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: op.Type, Path: op.Path, Diff: op.Diff}})
			codex := applyEdit(t, c, tool.Call{ID: "env", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: c.Envelope}})
			if *update {
				c.OpenAI, c.Codex = openai, codex
				var buf bytes.Buffer
				enc := json.NewEncoder(&buf)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(c); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if openai != c.OpenAI {
				t.Errorf("%s: the operation wrote\n%q\nwant\n%q", c.Note, openai, c.OpenAI)
			}
			if codex != c.Codex {
				t.Errorf("%s: the envelope wrote\n%q\nwant\n%q", c.Note, codex, c.Codex)
			}
		})
	}
}

// applyEdit writes the case's file into a new workspace, executes call
// there and returns the file's content afterwards; the call must succeed.
func applyEdit(t *testing.T, c editCase, call tool.Call) string {
	t.Helper()
	ws := t.TempDir()
	p := filepath.Join(ws, filepath.FromSlash(c.Path))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(c.Before), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := tfs.Open(ws)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r := NewExecutor(&tfs.Executor{W: w}).Execute(context.Background(), call)
	if r.Err != nil {
		t.Fatalf("%s (%s): %v", c.Note, call.Op, r.Err)
	}
	if want := "Success. Updated the following files:\nM " + c.Path + "\n"; r.Output != want {
		t.Fatalf("%s (%s): output %q, want %q", c.Note, call.Op, r.Output, want)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}
