package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/patch"
)

// readOnlyOpts are the options of a session with no model on a
// workspace holding a.txt ("one\n"), through the surface's tools as
// truss tool call has them, in mode.
func readOnlyOpts(t *testing.T, surface string, mode sandbox.Mode) Options {
	t.Helper()
	root, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRUSS_HOME", home)
	t.Setenv("TMPDIR", t.TempDir())
	set, err := ToolCallSet(surface)
	if err != nil {
		t.Fatal(err)
	}
	return Options{Version: "test", NoModel: true, NoSession: true, Tools: set, Root: root,
		KeyDir: filepath.Join(home, "key"), MemoryDir: filepath.Join(home, "memories"),
		Sandbox:    SandboxOptions{Mode: mode, Fallback: sandbox.FallbackNone},
		Validation: ValidationOptions{Off: true}, MCP: MCPOptions{Off: true}, Spawn: SpawnOptions{Off: true},
		OnWarning: func(msg string) { t.Log("warning:", msg) }}
}

// callTool decodes one call of the named tool as the surface would and
// runs it on s, returning its results.
func callTool(t *testing.T, s *Session, name, input string) []tool.Result {
	t.Helper()
	b, ok := s.Tools().Lookup(name)
	if !ok {
		t.Fatalf("no tool %s on %s", name, s.Tools().Surface)
	}
	calls, err := b.Decode(model.ToolCall{ID: "c", Name: name, Kind: b.Spec().Kind, Input: input})
	if err != nil {
		t.Fatalf("%s %s: %v", name, input, err)
	}
	var out []tool.Result
	for _, c := range calls {
		out = append(out, s.Execute(context.Background(), c))
	}
	return out
}

// TestReadOnlyFileTools: in a read-only sandbox every change of the file
// tools, on every surface (Anthropic's editors, the generic tools,
// OpenAI's apply_patch operation, Codex's freeform apply_patch), is
// refused with a message naming the mode, that reading works and how
// the user changes it, and the workspace stays as it was, while views
// and listings work; in workspace-write the same calls make their
// changes.
func TestReadOnlyFileTools(t *testing.T) {
	type call struct{ tool, input string }
	tests := []struct {
		name, surface string
		writes        []call
		want          map[string]string // the workspace after the writes in workspace-write ("" for gone)
		reads         []call
	}{
		{"anthropic editor", "anthropic", []call{
			{"str_replace_based_edit_tool", `{"command":"create","path":"new.txt","file_text":"new\n"}`},
			{"str_replace_based_edit_tool", `{"command":"str_replace","path":"a.txt","old_str":"one","new_str":"two"}`},
			{"str_replace_based_edit_tool", `{"command":"insert","path":"a.txt","insert_line":1,"insert_text":"three"}`},
		}, map[string]string{"a.txt": "two\nthree\n", "new.txt": "new\n"}, []call{
			{"str_replace_based_edit_tool", `{"command":"view","path":"a.txt"}`},
			{"str_replace_based_edit_tool", `{"command":"view","path":"."}`},
		}},
		{"anthropic editor with undo", "anthropic", []call{
			{"str_replace_editor", `{"command":"str_replace","path":"a.txt","old_str":"one","new_str":"two"}`},
			{"str_replace_editor", `{"command":"insert","path":"a.txt","insert_line":0,"new_str":"zero"}`},
			{"str_replace_editor", `{"command":"undo_edit","path":"a.txt"}`},
			{"str_replace_editor", `{"command":"create","path":"d/n.txt","file_text":"n"}`},
		}, map[string]string{"a.txt": "two\n", "d/n.txt": "n"}, []call{
			{"str_replace_editor", `{"command":"view","path":"a.txt"}`},
		}},
		{"generic", "generic", []call{
			{"write_file", `{"path":"new.txt","content":"hi\n"}`},
			{"write_file", `{"path":"a.txt","content":"over\n"}`},
			{"edit_file", `{"path":"a.txt","old_string":"over","new_string":"edited"}`},
		}, map[string]string{"a.txt": "edited\n", "new.txt": "hi\n"}, []call{
			{"read_file", `{"path":"a.txt"}`},
			{"list_dir", `{"path":"."}`},
		}},
		{"openai apply_patch", "openai", []call{
			{"apply_patch", `{"type":"create_file","path":"op.txt","diff":"+one\n+two\n"}`},
			{"apply_patch", `{"type":"update_file","path":"a.txt","diff":"@@\n-one\n+ONE\n"}`},
			{"apply_patch", `{"type":"delete_file","path":"op.txt"}`},
		}, map[string]string{"a.txt": "ONE\n", "op.txt": ""}, nil},
		{"codex apply_patch", "codex", []call{
			{"apply_patch", "*** Begin Patch\n*** Add File: add.txt\n+added\n*** Update File: a.txt\n*** Move to: moved.txt\n@@\n-one\n+uno\n*** End Patch\n"},
			{"apply_patch", "*** Begin Patch\n*** Delete File: add.txt\n*** End Patch\n"},
		}, map[string]string{"a.txt": "", "add.txt": "", "moved.txt": "uno\n"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []sandbox.Mode{sandbox.ReadOnly, sandbox.WorkspaceWrite} {
				o := readOnlyOpts(t, tc.surface, mode)
				s, err := Open(context.Background(), o)
				if err != nil {
					t.Fatal(err)
				}
				if got := s.SandboxMode(); got != mode {
					t.Errorf("SandboxMode %q, want %q", got, mode)
				}
				for _, c := range tc.writes {
					for _, r := range callTool(t, s, c.tool, c.input) {
						switch {
						case mode == sandbox.WorkspaceWrite && r.Err != nil:
							t.Errorf("%s: %s %s: %v", mode, c.tool, c.input, r.Err)
						case mode == sandbox.ReadOnly:
							checkSandboxRefusal(t, r, c.tool+" "+c.input)
						}
					}
				}
				for _, c := range tc.reads {
					for _, r := range callTool(t, s, c.tool, c.input) {
						if r.Err != nil {
							t.Errorf("%s: a read was refused: %s %s: %v", mode, c.tool, c.input, r.Err)
						}
					}
				}
				s.Close()
				want := map[string]string{"a.txt": "one\n"}
				if mode == sandbox.WorkspaceWrite {
					want = tc.want
				}
				for name, content := range want {
					b, err := os.ReadFile(filepath.Join(o.Root, name))
					switch {
					case content == "" && err == nil:
						t.Errorf("%s: %s is there: %q", mode, name, b)
					case content != "" && string(b) != content:
						t.Errorf("%s: %s is %q (%v), want %q", mode, name, b, err, content)
					}
				}
				if mode == sandbox.ReadOnly {
					ents, _ := os.ReadDir(o.Root)
					if len(ents) != 1 {
						t.Errorf("read-only: the workspace holds %d entries, want a.txt alone", len(ents))
					}
				}
			}
		})
	}
}

