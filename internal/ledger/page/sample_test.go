package page_test

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/ledger"
)

func newKey(t testing.TB, name string) (note.Signer, string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	return s, vkey
}

func hexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sse is an Anthropic stream that says text and thinks reasoning.
func sse(text, reasoning string) string {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"content\":[]}}\n\n")
	if reasoning != "" {
		fmt.Fprintf(&b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n")
		fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":%q}}\n\n", reasoning)
	}
	fmt.Fprintf(&b, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	fmt.Fprintf(&b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":%q}}\n\n", text)
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return b.String()
}

// session writes a ledger of a session of turns turns, each a model
// response, an edit of main.go and a command; with agent, the first turn
// also spawns a sub-agent whose ledger the spawn's result links. It
// returns the ledger's directory and the verifier key.
func sample(t testing.TB, turns int, agent bool) (string, string) {
	t.Helper()
	s, vkey := newKey(t, "truss/test")
	dir := filepath.Join(t.TempDir(), "ledger")
	w, err := ledger.Create(dir, "S1", s)
	if err != nil {
		t.Fatal(err)
	}
	put := func(w *ledger.Writer, b string) string {
		d, err := w.Put([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	w.Append("session.start", map[string]any{"model": "sim-claude", "provider": "sim", "surface": "anthropic", "sandbox": "workspace-write",
		"workspace": "/work/repo", "truss": "test", "tools": []any{map[string]any{"name": "bash", "kind": "typed", "type": "bash_20250124"}}}, nil)
	w.Append("user", map[string]any{"chars": 17}, map[string]string{"text": put(w, "Fix the <b>bug</b>.")})
	w.Checkpoint()
	// A file of about 6 KB, as a real edit's is.
	var filler strings.Builder
	for i := range 120 {
		fmt.Fprintf(&filler, "// line %03d of the file's comment, which is as long as a line of code is.\n", i)
	}
	content := "package main\n\n" + filler.String() + "func main() {\n\tprintln(0)\n}\n"
	for turn := 1; turn <= turns; turn++ {
		text := fmt.Sprintf("Turn %d: I will edit main.go <script>alert(1)</script>.", turn)
		w.Append("model.response", map[string]any{"turn": turn, "id": fmt.Sprintf("msg_%d", turn), "model": "sim-claude", "stop_reason": "tool_use",
			"usage": map[string]any{"input_tokens": 1000 + turn, "output_tokens": 50, "cache_read_tokens": 2000, "cache_write_tokens": 300, "cost_usd": 0.0012},
			"items": []any{map[string]any{"kind": "assistant"}, map[string]any{"kind": "tool_call", "call_id": fmt.Sprintf("call_%d_1", turn), "name": "str_replace_based_edit_tool"}}},
			map[string]string{"request": put(w, fmt.Sprintf(`{"turn":%d}`, turn)), "response": put(w, sse(text, "Thinking about turn "+fmt.Sprint(turn)))})
		id := fmt.Sprintf("call_%d_1", turn)
		old := fmt.Sprintf("println(%d)", turn-1)
		repl := fmt.Sprintf("println(%d)", turn)
		after := strings.Replace(content, old, repl, 1)
		w.Append("tool.call", map[string]any{"turn": turn, "call_id": id, "tool": "str_replace_based_edit_tool", "kind": "typed", "type": "text_editor_20250728",
			"surface": "anthropic", "decoded": true, "ops": []any{map[string]any{"op": "file.replace", "args": map[string]any{"path": "main.go", "old": old, "new": repl}}}},
			map[string]string{"input": put(w, fmt.Sprintf(`{"command":"str_replace","path":"main.go","old_str":%q,"new_str":%q}`, old, repl))})
		bd, ad := put(w, content), put(w, after)
		w.Append("tool.result", map[string]any{"turn": turn, "call_id": id, "is_error": false, "results": []any{map[string]any{"op": "file.replace", "timed_out": false, "truncated": false,
			"changes": []any{map[string]any{"path": "main.go", "kind": "update", "before": bd, "after": ad}}}}},
			map[string]string{"output": put(w, "The file main.go has been edited."), "content." + bd[:16]: bd, "content." + ad[:16]: ad})
		content = after
		cid := fmt.Sprintf("call_%d_2", turn)
		w.Append("tool.call", map[string]any{"turn": turn, "call_id": cid, "tool": "bash", "kind": "typed", "type": "bash_20250124", "surface": "anthropic", "decoded": true,
			"ops": []any{map[string]any{"op": "shell.exec", "args": map[string]any{"command": "go test ./..."}}}}, map[string]string{"input": put(w, `{"command":"go test ./..."}`)})
		out := fmt.Sprintf("ok  \texample.com/m\t0.%03ds\nTOKEN=sk-secret-%d\n", turn, turn)
		w.Append("tool.result", map[string]any{"turn": turn, "call_id": cid, "is_error": false, "results": []any{map[string]any{"op": "shell.exec", "exit_code": 0, "timed_out": false, "truncated": false}}},
			map[string]string{"output": put(w, out), "stdout.0": put(w, out)})
		if agent && turn == 1 {
			spawn(t, w, dir, s, put)
		}
		w.Checkpoint()
	}
	w.Append("model.response", map[string]any{"turn": turns + 1, "id": "msg_end", "model": "sim-claude", "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 2000, "output_tokens": 20}},
		map[string]string{"response": put(w, sse("Done: main.go prints the turn.", ""))})
	w.Append("session.end", map[string]any{"status": "completed", "reason": "", "turns": turns + 1, "calls": 2 * turns, "usage": map[string]any{"input_tokens": 5000, "output_tokens": 100, "cost_usd": 0.01},
		"files": map[string]any{"main.go": hexSum([]byte(content))}}, nil)
	w.Checkpoint()
	w.Append("validation", map[string]any{"boundary": true, "env": map[string]any{"test": "go test ./..."}, "summary": map[string]any{"command": "go test ./...", "ok": true,
		"exit_code": 0, "passed": 1, "failed": 0, "unit": "packages", "duration_ns": 1500000000}}, map[string]string{"log": put(w, "ok  \texample.com/m\n")})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, vkey
}

// spawn records a spawn call and its sub-agent's ledger, linked from the
// result.
func spawn(t testing.TB, w *ledger.Writer, dir string, s note.Signer, put func(*ledger.Writer, string) string) {
	t.Helper()
	id := "call_1_3"
	w.Append("tool.call", map[string]any{"turn": 1, "call_id": id, "tool": "spawn", "kind": "function", "surface": "generic", "decoded": true,
		"ops": []any{map[string]any{"op": "agent.spawn", "args": map[string]any{"task": "CHILD: write notes.txt"}}}}, map[string]string{"input": put(w, `{"task":"CHILD: write notes.txt"}`)})
	cw, err := ledger.Create(filepath.Join(dir, "agents", id), "S1."+id, s)
	if err != nil {
		t.Fatal(err)
	}
	cw.Append("session.start", map[string]any{"model": "sim-claude", "surface": "anthropic", "parent": map[string]any{"session": "S1", "call_id": id}}, nil)
	cw.Append("model.response", map[string]any{"turn": 1, "stop_reason": "tool_use", "usage": map[string]any{"input_tokens": 10, "output_tokens": 5}},
		map[string]string{"response": put(cw, sse("CHILD writes notes.txt", ""))})
	cw.Append("tool.call", map[string]any{"turn": 1, "call_id": "c1", "tool": "bash", "surface": "anthropic", "decoded": true,
		"ops": []any{map[string]any{"op": "file.create", "args": map[string]any{"path": "notes.txt"}}}}, map[string]string{"input": put(cw, `{"path":"notes.txt"}`)})
	nd := put(cw, "reviewed by the child\n")
	cw.Append("tool.result", map[string]any{"turn": 1, "call_id": "c1", "is_error": false, "results": []any{map[string]any{"op": "file.create",
		"changes": []any{map[string]any{"path": "notes.txt", "kind": "add", "after": nd}}}}}, map[string]string{"output": put(cw, "created"), "content." + nd[:16]: nd})
	cw.Append("session.end", map[string]any{"status": "completed", "turns": 1, "calls": 1, "files": map[string]any{"notes.txt": nd}}, nil)
	size, root, signed, err := cw.Seal()
	if err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	w.Append("tool.result", map[string]any{"turn": 1, "call_id": id, "is_error": false, "results": []any{map[string]any{"op": "agent.spawn",
		"agent": map[string]any{"session": "S1." + id, "status": "completed", "turns": 1, "calls": 1, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
			"ledger": map[string]any{"dir": "agents/" + id, "size": size, "root": base64.StdEncoding.EncodeToString(root), "checkpoint": hexSum(signed)}},
		"changes": []any{map[string]any{"path": "notes.txt", "kind": "add", "after": nd}}}}},
		map[string]string{"output": put(w, "the sub-agent wrote notes.txt"), "content." + nd[:16]: put(w, "reviewed by the child\n")})
}
