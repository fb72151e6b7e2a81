package page_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/ledger/page"
)

// runsSample writes a session id of runs runs in a session directory of
// its own, each resumed run naming the one before it as the harness does;
// the last run ends only with end. It returns the runs' ledger directories.
func runsSample(t testing.TB, s note.Signer, id string, runs int, end bool) []string {
	t.Helper()
	sd := filepath.Join(t.TempDir(), id)
	var dirs []string
	var prev *ledger.Previous
	for i := range runs {
		dir := filepath.Join(sd, "ledger")
		if i > 0 {
			dir = fmt.Sprintf("%s-%d", dir, 1764759600000000000+i)
		}
		w, err := ledger.Create(dir, id, s)
		if err != nil {
			t.Fatal(err)
		}
		text, err := w.Put(fmt.Appendf(nil, "Task %d of %s.", i+1, id))
		if err != nil {
			t.Fatal(err)
		}
		w.Append("session.start", ledger.Start{Truss: "test", Provider: "sim", Model: "sim-claude", Surface: "anthropic", Previous: prev}, nil)
		w.Append("user", map[string]any{"chars": 12}, map[string]string{"text": text})
		w.Append("model.response", map[string]any{"turn": 1, "id": "msg", "model": "sim-claude", "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 10, "output_tokens": 2}},
			map[string]string{"response": put(t, w, sse(fmt.Sprintf("Run %d answers.", i+1), ""))})
		w.Append("tool.call", map[string]any{"turn": 1, "call_id": "c1", "tool": "bash", "kind": "typed", "type": "bash_20250124", "surface": "anthropic", "decoded": true,
			"ops": []any{map[string]any{"op": "shell.exec", "args": map[string]any{"command": "ls"}}}}, map[string]string{"input": put(t, w, `{"command":"ls"}`)})
		w.Append("tool.result", map[string]any{"turn": 1, "call_id": "c1", "is_error": false, "results": []any{map[string]any{"op": "shell.exec", "exit_code": 0}}},
			map[string]string{"output": put(t, w, fmt.Sprintf("run-%d.txt\n", i+1))})
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if end || i < runs-1 {
			w.Append("session.end", map[string]any{"status": "completed", "turns": 1, "calls": 0}, nil)
			if _, err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if prev, err = ledger.PreviousOf(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func put(t testing.TB, w *ledger.Writer, s string) string {
	t.Helper()
	d, err := w.Put([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// runsDoc is the page document of three runs of session S1, and of three
// runs of another session of the same key (for splicing).
func runsDoc(t testing.TB) (doc, other *page.Doc, vkey string) {
	s, vkey := newKey(t, "truss/test")
	mk := func(id string) *page.Doc {
		d, err := page.Build(runsSample(t, s, id, 3, true), page.Options{VKey: vkey})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return mk("S1"), mk("S2"), vkey
}

// runMutation changes a page's runs as someone splicing sessions would.
type runMutation struct {
	name   string
	mutate func(d, other *page.Doc)
	want   string // what the Go verifier's error says
}

// cutRun cuts a page's ledger back to its checkpoint of size n: the
// entries after it and the larger checkpoints deleted.
func cutRun(l *page.Ledger, n int) {
	editLines(l, func(e []string) []string { return e[:n] })
	kept := lines(l)
	for _, k := range slices.Collect(maps.Keys(l.Checkpoints)) {
		if size, _ := strconv.Atoi(k); size > n {
			delete(l.Checkpoints, k)
		}
	}
	// Payloads only the deleted entries named go too.
	for d := range l.Payloads {
		if !slices.ContainsFunc(kept, func(e string) bool { return strings.Contains(e, d) }) {
			delete(l.Payloads, d)
		}
	}
}

var runMutations = []runMutation{
	{"a run from another session", func(d, o *page.Doc) { d.Runs[1] = o.Runs[1] }, `run 2 (ledger-1764759600000000001): entry 0: session "S2", but run 1's is "S1"`},
	{"runs reordered", func(d, o *page.Doc) { d.Runs[1], d.Runs[2] = d.Runs[2], d.Runs[1] }, `run 2 (ledger-1764759600000000002): entry 0: it continues the run of ledger "ledger-1764759600000000001", but the run before it is "ledger"`},
	{"a middle run dropped", func(d, o *page.Doc) { d.Runs = append(d.Runs[:1], d.Runs[2]) }, `run 2 (ledger-1764759600000000002): entry 0: it continues the run of ledger "ledger-1764759600000000001"`},
	{"a middle run cut short", func(d, o *page.Doc) { cutRun(d.Runs[1], 5) }, "run 3 (ledger-1764759600000000002): entry 0: it continues ledger-1764759600000000001 at its checkpoint of size 6, but ledger-1764759600000000001's last checkpoint is of size 5"},
	{"a first run after a resumed one", func(d, o *page.Doc) { d.Runs[0], d.Runs[1] = d.Runs[1], d.Runs[0] }, "run 2 (ledger): entry 0: its session.start names no previous run"},
	{"a run renamed", func(d, o *page.Doc) { d.Runs[0].Dir = "ledger-1" }, `run 2 (ledger-1764759600000000001): entry 0: it continues the run of ledger "ledger", but the run before it is "ledger-1"`},
}

func TestRunsOnAPage(t *testing.T) {
	doc, _, vkey := runsDoc(t)
	res, err := page.Verify(write(t, doc), vkey)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 3 || res.Continues != nil {
		t.Fatalf("runs %d, continues %+v", len(res.Runs), res.Continues)
	}
	for i, r := range res.Runs {
		if r.NotEnded != nil || r.Unsealed != 0 {
			t.Errorf("run %d: not ended %v, unsealed %d", i+1, r.NotEnded, r.Unsealed)
		}
	}
	// A page of the last runs only verifies, and says so.
	doc2, _, vkey2 := runsDoc(t)
	doc2.Runs = doc2.Runs[1:]
	res, err = page.Verify(write(t, doc2), vkey2)
	if err != nil || res.Continues == nil || res.Continues.Dir != "ledger" {
		t.Errorf("a page of the last two runs: %+v, %v", res, err)
	}
	for _, m := range runMutations {
		t.Run(m.name, func(t *testing.T) {
			d, o, vkey := runsDoc(t)
			m.mutate(d, o)
			_, err := page.Verify(write(t, d), vkey)
			var re *ledger.RunError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), m.want) {
				t.Fatalf("err = %v, want a RunError saying %q", err, m.want)
			}
		})
	}
}

// A page that begins at a resumed run says so; a run that did not end,
// and entries left out unsealed, are reported.
func TestNotEndedOnAPage(t *testing.T) {
	s, vkey := newKey(t, "truss/test")
	dirs := runsSample(t, s, "S1", 2, false)
	doc, err := page.Build(dirs[1:], page.Options{VKey: vkey})
	if err != nil {
		t.Fatal(err)
	}
	u := uint64(3)
	doc.Runs[0].Unsealed = &u
	res, err := page.Verify(write(t, doc), vkey)
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Continues; p == nil || p.Dir != "ledger" || p.Size != 6 {
		t.Errorf("continues %+v", p)
	}
	var ne *ledger.NotEndedError
	if r := res.Runs[0]; !errors.As(r.NotEnded, &ne) || ne.Entry != 4 || r.Unsealed != 3 {
		t.Errorf("not ended %v, unsealed %d", r.NotEnded, r.Unsealed)
	}
	// Export refuses runs that do not follow one another.
	if _, err := page.Build([]string{dirs[1], dirs[0]}, page.Options{VKey: vkey}); err == nil || !strings.Contains(err.Error(), "run 2 (ledger): entry 0: its session.start names no previous run") {
		t.Errorf("Build of reordered runs: %v", err)
	}
}

// unsealed is absent or a positive integer; anything else is refused, and
// never on a sub-agent's ledger.
func TestUnsealedRefused(t *testing.T) {
	dir, vkey := sample(t, 1, true)
	for _, tc := range []struct{ name, member, want string }{
		{"zero", `"unsealed":0,`, "unsealed 0 is not a positive count of entries"},
		{"negative", `"unsealed":-1,`, "not valid"},
		{"a fraction", `"unsealed":1.5,`, "not valid"},
		{"a string", `"unsealed":"2",`, "not valid"},
		{"too large for a browser", `"unsealed":9007199254740992,`, "unsealed 9007199254740992 is not a positive count of entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			html := unsealedPage(t, dir, vkey, tc.member, false)
			if _, err := page.Verify(html, vkey); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := page.Verify(unsealedPage(t, dir, vkey, `"unsealed":2,`, true), vkey); err == nil || !strings.Contains(err.Error(), "a sub-agent's ledger has no unsealed entries") {
		t.Errorf("a sub-agent's unsealed: %v", err)
	}
	res, err := page.Verify(unsealedPage(t, dir, vkey, `"unsealed":2,`, false), vkey)
	if err != nil || res.Runs[0].Unsealed != 2 {
		t.Errorf("unsealed 2: %+v, %v", res, err)
	}
}

// unsealedPage is the sample's page with member put into the run's
// ledger (or, with agent, its sub-agent's).
func unsealedPage(t testing.TB, dir, vkey, member string, agent bool) []byte {
	t.Helper()
	s := string(write(t, build(t, dir, vkey, page.Options{})))
	anchor := `{"dir":"ledger","entries":`
	if agent {
		anchor = `"ledger":{"dir":"agents/call_1_3","entries":`
	}
	i := strings.Index(s, anchor)
	if i < 0 {
		t.Fatalf("no %s in the page", anchor)
	}
	j := strings.Index(s[i:], `"checkpoints":`) + i
	return []byte(s[:j] + member + s[j:])
}

// nest is n arrays, each in the one before.
func nest(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// deepLedger writes a ledger whose tool.call's arguments nest depth
// levels deep: the entry's line nests depth+4 levels (the entry, data,
// ops, the operation) plus the args' own.
func deepLedger(t testing.TB, depths ...int) (string, string) {
	t.Helper()
	s, vkey := newKey(t, "truss/test")
	dir := filepath.Join(t.TempDir(), "ledger")
	w, err := ledger.Create(dir, "S1", s)
	if err != nil {
		t.Fatal(err)
	}
	w.Append("session.start", map[string]any{"model": "sim-claude", "surface": "anthropic"}, nil)
	for i, d := range depths {
		// The entry, data, ops, the operation, args: 5 levels, then d-5 arrays.
		w.Append("tool.call", map[string]any{"turn": 1, "call_id": fmt.Sprint("call_", i), "tool": "bash", "surface": "anthropic", "decoded": true,
			"ops": []any{map[string]any{"op": "shell.exec", "args": json.RawMessage(`{"deep":` + nest(d-5) + `}`)}}}, map[string]string{"input": put(t, w, `{}`)})
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, vkey
}

// Lines nest as deep as Go's encoding/json reads (10,000 levels) and no
// deeper: both verifiers read 5,000 and 10,000 levels and refuse 10,001.
func TestNestingLimit(t *testing.T) {
	dir, vkey := deepLedger(t, 5000, 10000)
	doc := build(t, dir, vkey, page.Options{})
	if _, err := page.Verify(write(t, doc), vkey); err != nil {
		t.Fatalf("5,000 and 10,000 levels: %v", err)
	}
	editLines(doc.Runs[0], func(l []string) []string { l[2] = strings.Replace(l[2], nest(9995), nest(9996), 1); return l })
	if _, err := page.Verify(write(t, doc), vkey); err == nil || !strings.Contains(err.Error(), "entry 2: not a JSON object") || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Errorf("10,001 levels: %v", err)
	}
}
