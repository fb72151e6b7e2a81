package codex

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// FuzzShellCommand feeds arbitrary input to shell_command: decoding never
// panics and fails only with ErrInvalidInput; a decoded call carries its
// command; the rendering always starts with the exit code.
func FuzzShellCommand(f *testing.F) {
	for _, s := range []string{`{"command":"ls"}`, `{"command":"ls","workdir":"sub","timeout_ms":100,"login":false}`, `{"command":""}`,
		`{"command":["ls"]}`, `{"cmd":"ls"}`, `{"command":"ls","timeout_ms":-1}`, `{"command":"ls","timeout_ms":1e300}`, `null`, "\x00",
		`{"command":"ls","sandbox_permissions":"require_escalated","justification":"why"}`, `{"command":"ls","sandbox_permissions":"bogus"}`} {
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

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name.golden (written with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s:\n got %q\nwant %q", name, got, want)
	}
}

// TestShellCommandRendering: shell_command results as Codex renders them
// (format_exec_output_for_model), byte for byte.
func TestShellCommandRendering(t *testing.T) {
	c := model.ToolCall{ID: "c", Name: "shell_command", Input: `{"command":"x","timeout_ms":250}`}
	zero, three := 0, 3
	var long strings.Builder
	for range 8000 {
		long.WriteString("0123456789\n")
	}
	tests := []struct {
		name    string
		r       tool.Result
		isError bool
	}{
		{"shell_ok", tool.Result{Stdout: "out\n", Stderr: "warn\n", ExitCode: &zero, Wall: 412 * time.Millisecond}, false},
		{"shell_no_output", tool.Result{ExitCode: &zero, Wall: 3 * time.Millisecond}, false},
		{"shell_exit_3", tool.Result{Stdout: "partial", ExitCode: &three, Err: &tool.Error{Kind: tool.ErrExit}, Wall: 2 * time.Second}, true},
		{"shell_timeout", tool.Result{Stdout: "started\n", TimedOut: true, Wall: 251 * time.Millisecond}, true},
		{"shell_not_started", tool.Result{Err: &tool.Error{Kind: tool.ErrShell, Message: "the shell could not be started"}}, true},
		{"shell_truncated", tool.Result{Stdout: long.String(), ExitCode: &zero, Wall: 1250 * time.Millisecond}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ShellCommand{}.Encode(c, []tool.Result{tc.r})
			if got.IsError != tc.isError {
				t.Errorf("is_error %v", got.IsError)
			}
			golden(t, tc.name, got.Text)
		})
	}
}

// TestApplyPatchRendering: a verified patch's result is wrapped as an exec
// result, a patch that fails verification is prefixed, and one the
// sandbox refuses is rejected, as Codex does.
func TestApplyPatchRendering(t *testing.T) {
	c := model.ToolCall{ID: "c", Name: "apply_patch", Input: "*** Begin Patch\n*** End Patch"}
	tests := []struct {
		name string
		r    tool.Result
	}{
		{"patch_ok", tool.Result{Output: "Success. Updated the following files:\nA new.txt\nM a.txt\n", Wall: 2 * time.Millisecond}},
		{"patch_no_match", tool.Result{Err: &tool.Error{Kind: tool.ErrNoMatch, Message: "Failed to find expected lines in a.txt:\nfoo"}}},
		{"patch_parse_error", tool.Result{Err: &tool.Error{Kind: tool.ErrInvalidInput,
			Message: "invalid hunk at line 2, 'bogus' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"}}},
		{"patch_nothing", tool.Result{Err: &tool.Error{Kind: tool.ErrNoMatch, Message: "No files were modified."}}},
		{"patch_write_failed", tool.Result{Err: &tool.Error{Kind: tool.ErrIO, Message: "write a.txt: no space left on device"}, Wall: 150 * time.Millisecond}},
		{"patch_read_only_sandbox", tool.Result{Err: &tool.Error{Kind: tool.ErrReadOnly, Reason: "sandbox", Message: "The patch was not applied: this session's sandbox is read-only, so the file tools change no file."}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ApplyPatch{}.Encode(c, []tool.Result{tc.r})
			if got.IsError != (tc.r.Err != nil) {
				t.Errorf("is_error %v", got.IsError)
			}
			golden(t, tc.name, got.Text)
		})
	}
}

// TestWallSeconds: the duration rounded to a tenth in 32-bit floats and
// printed as Rust prints an f32.
func TestWallSeconds(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0", 3 * time.Millisecond: "0", 49 * time.Millisecond: "0", 50 * time.Millisecond: "0.1", 100 * time.Millisecond: "0.1",
		412 * time.Millisecond: "0.4", 1250 * time.Millisecond: "1.3", 2 * time.Second: "2", 59960 * time.Millisecond: "60",
		123456 * time.Millisecond: "123.5", -time.Second: "0",
	} {
		if got := wallSeconds(d); got != want {
			t.Errorf("wallSeconds(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTruncateMiddle follows Codex's truncate_middle_with_token_budget.
func TestTruncateMiddle(t *testing.T) {
	tests := []struct {
		s      string
		tokens int
		want   string
	}{
		{"", 1, ""},
		{"short", 10, "short"},
		{"abcdefghij", 2, "abcd…1 tokens truncated…ghij"},
		{"abcdefghijk", 2, "abcd…1 tokens truncated…hijk"},
		{"ééééé", 1, "é…2 tokens truncated…é"},
		{"a\nb\nc\nd\ne\nf\n", 1, "a\n…2 tokens truncated…f\n"},
	}
	for _, tc := range tests {
		if got := truncateMiddle(tc.s, tc.tokens); got != tc.want {
			t.Errorf("truncateMiddle(%q, %d) = %q, want %q", tc.s, tc.tokens, got, tc.want)
		}
	}
}

// FuzzTruncateMiddle: the cut keeps a prefix and a suffix of the input
// within the budget, whole characters, around Codex's marker.
func FuzzTruncateMiddle(f *testing.F) {
	f.Add("abcdefghij", 2)
	f.Add("ééééé", 1)
	f.Add("", 0)
	f.Fuzz(func(t *testing.T, s string, tokens int) {
		if tokens < 0 || tokens > 1<<20 || !utf8.ValidString(s) || strings.Contains(s, "…") {
			return
		}
		got := truncateMiddle(s, tokens)
		if len(s) <= tokens*4 {
			if got != s {
				t.Fatalf("kept %q as %q", s, got)
			}
			return
		}
		head, rest, ok := strings.Cut(got, "…")
		mid, tail, ok2 := strings.Cut(rest, " tokens truncated…")
		if !ok || !ok2 || !strings.HasPrefix(s, head) || !strings.HasSuffix(s, tail) || len(head)+len(tail) > tokens*4 || !utf8.ValidString(got) {
			t.Fatalf("truncateMiddle(%q, %d) = %q", s, tokens, got)
		}
		if mid == "" {
			t.Fatalf("no count in %q", got)
		}
	})
}
