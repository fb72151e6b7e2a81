package ledger

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// validNames are file names that are valid UTF-8 but look like what a
// ledger must keep apart from the names that are not: U+FFFD itself, the
// \x and \u spellings of bytes, escapes, controls, quotes, HTML, percent
// and hex lookalikes of the NUL form. Each is recorded as itself.
var validNames = []string{
	"run\uFFFD.sh",
	`run\xff.sh`,
	`run\ufffd.sh`,
	"72756eff2e7368",
	"new\nline",
	"tab\there",
	"esc\x1b[31mred",
	"bell\a",
	"del\x7f",
	`quo"te`,
	`back\slash`,
	"<b>&amp;</b>",
	"line\u2028sep",
	"per%cent%FF",
	"ünï/cödé/名前",
	"emoji😀",
	"sp ace",
	"-dash",
	"dir/sub/x",
}

// namesSession is a session whose changes carry the names: a file tool's
// add, update and move, a link, a bulk change listing them, and a last
// scan.
func namesSession(names []string) bulkSession {
	var s bulkSession
	var edit []tool.FileChange
	var m bytes.Buffer
	for i, n := range names {
		c := "c" + n
		edit = append(edit, tool.FileChange{Path: n, Kind: tool.ChangeAdd, After: digestOf(c), AfterData: []byte(c), Mode: "0644", Size: int64(len(c))})
		if i%3 == 0 {
			edit = append(edit, tool.FileChange{Path: n, Kind: tool.ChangeUpdate, Before: digestOf(c), After: digestOf(c), MovedTo: "moved/" + n})
		}
		if i%4 == 1 {
			edit = append(edit, tool.FileChange{Path: "ln/" + n, Kind: tool.ChangeAdd, LinkAfter: "../" + n, Type: ""})
		}
		m.WriteString(manifestLine(tool.ChangeAdd, "file", "", digestOf("bulk"+n), int64(len(n)+4), "bulk/"+n, ""))
		m.WriteString(manifestLine(tool.ChangeAdd, "link", "", "", 0, "bulk/ln/"+n, n))
	}
	made := m.Bytes()
	bulk := tool.FileChange{Path: ".", Kind: tool.ChangeUpdate, After: tool.Digest(made), AfterData: made, Files: 2 * len(names)}
	deps := tool.FileChange{Path: names[0] + "/node_modules", Kind: tool.ChangeUpdate, After: tool.Digest(made), AfterData: made, Files: 2 * len(names)}
	last := len(names) - 1
	s.settle = []tool.FileChange{
		{Path: namesFinal(names, last), Kind: tool.ChangeDelete, Before: digestOf("c" + names[last])},
		{Path: "unlistable/" + names[1], Kind: tool.ChangeUpdate, Type: "unlistable"},
	}
	call := func(turn int, op tool.Op, changes []tool.FileChange) agent.Event {
		id := "call_" + string(rune('0'+turn))
		return agent.Event{Type: agent.EventCallCompleted, Turn: turn,
			Call:    &model.ToolCall{ID: id, Name: "bash", Kind: model.ToolFunction, Input: `{"command":"make"}`},
			Ops:     []tool.Call{{ID: id, Op: op, Surface: "generic", Args: &tool.ExecArgs{Command: "make"}}},
			Results: []tool.Result{{CallID: id, Op: op, Output: "done\n", Stdout: "done\n", Changes: changes}},
			Result:  &model.ToolResult{CallID: id, Text: "done\n"}, FullText: "done\n"}
	}
	s.events = []agent.Event{
		{Type: agent.EventUser, Items: []model.Item{{Kind: model.KindUser, Text: "Make the files."}}},
		call(0, tool.OpCreate, edit),
		{Type: agent.EventTurnCompleted, Turn: 0},
		call(1, tool.OpExec, []tool.FileChange{bulk, deps}),
		{Type: agent.EventTurnCompleted, Turn: 1},
		{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 2, Calls: 2}},
	}
	return s
}

// namesFinal is where namesSession leaves the file it names names[i].
func namesFinal(names []string, i int) string {
	if i%3 == 0 {
		return "moved/" + names[i]
	}
	return names[i]
}

// TestRecordValidNamesGolden: a session whose file names are all valid
// UTF-8, however strange, is recorded byte for byte as before names that
// are not were given a form of their own: its entries are those of
// testdata/valid_names.golden, and its payloads hash as it says.
func TestRecordValidNamesGolden(t *testing.T) {
	dir, vkey := namesSession(validNames).record(t, t.TempDir(), nil)
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
	for i := range validNames {
		n := namesFinal(validNames, i)
		want := digestOf("c" + validNames[i])
		if i == len(validNames)-1 {
			want = ""
		}
		if d, ok := final[n]; !ok || d != want {
			t.Errorf("final %q: %q, %v; want %q", n, d, ok, want)
		}
		if d := final["bulk/"+validNames[i]]; d != digestOf("bulk"+validNames[i]) {
			t.Errorf("final %q: %q", "bulk/"+validNames[i], d)
		}
	}
	entriesBytes, err := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	got := append(append(entriesBytes, "--\n"...), fileDigests(t, dir)...)
	golden := filepath.Join("testdata", "valid_names.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the ledger differs from %s:\ngot\n%s\nwant\n%s", golden, got, want)
	}
}
