//go:build linux

package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

// TestDerive: a sandbox derived for another workspace and temporary
// directory writes those and nothing of its parent's (the parent's
// workspace, the parent's temporary directory, the directory that holds
// its own workspace); its processes count against the parent's limits
// (its fork bomb is the parent's Guard's to report); closing it leaves the
// parent working.
func TestDerive(t *testing.T) {
	b := newBoxWith(t, sandbox.WorkspaceWrite, false, func(p *sandbox.Policy) { p.Limits.Pids = 64 })
	priv := t.TempDir()
	ws, tmp := filepath.Join(priv, "copy"), filepath.Join(priv, "tmp")
	for _, d := range []string{ws, tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := b.sb.Plan().Policy
	p.Workspace, p.TempDir, p.Protected = ws, tmp, nil
	p.Limits.Pids = 100000 // replaced by the parent's
	d, err := b.sb.Derive(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Plan().Policy.Limits; got != b.sb.Plan().Policy.Limits {
		t.Errorf("derived limits %+v, want the parent's %+v", got, b.sb.Plan().Policy.Limits)
	}
	os.Mkdir(filepath.Join(tmp, "sh"), 0o700)
	sh := newShell(t, ws, filepath.Join(tmp, "sh"), d)
	parentTmp := filepath.Join(filepath.Dir(b.ws), "tmp")
	cmd := "set -- " + strings.Join([]string{tmp, b.ws, parentTmp, priv, ws}, " ") + "\n" +
		`echo mine > mine.txt && echo t > "$1/t.txt" && echo ok
for f in "$2/w.txt" "$3/w.txt" "$4/w.txt"; do echo x > "$f" 2>/dev/null && echo "wrote $f"; done
mv "$5" "$5.moved" 2>/dev/null && echo "moved the copy"; true`
	r := sh.Run(t.Context(), cmd, 0)
	if !strings.Contains(r.Stdout, "ok") || strings.Contains(r.Stdout, "wrote") || strings.Contains(r.Stdout, "moved") {
		t.Fatalf("derived sandbox: %q %q", r.Stdout, r.Stderr)
	}
	// A fork bomb in the derived sandbox is the parent's limit.
	r = sh.Run(t.Context(), `for i in $(seq 200); do sleep 5 & done; wait`, 0)
	var le *sandbox.LimitError
	if err := d.Guard(); err != nil {
		if !errors.As(err, &le) {
			t.Errorf("derived Guard: %v", err)
		}
	} else if r.Err == nil || !strings.Contains(r.Err.Message, "process") {
		t.Errorf("200 processes in a derived sandbox of a 64-process limit: %+v", r)
	}
	sh.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if r := b.run(t, "echo still > still.txt && cat still.txt", 0); r.Err != nil || r.Stdout != "still\n" {
		t.Fatalf("the parent after its derived sandbox closed: %+v", r)
	}
}
