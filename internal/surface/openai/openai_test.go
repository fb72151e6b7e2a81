package openai

import (
	"encoding/json"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// FuzzDecode feeds arbitrary input to the typed shell and apply_patch:
// decoding never panics, fails only with ErrInvalidInput, and a decoded call
// carries typed arguments; encoding any results gives well-formed output
// entries, one per command.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"commands":["ls"],"timeout_ms":null,"max_output_length":null}`, `{"commands":[]}`, `{"commands":"ls"}`,
		`{"commands":["a","b"],"timeout_ms":-5,"max_output_length":3}`, `{"type":"update_file","path":"a","diff":"@@\n-a\n+b"}`,
		`{"type":"delete_file","path":"a"}`, `{"type":"create_file","path":"a"}`, `{"type":"update_file","path":"a"}`, `null`, `[]`, "\x00"} {
		f.Add(true, s)
		f.Add(false, s)
	}
	f.Fuzz(func(t *testing.T, shell bool, input string) {
		var b interface {
			Decode(model.ToolCall) ([]tool.Call, error)
			Encode(model.ToolCall, []tool.Result) model.ToolResult
		} = ApplyPatch{}
		if shell {
			b = Shell{}
		}
		c := model.ToolCall{ID: "c", Name: "x", Input: input}
		calls, err := b.Decode(c)
		if err != nil {
			if tool.KindOf(err) != tool.ErrInvalidInput {
				t.Fatalf("decode error of kind %q: %v", tool.KindOf(err), err)
			}
			return
		}
		rs := make([]tool.Result, len(calls))
		for i, call := range calls {
			if call.Args == nil {
				t.Fatalf("call without arguments: %+v", call)
			}
			code := i
			rs[i] = tool.Result{CallID: call.ID, Op: call.Op, ExitCode: &code, Stdout: input, Stderr: input, TimedOut: i == 2}
		}
		r := b.Encode(c, rs)
		if shell {
			var entries []OutputEntry
			if err := json.Unmarshal(r.Native, &entries); err != nil || len(entries) != len(calls) {
				t.Fatalf("%d entries for %d commands: %v", len(entries), len(calls), err)
			}
		}
	})
}
