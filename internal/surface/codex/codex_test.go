package codex

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// FuzzShellCommand feeds arbitrary input to shell_command: decoding never
// panics and fails only with ErrInvalidInput; a decoded call carries its
// command; the rendering always starts with the exit code.
func FuzzShellCommand(f *testing.F) {
	for _, s := range []string{`{"command":"ls"}`, `{"command":"ls","workdir":"sub","timeout_ms":100,"login":false}`, `{"command":""}`,
		`{"command":["ls"]}`, `{"cmd":"ls"}`, `{"command":"ls","timeout_ms":-1}`, `{"command":"ls","timeout_ms":1e300}`, `null`, "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, input string) {
		c := model.ToolCall{ID: "c", Name: "shell_command", Input: input}
		calls, err := ShellCommand{}.Decode(c)
		if err != nil {
			if tool.KindOf(err) != tool.ErrInvalidInput {
				t.Fatalf("decode error of kind %q: %v", tool.KindOf(err), err)
			}
			return
		}
		a, ok := calls[0].Args.(*tool.ExecArgs)
		if len(calls) != 1 || !ok || strings.TrimSpace(a.Command) == "" || a.TimeoutMS < 0 {
			t.Fatalf("decoded %+v", calls)
		}
		for _, r := range []tool.Result{{ExitCode: new(int)}, {TimedOut: true, Stdout: input}, {Err: &tool.Error{Kind: tool.ErrShell, Message: "gone"}}} {
			if out := (ShellCommand{}).Encode(c, []tool.Result{r}); !strings.HasPrefix(out.Text, "Exit code: ") {
				t.Fatalf("rendering %q", out.Text)
			}
		}
	})
}

func TestShellCommandRendering(t *testing.T) {
	c := model.ToolCall{ID: "c", Name: "shell_command", Input: `{"command":"x","timeout_ms":250}`}
	zero, three := 0, 3
	tests := []struct {
		r       tool.Result
		want    string
		isError bool
	}{
		{tool.Result{Stdout: "out\n", Stderr: "warn\n", ExitCode: &zero}, "Exit code: 0\nWall time: 0.0 seconds\nOutput:\nout\nwarn\n", false},
		{tool.Result{Stdout: "partial", ExitCode: &three, Err: &tool.Error{Kind: tool.ErrExit}}, "Exit code: 3\nWall time: 0.0 seconds\nOutput:\npartial", true},
		{tool.Result{Stdout: "started\n", TimedOut: true}, "Exit code: 124\nWall time: 0.0 seconds\nOutput:\ncommand timed out after 250 milliseconds\nstarted\n", true},
		{tool.Result{Err: &tool.Error{Kind: tool.ErrShell, Message: "the shell could not be started"}}, "Exit code: -1\nWall time: 0.0 seconds\nOutput:\nthe shell could not be started", true},
	}
	for _, tc := range tests {
		got := ShellCommand{}.Encode(c, []tool.Result{tc.r})
		if got.Text != tc.want || got.IsError != tc.isError {
			t.Errorf("got %q (error %v), want %q", got.Text, got.IsError, tc.want)
		}
	}
}
