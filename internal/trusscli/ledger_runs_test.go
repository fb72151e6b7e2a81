package trusscli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/ledger"
)

// sessionRuns writes a session directory of runs runs of session id, each
// resumed run naming the one before it; the last ends only with end. It
// returns the session directory and its ledger directories.
func sessionRuns(t *testing.T, s note.Signer, id string, runs int, end bool) (string, []string) {
	t.Helper()
	sd := filepath.Join(t.TempDir(), id)
	var dirs []string
	var prev *ledger.Previous
	for i := range runs {
		dir := filepath.Join(sd, "ledger")
		if i > 0 {
			dir = fmt.Sprintf("%s-%d", dir, 100+i)
		}
		w, err := ledger.Create(dir, id, s)
		if err != nil {
			t.Fatal(err)
		}
		w.Append("session.start", ledger.Start{Truss: "test", Previous: prev}, nil)
		w.Append("user", map[string]any{"chars": 2}, nil)
		w.Append("model.response", map[string]any{"turn": 1, "stop_reason": "end_turn"}, nil)
		if _, err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if end || i < runs-1 {
			w.Append("session.end", map[string]any{"status": "completed"}, nil)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if prev, err = ledger.PreviousOf(dir); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	return sd, dirs
}

func truss(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestLedgerVerifyRuns: truss ledger verify checks a session's runs as
// one chain, says on stdout (and warns on stderr) that a run did not end,
// and fails on it with --require-end, for a session and for its page.
func TestLedgerVerifyRuns(t *testing.T) {
	// The installation's key (in the test binary's own home): show takes
	// no other.
	s, vkey, err := ledger.InstallationKey()
	if err != nil {
		t.Fatal(err)
	}
	sd, dirs := sessionRuns(t, s, "S1", 3, false)
	code, out, errs := truss("ledger", "verify", sd, "--key", vkey)
	notEnded := "NOT ENDED: ledger " + dirs[2] + ": the run ends at entry 2 (model.response) without session.end: it was cut short, or is still running\n"
	if code != 0 || !strings.Contains(out, "run 3 of 3:") || !strings.Contains(out, notEnded) || strings.Count(out, "NOT ENDED") != 1 ||
		!strings.Contains(errs, "warning: ledger "+dirs[2]+": the run ends at entry 2") {
		t.Errorf("verify: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	code, out, errs = truss("ledger", "verify", sd, "--require-end", "--key", vkey)
	if code != 1 || !strings.Contains(out, notEnded) || !strings.Contains(errs, "ledger "+dirs[2]+" does not verify with --require-end: the run ends at entry 2") {
		t.Errorf("verify --require-end: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, out, errs = truss("ledger", "verify", dirs[0], "--require-end", "--key", vkey); code != 0 || strings.Contains(out, "NOT ENDED") {
		t.Errorf("verify --require-end of an ended run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// show says the same.
	code, out, errs = truss("ledger", "show", sd)
	if code != 0 || !strings.Contains(out, notEnded) {
		t.Errorf("show: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// The page says the same, and fails the same with --require-end.
	html := filepath.Join(t.TempDir(), "s.html")
	if code, out, errs := truss("ledger", "export", sd, "--html", html, "--key", vkey); code != 0 {
		t.Fatalf("export: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = truss("ledger", "verify", html, "--key", vkey)
	if code != 0 || !strings.Contains(out, "NOT ENDED: the page's run 3 (ledger-102): the run ends at entry 2") {
		t.Errorf("verify the page: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, out, errs = truss("ledger", "verify", html, "--key", vkey, "--require-end"); code != 1 || !strings.Contains(errs, "the page's run 3 (ledger-102) does not verify with --require-end") {
		t.Errorf("verify the page --require-end: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}

	// A run of another session of the same key, spliced in.
	_, others := sessionRuns(t, s, "S2", 3, true)
	splice := t.TempDir()
	for i, d := range []string{dirs[0], others[1], others[2]} {
		if err := os.CopyFS(filepath.Join(splice, filepath.Base([]string{dirs[0], dirs[1], dirs[2]}[i])), os.DirFS(d)); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errs = truss("ledger", "verify", splice, "--key", vkey); code != 1 || !strings.Contains(errs, `run 2 (ledger-101): entry 0: session "S2", but run 1's is "S1"`) {
		t.Errorf("verify spliced runs: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// A middle run removed, then the first.
	if err := os.RemoveAll(dirs[1]); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = truss("ledger", "verify", sd, "--key", vkey); code != 1 || !strings.Contains(errs, `run 2 (ledger-102): entry 0: it continues the run of ledger "ledger-101", but the run before it is "ledger"`) {
		t.Errorf("verify without the middle run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if code, out, errs = truss("ledger", "show", sd); code != 1 || !strings.Contains(out, `NOT VERIFIED: run 2 (ledger-102): entry 0: it continues the run of ledger "ledger-101"`) {
		t.Errorf("show without the middle run: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if err := os.RemoveAll(dirs[0]); err != nil {
		t.Fatal(err)
	}
	if code, out, errs = truss("ledger", "verify", sd, "--key", vkey); code != 1 || !strings.Contains(errs, `run 1 (ledger-102): entry 0: it continues the run of ledger "ledger-101", which is not in the session`) {
		t.Errorf("verify without the first runs: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	// One run's ledger, given alone, verifies on its own.
	if code, out, errs = truss("ledger", "verify", dirs[2], "--key", vkey); code != 0 {
		t.Errorf("verify one resumed run's ledger: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}