// checkSandboxRefusal fails unless r is the read-only sandbox's refusal.
func checkSandboxRefusal(t *testing.T, r tool.Result, what string) {
	t.Helper()
	if r.Err == nil {
		t.Errorf("read-only: %s was not refused", what)
		return
	}
	if r.Err.Kind != tool.ErrReadOnly || r.Err.Reason != "sandbox" {
		t.Errorf("read-only: %s: refused as %s/%s: %v", what, r.Err.Kind, r.Err.Reason, r.Err)
	}
	for _, s := range []string{"sandbox is read-only", "Reading still works", "--sandbox workspace-write", "/sandbox workspace-write"} {
		if !strings.Contains(r.Err.Message, s) {
			t.Errorf("read-only: %s: the refusal does not say %q: %s", what, s, r.Err.Message)
		}
	}
	if len(r.Changes) > 0 {
		t.Errorf("read-only: %s: changes %+v", what, r.Changes)
	}
}

// TestReadOnlyEveryFileOp: every operation of the file and patch
// executors that may change files (their Mutates) is refused in a
// read-only sandbox, a delete and a rename (which no model surface here
// sends) included, and is an edit by approval.IsEdit, which the gate
// reads: an operation added to the executors is refused too, or this
// fails.
func TestReadOnlyEveryFileOp(t *testing.T) {
	fx := &fs.Executor{}
	px := patch.NewExecutor(fx)
	args := map[tool.Op]any{
		tool.OpCreate:  &tool.CreateArgs{Path: "n.txt", Content: "n"},
		tool.OpWrite:   &tool.CreateArgs{Path: "a.txt", Content: "w"},
		tool.OpReplace: &tool.ReplaceArgs{Path: "a.txt", Old: "one", New: "two"},
		tool.OpInsert:  &tool.InsertArgs{Path: "a.txt", Line: 1, Text: "x"},
		tool.OpDelete:  &tool.DeleteArgs{Path: "a.txt"},
		tool.OpRename:  &tool.RenameArgs{From: "a.txt", To: "b.txt"},
		tool.OpUndo:    &tool.UndoArgs{Path: "a.txt"},
		tool.OpPatch:   &tool.PatchArgs{Text: "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"},
		tool.OpPatchOp: &tool.PatchOpArgs{Type: "delete_file", Path: "a.txt"},
	}
	o := readOnlyOpts(t, "generic", sandbox.ReadOnly)
	s, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ops := range []struct {
		e   tool.Executor
		ops []tool.Op
	}{{fx, fs.Ops}, {px, patch.Ops}} {
		for _, op := range ops.ops {
			call := tool.Call{ID: "c", Op: op, Args: args[op]}
			if !tool.Mutates(ops.e, call) {
				continue
			}
			if !approval.IsEdit(op) {
				t.Errorf("%s changes files but is no edit to approval.IsEdit: the read-only gate lets it through", op)
			}
			if args[op] == nil {
				t.Errorf("%s: no arguments in this test", op)
				continue
			}
			checkSandboxRefusal(t, s.Execute(context.Background(), call), string(op))
		}
	}
	if b, err := os.ReadFile(filepath.Join(o.Root, "a.txt")); string(b) != "one\n" {
		t.Errorf("a.txt is %q (%v)", b, err)
	}
}

