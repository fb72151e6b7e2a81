package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/termsafe"
)

// hostileNames are names a model or a command can give a file, a tool
// call or a server: escape sequences that clear the screen, set the
// window's title or colour what follows, a carriage return that lets a
// name overwrite its line, bidirectional overrides that reorder it,
// controls, a backslash that could fake an escape.
var hostileNames = []string{
	"clear\x1b[2J\x1b[H.txt",
	"title\x1b]0;owned\a",
	"red\x1b[31mgreen",
	"over\rwrite",
	"new\nline",
	"evil\u202Etxt.exe",
	"iso\u2066late\u2069",
	"nul\x01del\x7f",
	"c1\u009b31m",
	`fake\x1b`,
	" lead space",
}

// entryLine is a ledger line of type typ whose data is data, as Show
// reads it: decoded from JSON.
func entryLine(t *testing.T, seq int, typ string, data any) Entry {
	t.Helper()
	b, err := json.Marshal(Entry{V: 1, Seq: uint64(seq), Time: "2026-12-06T21:00:00.000Z", Type: typ, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// showEntries are the entries that name n in every place Show prints a
// name: the workspace and model, a tool call's tool, id and operation, a
// result's changes (an add, a rename of the name and of a name that is
// not UTF-8), a sub-agent's session and ledger, an MCP server and tool.
func showEntries(t *testing.T, n string) []Entry {
	enc := EncodeName(n + "\xff")
	return []Entry{
		entryLine(t, 0, "session.start", map[string]any{"provider": "sim", "model": n, "surface": "generic", "sandbox": "workspace-write", "workspace": "/w/" + n}),
		entryLine(t, 1, "tool.call", map[string]any{"turn": 0, "call_id": "call_" + n, "tool": n, "surface": n, "ops": []any{map[string]any{"op": n}}}),
		entryLine(t, 2, "tool.result", map[string]any{"call_id": "call_" + n, "results": []any{map[string]any{
			"exit_code": 0,
			"changes": []any{
				map[string]any{"kind": "add", "path": n},
				map[string]any{"kind": "update", "path": n, "moved_to": "d/" + n},
				map[string]any{"kind": "add", "path": enc},
			},
			"agent": map[string]any{"session": n, "status": "completed", "turns": 1, "ledger": map[string]any{"dir": "/l/" + n}},
			"mcp":   map[string]any{"server": n, "tool": n},
		}}}),
	}
}

// TestShowNames: every name ledger show prints is shown by termsafe.Name
// (a name that is not UTF-8, quoted with its bytes escaped): nothing in
// the output acts on a terminal (no control but the newline ending each
// line, no bidirectional control), and the name shown is the name, escape
// sequence and all, not what a terminal sanitizer would leave of it.
func TestShowNames(t *testing.T) {
	var all bytes.Buffer
	for _, n := range hostileNames {
		t.Run(termsafe.Name(n), func(t *testing.T) {
			var out strings.Builder
			Show(&out, showEntries(t, n))
			got := out.String()
			all.WriteString(got)
			if err := inert(got); err != "" {
				t.Errorf("%s in\n%s", err, got)
			}
			shown, nm := termsafe.Name(n), termsafe.Name
			for _, want := range []string{
				"· " + shown + " · surface generic",                             // the model
				"· " + nm("/w/"+n) + "\n",                                       // the workspace
				nm("call_"+n) + " · " + shown + " via " + shown + " · " + shown, // id, tool, surface, op
				"· add " + shown + " ·",
				"· rename " + shown + " → " + nm("d/"+n),
				"· add " + ShowName(EncodeName(n+"\xff")),
				"sub-agent " + shown + " completed",
				"ledger " + nm("/l/"+n),
				"mcp " + shown + "/" + shown,
			} {
				if !strings.Contains(got, want) {
					t.Errorf("no %q in\n%s", want, got)
				}
			}
		})
	}
	golden := filepath.Join("testdata", "show_names.golden")
	if *update {
		if err := os.WriteFile(golden, all.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(all.Bytes(), want) {
		t.Errorf("ledger show differs from %s:\ngot\n%s\nwant\n%s", golden, all.Bytes(), want)
	}
}

// inert says what in s could act on a terminal ("" when nothing): a byte
// below 0x20 other than a newline, DEL, a C1 control, a bidirectional
// control, bytes that are not UTF-8.
func inert(s string) string {
	if !utf8.ValidString(s) {
		return "bytes that are not UTF-8"
	}
	for _, r := range s {
		switch {
		case r == '\n':
		case r < 0x20 || r == 0x7f:
			return "a control " + termsafe.Name(string(r))
		case r >= 0x80 && r < 0xa0:
			return "a C1 control " + termsafe.Name(string(r))
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
			return "a bidirectional control " + termsafe.Name(string(r))
		}
	}
	return ""
}

// TestShowUsage: a model response's and a sub-agent's "in" is every input
// token, whatever part of it the cache read or took: the recorded
// input_tokens is only the uncached part.
func TestShowUsage(t *testing.T) {
	for _, c := range []struct {
		usage model.Usage
		want  string
	}{
		{model.Usage{InputTokens: 0, CacheWriteTokens: 894, CacheReadTokens: 1430, OutputTokens: 33}, "in 2324 out 33 cache-read 1430 cache-write 894"},
		{model.Usage{InputTokens: 2332, OutputTokens: 33}, "in 2332 out 33"},
		{model.Usage{InputTokens: 300, CacheReadTokens: 1024, OutputTokens: 5}, "in 1324 out 5 cache-read 1024"},
	} {
		var b bytes.Buffer
		Show(&b, []Entry{
			entryLine(t, 0, "model.response", map[string]any{"turn": 1, "stop_reason": "end_turn", "usage": c.usage}),
			entryLine(t, 1, "tool.result", map[string]any{"call_id": "c", "results": []any{map[string]any{
				"agent": map[string]any{"session": "s", "status": "completed", "turns": 2, "usage": c.usage}}}}),
		})
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 2 || !strings.HasSuffix(lines[0], "turn 1 · end_turn · "+c.want) || !strings.Contains(lines[1], "after 2 turns ("+c.want+")") {
			t.Errorf("usage %+v shown as:\n%s\nwant %q", c.usage, b.String(), c.want)
		}
	}
}

// TestShowSessionEnd: a run's end counts its turns and calls with nouns
// that agree, and says its reason only when it adds to the status.
func TestShowSessionEnd(t *testing.T) {
	for _, tc := range []struct {
		d    map[string]any
		want string
	}{
		{map[string]any{"status": "completed", "turns": json.Number("1"), "calls": json.Number("1")}, "completed · 1 turn · 1 call"},
		{map[string]any{"status": "canceled", "turns": json.Number("0"), "calls": json.Number("2"), "reason": "canceled"}, "canceled · 0 turns · 2 calls"},
		{map[string]any{"status": "budget", "turns": float64(3), "calls": float64(1), "reason": "stopped: 1458 tokens used, budget 1000"}, "budget · 3 turns · 1 call · stopped: 1458 tokens used, budget 1000"},
	} {
		if got := summary("session.end", tc.d); got != tc.want {
			t.Errorf("summary = %q, want %q", got, tc.want)
		}
	}
}

// TestShowUserText: with the ledger's payloads, a user entry shows the
// start of what the user said, quoted on one line and inert for a
// terminal, and its length; without them (or with its payload missing),
// the entry's own data.
func TestShowUserText(t *testing.T) {
	long := strings.Repeat("é", 80)
	for _, tc := range []struct {
		text, want string
	}{
		{"Fix the failing test in calc.py.", `"Fix the failing test in calc.py." · 32 characters`},
		{"line one\nline two", `"line one\nline two" · 17 characters`},
		{"x", `"x" · 1 character`},
		{long, `"` + strings.Repeat("é", 72) + `"… · 80 characters`},
		{"\x1b]0;owned\x07 \u202e gnp.exe", `"\x1b]0;owned\a \u202e gnp.exe" · 20 characters`},
		{"bad \xff byte", `"bad \xff byte" · 10 characters`},
	} {
		sum := sha256.Sum256([]byte(tc.text))
		d := hex.EncodeToString(sum[:])
		e := entryLine(t, 3, "user", map[string]any{"chars": len(tc.text)})
		e.Payloads = map[string]string{"text": d}
		var b strings.Builder
		ShowWith(&b, []Entry{e}, func(digest string) ([]byte, bool) { return []byte(tc.text), digest == d })
		got := strings.TrimSuffix(b.String(), "\n")
		if !strings.HasSuffix(got, "user            "+tc.want) {
			t.Errorf("%q shown as\n%s\nwant it to end %s", tc.text, got, tc.want)
		}
		if err := inert(b.String()); err != "" {
			t.Errorf("%q: %s in %s", tc.text, err, b.String())
		}
		b.Reset()
		ShowWith(&b, []Entry{e}, func(string) ([]byte, bool) { return nil, false })
		if !strings.Contains(b.String(), `{"chars":`) {
			t.Errorf("without the payload: %s", b.String())
		}
	}
}

// TestShowOpTargets: a tool call's line says what each operation acts on
// (the command, the path, a rename's two paths, a sub-agent's task, an
// MCP tool), each name inert and a long command cut.
func TestShowOpTargets(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct {
		ops  []any
		want string
	}{
		{[]any{map[string]any{"op": "shell.exec", "args": map[string]any{"command": "go test ./..."}}}, "shell.exec $ go test ./..."},
		{[]any{map[string]any{"op": "shell.exec", "args": map[string]any{"command": "echo a\necho \x1b[2J" + long}}}, `shell.exec $ echo a\necho \x1b[2J` + strings.Repeat("x", 60-len("echo a\necho \x1b[2J")) + "…"},
		{[]any{map[string]any{"op": "file.replace", "args": map[string]any{"path": "stats.go", "old": "a", "new": "b"}}}, "file.replace stats.go"},
		{[]any{map[string]any{"op": "file.rename", "args": map[string]any{"from": "a.go", "to": "b.go"}}}, "file.rename a.go → b.go"},
		{[]any{map[string]any{"op": "agent.spawn", "args": map[string]any{"task": "write notes.txt"}}}, "agent.spawn write notes.txt"},
		{[]any{map[string]any{"op": "mcp.call", "args": map[string]any{"server": "docs", "tool": "search"}}}, "mcp.call docs/search"},
		{[]any{map[string]any{"op": "validate.run", "args": map[string]any{}}}, "validate.run"},
		{[]any{map[string]any{"op": "patch.update", "args": map[string]any{"type": "update_file", "path": "a.go"}}, map[string]any{"op": "patch.add", "args": map[string]any{"path": "b.go"}}}, "patch.update a.go,patch.add b.go"},
	} {
		var b strings.Builder
		Show(&b, []Entry{entryLine(t, 1, "tool.call", map[string]any{"turn": 1, "call_id": "c1", "tool": "t", "surface": "generic", "ops": tc.ops})})
		got := strings.TrimSuffix(b.String(), "\n")
		if !strings.HasSuffix(got, " · "+tc.want) {
			t.Errorf("shown as\n%s\nwant it to end · %s", got, tc.want)
		}
		if err := inert(b.String()); err != "" {
			t.Errorf("%s in %s", err, got)
		}
	}
}

// TestShowValidation: a verdict shows its counts, or, where the test
// command could not run any test, why, with no counts.
func TestShowValidation(t *testing.T) {
	for _, tc := range []struct {
		sum  map[string]any
		want string
	}{
		{map[string]any{"command": "go test ./...", "ok": true, "unit": "packages", "passed": json.Number("2"), "failed": json.Number("0")},
			"passed by truss (verification boundary) · go test ./... · packages 2 passed, 0 failed"},
		{map[string]any{"command": "python -m pytest -q", "ok": false, "unit": "tests", "passed": json.Number("0"), "failed": json.Number("0"), "not_run": "No module named pytest"},
			"FAILED by truss (verification boundary) · python -m pytest -q · the test command could not run: No module named pytest"},
	} {
		if got := summary("validation", map[string]any{"boundary": true, "summary": tc.sum}); got != tc.want {
			t.Errorf("summary = %q, want %q", got, tc.want)
		}
	}
}
