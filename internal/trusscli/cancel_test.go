package trusscli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/shell"
)

// TestCanceledCommandKeepsOutput: a command stopped by Ctrl-C is answered,
// on every surface, with what it printed before it was killed, and the
// transcript shows it.
func TestCanceledCommandKeepsOutput(t *testing.T) {
	const cmd = `echo printed-before; echo err-before >&2; sleep 30`
	for _, tc := range []struct {
		surface, tool, input string
	}{
		{"generic", "bash", `{"command":"` + cmd + `"}`},
		{"anthropic", "bash", `{"command":"` + cmd + `"}`},
		{"openai", "shell", `{"commands":["` + cmd + `"]}`},
		{"codex", "shell_command", `{"command":"` + cmd + `"}`},
	} {
		t.Run(tc.surface, func(t *testing.T) {
			set, err := harness.ToolCallSet(tc.surface)
			if err != nil {
				t.Fatal(err)
			}
			b, ok := set.Lookup(tc.tool)
			if !ok {
				t.Fatalf("no %s on %s", tc.tool, tc.surface)
			}
			mc := model.ToolCall{ID: "c", Name: tc.tool, Kind: b.Spec().Kind, Input: tc.input}
			calls, err := b.Decode(mc)
			if err != nil {
				t.Fatal(err)
			}
			sh := shell.New(shell.Config{Dir: t.TempDir()})
			defer sh.Close()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(time.Second, cancel)
			rs := make([]tool.Result, len(calls))
			for i, c := range calls {
				rs[i] = sh.Execute(ctx, c)
			}
			if rs[0].Err == nil || rs[0].Err.Kind != tool.ErrCanceled {
				t.Fatalf("not canceled: %+v", rs[0])
			}
			res := b.Encode(mc, rs)
			for _, want := range []string{"printed-before", "err-before", "canceled"} {
				if !strings.Contains(res.Text, want) {
					t.Errorf("the model's result lacks %q:\n%s", want, res.Text)
				}
			}
			if !res.IsError {
				t.Error("a canceled command is not an error result")
			}
		})
	}
}
