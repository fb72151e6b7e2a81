package generic

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
)

func TestRenderNumbered(t *testing.T) {
	tests := []struct {
		name string
		f    tool.FileView
		lim  int
		want string
	}{
		{"final newline", tool.FileView{Content: "a\nb\n", StartLine: 1, TotalLines: 3, FinalNewline: true}, 10, "     1\ta\n     2\tb"},
		{"no final newline", tool.FileView{Content: "a\nb", StartLine: 1, TotalLines: 2}, 10, "     1\ta\n     2\tb"},
		{"limit", tool.FileView{Content: "a\nb\nc\n", StartLine: 1, TotalLines: 4, FinalNewline: true}, 2, "     1\ta\n     2\tb\n(showing lines 1-2 of 3; use offset=3 to read on)"},
		{"offset", tool.FileView{Content: "c\n", StartLine: 3, TotalLines: 4, FinalNewline: true}, 2, "     3\tc"},
		{"blank lines kept", tool.FileView{Content: "a\n\n\n", StartLine: 1, TotalLines: 4, FinalNewline: true}, 10, "     1\ta\n     2\t\n     3\t"},
		{"empty", tool.FileView{Content: "", StartLine: 1, TotalLines: 1}, 10, "(the file is empty)"},
		{"long line", tool.FileView{Content: strings.Repeat("x", MaxLineChars+5), StartLine: 1, TotalLines: 1}, 10, "     1\t" + strings.Repeat("x", MaxLineChars) + "… [line cut at 2000 characters]"},
		{"a file past the bound", tool.FileView{Content: "a\nb", StartLine: 1, TotalLines: 2, Note: "big is 300 bytes, more than…"}, 10, "     1\ta\n     2\tb\n(big is 300 bytes, more than…)"},
	}
	for _, tt := range tests {
		if got := RenderNumbered(&tt.f, tt.lim); got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, got, tt.want)
		}
	}
}

// FuzzDecode feeds arbitrary input to every generic tool: decoding never
// panics, a decoded call always carries typed arguments, and executing it
// never touches anything outside the workspace.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"path":"a"}`, `{"path":"../x","content":"y"}`, `{"command":"true"}`, `{"path":"a","old_string":"a","new_string":"b"}`,
		`{"path":"a","offset":-1}`, `{"path":7}`, `[]`, `null`, `{"restart":true}`, `{"path":"/etc/passwd"}`, "\x00", `{"path":"a","limit":1e99}`,
		`{"command":"ls","sandbox_permissions":"require_escalated","justification":"why"}`, `{"command":"ls","sandbox_permissions":1}`} {
		for _, name := range []string{"read_file", "write_file", "list_dir", "edit_file", "bash"} {
			f.Add(name, s)
		}
	}
	base := f.TempDir()
	dir := filepath.Join(base, "ws")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a"), []byte("a\nb\n"), 0o644)
	w, err := fs.Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	defer w.Close()
	ex := &fs.Executor{W: w}
	bs := map[string]interface {
		Decode(model.ToolCall) ([]tool.Call, error)
		Encode(model.ToolCall, []tool.Result) model.ToolResult
	}{}
	for _, b := range Bindings() {
		bs[b.Spec().Name] = b
	}
	f.Fuzz(func(t *testing.T, name, input string) {
		b, ok := bs[name]
		if !ok {
			return
		}
		c := model.ToolCall{ID: "c", Name: name, Input: input}
		calls, err := b.Decode(c)
		if err != nil {
			if tool.KindOf(err) != tool.ErrInvalidInput {
				t.Fatalf("decode error of kind %q: %v", tool.KindOf(err), err)
			}
			return
		}
		var rs []tool.Result
		for _, call := range calls {
			if call.Op != tool.OpRestart && call.Args == nil {
				t.Fatalf("call without arguments: %+v", call)
			}
			if call.Op == tool.OpExec || call.Op == tool.OpRestart {
				rs = append(rs, tool.Result{CallID: call.ID, Op: call.Op, ExitCode: new(int)})
				continue
			}
			rs = append(rs, ex.Execute(context.Background(), call))
		}
		b.Encode(c, rs)
		if ents, _ := os.ReadDir(base); len(ents) != 1 {
			t.Fatalf("%s %q wrote outside the workspace", name, input)
		}
	})
}