// modeVar is a sandbox mode that changes, as a session's does when it
// is switched in place.
type modeVar struct{ m atomic.Value }

func (v *modeVar) SandboxMode() sandbox.Mode { return v.m.Load().(sandbox.Mode) }

// TestReadOnlyFollowsTheSwitch: the gate asks for the mode at every
// call, so the file tools follow a switch of the sandbox mode within a
// session — read-only refuses the next edit, workspace-write lets the one
// after it through — and the preview an approval shows is refused alike;
// and a session re-opened in the other mode, as the interactive /sandbox
// re-opens one, follows it both ways.
func TestReadOnlyFollowsTheSwitch(t *testing.T) {
	t.Run("in place", func(t *testing.T) {
		ws, err := fs.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		mux := &tool.Mux{}
		fx := &fs.Executor{W: ws}
		mux.HandleAll(fs.Ops, fx)
		mode := &modeVar{}
		mode.m.Store(sandbox.WorkspaceWrite)
		gate := fileWrites{next: mux, mode: mode}
		write := func(content string) tool.Result {
			return gate.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpWrite, Args: &tool.CreateArgs{Path: "f.txt", Content: content}})
		}
		read := func() string {
			b, _ := os.ReadFile(filepath.Join(ws.Dir(), "f.txt"))
			return string(b)
		}
		if r := write("1"); r.Err != nil || read() != "1" {
			t.Fatalf("workspace-write: %v, %q", r.Err, read())
		}
		mode.m.Store(sandbox.ReadOnly)
		checkSandboxRefusal(t, write("2"), "a write after the switch to read-only")
		if _, err := tool.Preview(context.Background(), gate, tool.Call{ID: "c", Op: tool.OpWrite, Args: &tool.CreateArgs{Path: "f.txt", Content: "2"}}); tool.KindOf(err) != tool.ErrReadOnly {
			t.Errorf("the preview of a refused write: %v", err)
		}
		if r := gate.Execute(context.Background(), tool.Call{ID: "c", Op: tool.OpView, Args: &tool.ViewArgs{Path: "f.txt"}}); r.Err != nil {
			t.Errorf("read-only: a view was refused: %v", r.Err)
		}
		if read() != "1" {
			t.Errorf("read-only: f.txt is %q", read())
		}
		mode.m.Store(sandbox.WorkspaceWrite)
		if r := write("3"); r.Err != nil || read() != "3" {
			t.Errorf("back to workspace-write: %v, %q", r.Err, read())
		}
	})
	t.Run("re-opened", func(t *testing.T) {
		o := readOnlyOpts(t, "generic", sandbox.WorkspaceWrite)
		for i, mode := range []sandbox.Mode{sandbox.WorkspaceWrite, sandbox.ReadOnly, sandbox.WorkspaceWrite} {
			o.Sandbox.Mode = mode
			s, err := Open(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			content := strings.Repeat("x", i+1)
			rs := callTool(t, s, "write_file", `{"path":"a.txt","content":"`+content+`"}`)
			s.Close()
			b, _ := os.ReadFile(filepath.Join(o.Root, "a.txt"))
			if mode == sandbox.ReadOnly {
				checkSandboxRefusal(t, rs[0], "write_file after re-opening read-only")
				content = strings.Repeat("x", i)
			} else if rs[0].Err != nil {
				t.Errorf("%s: %v", mode, rs[0].Err)
			}
			if string(b) != content {
				t.Errorf("after %s: a.txt is %q, want %q", mode, b, content)
			}
		}
	})
}
