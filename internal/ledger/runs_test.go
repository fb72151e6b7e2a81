package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// writeRun writes the ledger of one run of session in dir: session.start
// (naming prev), a turn sealed by a checkpoint, session.end and the
// verification boundary's verdict, each sealed. Without end it stops
// after the turn, as a run still running does.
func writeSessionRun(t *testing.T, dir, session string, s note.Signer, prev *Previous, end bool) {
	t.Helper()
	w, err := Create(dir, session, s)
	if err != nil {
		t.Fatal(err)
	}
	w.Append("session.start", Start{Truss: "test", Previous: prev}, nil)
	w.Append("user", map[string]any{"chars": 2}, nil)
	w.Append("model.response", map[string]any{"turn": 1, "stop_reason": "end_turn"}, nil)
	// Flush: each checkpoint written (Checkpoint may seal two together).
	if _, err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if end {
		w.Append("session.end", map[string]any{"status": "completed"}, nil)
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		w.Append("validation", map[string]any{"boundary": true}, nil)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// session writes a session of runs runs, each resumed run naming the one
// before it as the harness does, and returns its directory and key.
func session(t *testing.T, id string, s note.Signer, runs int) string {
	t.Helper()
	sd := filepath.Join(t.TempDir(), id)
	var prev *Previous
	for i := range runs {
		dir := filepath.Join(sd, "ledger")
		if i > 0 {
			dir = fmt.Sprintf("%s-%d", dir, 1000+i)
		}
		writeSessionRun(t, dir, id, s, prev, true)
		p, err := PreviousOf(dir)
		if err != nil {
			t.Fatal(err)
		}
		prev = p
	}
	return sd
}

func run(t *testing.T, dir, vkey string) Run {
	t.Helper()
	r, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	return Run{Name: filepath.Base(dir), Report: r, Entries: entries}
}

// checkRuns checks runs as a session's verifier does, in order.
func checkRuns(runs []Run) error {
	for i := 1; i < len(runs); i++ {
		if err := CheckNext(runs[i-1], runs[i], i+1); err != nil {
			return err
		}
	}
	return nil
}

// cut cuts the ledger in dir back to its checkpoint of size n: the
// entries after it and the larger checkpoints deleted, as someone hiding
// a run's end would.
func cut(t *testing.T, dir string, n uint64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(filepath.Join(dir, "entries.jsonl"), []byte(strings.Join(lines[:n], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	cps, err := readCheckpoints(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for size := range n + 1 {
		if c, ok := cps[size]; ok {
			out = appendRecord(out, strconv.FormatUint(size, 10), c)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, CheckpointsName), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRunsChained(t *testing.T) {
	s, vkey := newKey(t, "truss-test")
	sd := session(t, "S", s, 3)
	names := []string{"ledger", "ledger-1001", "ledger-1002"}
	runs := func(dir string, order ...int) []Run {
		var out []Run
		for _, i := range order {
			out = append(out, run(t, filepath.Join(dir, names[i]), vkey))
		}
		return out
	}
	if err := checkRuns(runs(sd, 0, 1, 2)); err != nil {
		t.Fatalf("the session's runs: %v", err)
	}
	first := runs(sd, 0)[0]
	if p, err := Continues(first.Entries); p != nil || err != nil {
		t.Errorf("the first run continues %+v, %v", p, err)
	}
	if p, err := Continues(runs(sd, 1)[0].Entries); err != nil || p == nil || p.Dir != "ledger" || p.Size != first.Report.Sealed {
		t.Errorf("the second run continues %+v, %v; the first has %d sealed", p, err, first.Report.Sealed)
	}
	for _, err := range []error{CheckEnded(first.Entries, first.Report.Sealed)} {
		if err != nil {
			t.Errorf("an ended run: %v", err)
		}
	}

	// Another session of the same key, for splicing.
	other := session(t, "T", s, 3)
	splice := append(runs(sd, 0), runs(other, 1, 2)...)
	sameID := session(t, "S", s, 3) // another session that reuses the id
	for _, tc := range []struct {
		name string
		runs []Run
		want string
	}{
		{"spliced from another session", splice, `run 2 (ledger-1001): entry 0: session "T", but run 1's is "S"`},
		{"spliced from a session of the same id", append(runs(sd, 0), runs(sameID, 1)...), "run 2 (ledger-1001): entry 0: it continues ledger at a root hash that is not its last checkpoint's"},
		{"reordered", runs(sd, 0, 2, 1), `run 2 (ledger-1002): entry 0: it continues the run of ledger "ledger-1001", but the run before it is "ledger"`},
		{"a middle run dropped", runs(sd, 0, 2), `run 2 (ledger-1002): entry 0: it continues the run of ledger "ledger-1001", but the run before it is "ledger"`},
		{"a first run after a resumed one", runs(sd, 1, 0), "run 2 (ledger): entry 0: its session.start names no previous run, but it follows run 1 (ledger-1001)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkRuns(tc.runs)
			var re *RunError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a RunError saying %q", err, tc.want)
			}
		})
	}

	// A middle run cut back to its first checkpoint (its session.end
	// dropped) verifies on its own, is reported as not ended, and the run
	// after it no longer follows it.
	cut(t, filepath.Join(sd, "ledger-1001"), 3)
	rs := runs(sd, 0, 1, 2)
	var ne *NotEndedError
	if err := CheckEnded(rs[1].Entries, rs[1].Report.Sealed); !errors.As(err, &ne) || ne.Entry != 2 ||
		err.Error() != "the run ends at entry 2 (model.response) without session.end: it was cut short, or is still running" {
		t.Errorf("the cut run: %v", err)
	}
	if err := checkRuns(rs); err == nil || !strings.Contains(err.Error(), "run 3 (ledger-1002): entry 0: it continues ledger-1001 at its checkpoint of size 5, but ledger-1001's last checkpoint is of size 3") {
		t.Errorf("after the cut: %v", err)
	}
}

func TestCheckEnded(t *testing.T) {
	e := func(types ...string) []Entry {
		var out []Entry
		for _, ty := range types {
			out = append(out, Entry{Type: ty})
		}
		return out
	}
	for _, tc := range []struct {
		entries []Entry
		sealed  uint64
		ended   bool
	}{
		{e("session.start", "user", "session.end"), 3, true},
		{e("session.start", "session.end", "validation"), 3, true},
		{e("session.start", "session.end", "validation", "bench.verdict"), 4, true},
		{e("session.start", "session.end", "validation", "bench.verdict"), 2, true},
		{e("session.start", "user", "session.end"), 2, false},
		{e("session.start"), 1, false},
		// Two runs of one ledger (a conversation that goes on): the second did not end.
		{e("session.start", "session.end", "validation", "user", "model.response"), 5, false},
		{e("session.start", "session.end", "other.type"), 3, false},
		{e("session.start"), 0, false},
	} {
		err := CheckEnded(tc.entries, tc.sealed)
		if (err == nil) != tc.ended {
			t.Errorf("%v sealed %d: %v, want ended %v", tc.entries, tc.sealed, err, tc.ended)
		}
	}
}

func TestContinuesRefusesMalformed(t *testing.T) {
	s, vkey := newKey(t, "truss-test")
	for _, prev := range []any{"ledger", map[string]any{"dir": "ledger"}, map[string]any{"dir": "ledger", "size": 1.5, "root": "", "checkpoint": ""},
		map[string]any{"dir": "ledger", "size": -1, "root": "", "checkpoint": ""}, map[string]any{"dir": 1, "size": 1, "root": "", "checkpoint": ""}} {
		dir := filepath.Join(t.TempDir(), "ledger")
		w, err := Create(dir, "S", s)
		if err != nil {
			t.Fatal(err)
		}
		w.Append("session.start", map[string]any{"previous": prev}, nil)
		w.Close()
		_, entries, err := Verify(dir, vkey)
		if err != nil {
			t.Fatal(err)
		}
		if p, err := Continues(entries); err == nil || !strings.Contains(err.Error(), "entry 0: its session.start's previous is not") {
			t.Errorf("previous %v: %+v, %v", prev, p, err)
		}
	}
}

// FuzzContinues: whatever a session.start's data holds, Continues returns
// a Previous, nil or an error naming entry 0, and a Previous it returns
// reads back the same from a session.start that Truss writes of it.
func FuzzContinues(f *testing.F) {
	f.Add(`{"previous":{"dir":"ledger","size":3,"root":"AAAA","checkpoint":"ab"}}`)
	f.Add(`{"previous":null}`)
	f.Add(`{"previous":{"dir":"ledger","size":1e3,"root":"","checkpoint":""}}`)
	f.Add(`{"previous":[1]}`)
	entry := func(data string) (Entry, error) {
		return parseEntry([]byte(`{"v":1,"seq":0,"time":"2026-12-02T14:44:32Z","session":"S","type":"session.start","prev":"","data":` + data + `,"payloads":{}}`))
	}
	f.Fuzz(func(t *testing.T, data string) {
		e, err := entry(data)
		if err != nil {
			return
		}
		p, err := Continues([]Entry{e})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "entry 0: ") {
				t.Fatalf("error %q names no entry", err)
			}
			return
		}
		if p == nil {
			return
		}
		b, err := json.Marshal(Start{Previous: p})
		if err != nil {
			t.Fatal(err)
		}
		e2, err := entry(string(b))
		if err != nil {
			t.Fatal(err)
		}
		if q, err := Continues([]Entry{e2}); err != nil || q == nil || *q != *p {
			t.Fatalf("Continues = %+v; written and read back: %+v, %v", *p, q, err)
		}
	})
}
