//go:build linux

package ledger

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/changes"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// TestRecordedShellInvalidNames: a command makes run\xff.sh and run\xfe.sh
// (and run\uFFFD.sh, the name both would have become), then a second one
// changes one of them and renames another, and a third makes 40 files
// named by one byte that is not UTF-8 and by its valid lookalike (one bulk
// change); the ledger verifies, each file's
// final digest is its own content's, and the workspace check passes on the
// workspace the session left — and names the file that differs once one
// is changed after it.
func TestRecordedShellInvalidNames(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "probe\xff"), nil, 0o644); err != nil {
		t.Skipf("this file system refuses names that are not UTF-8: %v", err)
	}
	os.Remove(filepath.Join(root, "probe\xff"))
	// The second command makes 20 more files, named \x80 to \x93 (and
	// \u0080 to \u0093, their valid lookalikes, 40 in all): with a bulk
	// threshold of 30, its changes are one bulk change, whose manifest
	// keeps each name's bytes.
	sh, tr := trackedShell(t, root, changes.Options{BulkThreshold: 30})
	ex := changes.Wrap(sh, tr)
	rec, dir, vkey := trackedRecorder(t, root, tr)
	for i, cmd := range []string{
		`printf one > "$(printf 'run\377.sh')"; printf two > "$(printf 'run\376.sh')"; printf three > 'run` + "\uFFFD" + `.sh'`,
		`printf ONE >> "$(printf 'run\377.sh')"; mkdir "$(printf 'd\377')"; mv "$(printf 'run\376.sh')" "$(printf 'd\377/r\376')"`,
		`mkdir many; for i in $(seq 128 147); do o=$(printf '%o' $i); printf $i > "many/$(printf "\\$o")"; printf u$i > "many/$(printf "\\302\\$o")"; done`,
	} {
		c := tool.Call{ID: "call_" + string(rune('a'+i)), Op: tool.OpExec, Args: &tool.ExecArgs{Command: cmd}}
		res := ex.Execute(context.Background(), c)
		if res.Err != nil || res.ExitCode == nil || *res.ExitCode != 0 {
			t.Fatalf("command %d: %v %s %s", i, res.Err, res.Stdout, res.Stderr)
		}
		rec.Observe(agent.Event{Type: agent.EventCallCompleted, Turn: 1,
			Call: &model.ToolCall{ID: c.ID, Name: "t", Kind: model.ToolFunction, Input: "{}"},
			Ops:  []tool.Call{c}, Results: []tool.Result{res},
			Result: &model.ToolResult{CallID: c.ID, Text: res.Output}, FullText: res.Output})
	}
	rec.Observe(agent.Event{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted}})
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.W.Close(); err != nil {
		t.Fatal(err)
	}
	rep, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.CheckSealed(); err != nil {
		t.Fatal(err)
	}
	final, err := FinalFiles(dir, entries[len(entries)-1])
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"run\xff.sh":   digestOf("oneONE"),
		"run\xfe.sh":   "",
		"d\xff/r\xfe":  digestOf("two"),
		"run\uFFFD.sh": digestOf("three"),
	}
	for i := 128; i < 148; i++ {
		want["many/"+string([]byte{byte(i)})] = digestOf(strconv.Itoa(i))
		want["many/"+string(rune(i))] = digestOf("u" + strconv.Itoa(i))
	}
	bulk := false
	for _, e := range entries {
		var data struct {
			Results []struct {
				Changes []tool.FileChange `json:"changes"`
			} `json:"results"`
		}
		raw, _ := json.Marshal(e.Data)
		json.Unmarshal(raw, &data)
		for _, r := range data.Results {
			for _, ch := range r.Changes {
				bulk = bulk || ch.Files == 40
			}
		}
	}
	if !bulk {
		t.Error("the 40 files are not one bulk change")
	}
	if len(final) != len(want) {
		t.Errorf("final files %q, want %q", final, want)
	}
	for p, d := range want {
		if got, ok := final[p]; !ok || got != d {
			t.Errorf("final %q: %q, %v; want %q", p, got, ok, d)
		}
	}
	if err := VerifyWorkspace(dir, entries[:rep.Sealed], root); err != nil {
		t.Fatalf("workspace check: %v", err)
	}
	var out strings.Builder
	Show(&out, entries)
	if !strings.Contains(out.String(), `rename "run\xfe.sh" → "d\xff/r\xfe"`) {
		t.Errorf("show: no rename of run\\xfe.sh in\n%s", out.String())
	}
	if err := os.WriteFile(filepath.Join(root, "run\xfe.sh"), []byte("back"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyWorkspace(dir, entries, root); err == nil || !strings.Contains(err.Error(), `"run\xfe.sh" exists in the workspace, but the session deleted it`) {
		t.Fatalf("a file made again after the session: %v", err)
	}
}
