package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// bulkSession is the recorded events of a session in which commands
// changed many files: a file tool's changes, a command that makes 100,000
// files (one bulk change) and edits some of the files already changed, a
// command that removes and relinks some of them (a second bulk change,
// with deletions and links), and a last scan at the end (Settle). Paths
// are chosen to sort in every way the final list must: "a.txt" before
// "a/b", quotes and newlines in names.
type bulkSession struct {
	events []agent.Event
	settle []tool.FileChange
}

func digestOf(s string) string { return tool.Digest([]byte(s)) }

// manifestLine is one line of a bulk change's manifest (docs/ledger.md,
// "Bulk changes").
func manifestLine(kind tool.ChangeKind, typ, before, after string, size int64, p, link string) string {
	if before == "" {
		before = "-"
	}
	if after == "" {
		after = "-"
	}
	l := fmt.Sprintf("%s %s %s %s %d %s", kind, typ, before, after, size, strconv.Quote(p))
	if link != "" {
		l += " -> " + strconv.Quote(link)
	}
	return l + "\n"
}

func newBulkSession(files int) bulkSession {
	var s bulkSession
	edit := []tool.FileChange{
		{Path: "a.txt", Kind: tool.ChangeAdd, After: digestOf("a\n"), AfterData: []byte("a\n"), Mode: "0644", Size: 2},
		{Path: "a/b", Kind: tool.ChangeAdd, After: digestOf("b\n"), AfterData: []byte("b\n"), Mode: "0644", Size: 2},
		{Path: "d000/f0001", Kind: tool.ChangeAdd, After: digestOf("x"), AfterData: []byte("x"), Mode: "0644", Size: 1},
	}
	var m bytes.Buffer
	total := int64(0)
	for i := range files {
		p := fmt.Sprintf("d%03d/f%04d", i/1000, i%1000)
		content := ""
		if i%7 == 0 {
			content = fmt.Sprintf("file %d\n", i)
		}
		kind := tool.ChangeAdd
		before := ""
		if p == "d000/f0001" {
			kind, before = tool.ChangeUpdate, digestOf("x")
		}
		m.WriteString(manifestLine(kind, "file", before, digestOf(content), int64(len(content)), p, ""))
		total += int64(len(content))
	}
	m.WriteString(manifestLine(tool.ChangeAdd, "unreadable", "", "", 12, "d999/secret", ""))
	m.WriteString(manifestLine(tool.ChangeAdd, "file", "", digestOf(""), 0, "we ird\n\"x", ""))
	m.WriteString(manifestLine(tool.ChangeAdd, "link", "", "", 0, "d999/ln", "../a.txt"))
	m.WriteString(manifestLine(tool.ChangeAdd, "fifo", "", "", 0, "d999/pipe", ""))
	made := m.Bytes()
	bulk1 := tool.FileChange{Path: ".", Kind: tool.ChangeUpdate, After: tool.Digest(made), AfterData: made, Files: files + 4, Bytes: total}

	m = bytes.Buffer{}
	for i := 0; i < files; i += 97 {
		p := fmt.Sprintf("d%03d/f%04d", i/1000, i%1000)
		content := ""
		if i%7 == 0 {
			content = fmt.Sprintf("file %d\n", i)
		}
		switch i % 3 {
		case 0:
			m.WriteString(manifestLine(tool.ChangeDelete, "file", digestOf(content), "", int64(len(content)), p, ""))
		case 1:
			m.WriteString(manifestLine(tool.ChangeUpdate, "link", digestOf(content), "", 0, p, "elsewhere"))
		default:
			m.WriteString(manifestLine(tool.ChangeUpdate, "file", digestOf(content), digestOf("again"), 5, p, ""))
		}
	}
	m.WriteString(manifestLine(tool.ChangeDelete, "file", digestOf("a\n"), "", 2, "a.txt", ""))
	removed := m.Bytes()
	bulk2 := tool.FileChange{Path: ".", Kind: tool.ChangeUpdate, After: tool.Digest(removed), AfterData: removed, Files: files/97 + 2, Bytes: 5}

	s.settle = []tool.FileChange{
		{Path: "a/b", Kind: tool.ChangeUpdate, Before: digestOf("b\n"), After: digestOf("c\n"), BeforeData: []byte("b\n"), AfterData: []byte("c\n"), Mode: "0644", Size: 2},
		{Path: "late.txt", Kind: tool.ChangeAdd, After: digestOf("late\n"), AfterData: []byte("late\n"), Mode: "0600", Size: 5},
	}
	call := func(turn int, op tool.Op, changes []tool.FileChange) agent.Event {
		id := fmt.Sprint("call_", turn)
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
		call(1, tool.OpExec, []tool.FileChange{bulk1}),
		{Type: agent.EventTurnCompleted, Turn: 1},
		call(2, tool.OpExec, []tool.FileChange{bulk2}),
		{Type: agent.EventTurnCompleted, Turn: 2},
		{Type: agent.EventRunCompleted, Outcome: &agent.Outcome{Status: agent.StatusCompleted, Turns: 3, Calls: 3}},
	}
	return s
}

// fileContent is a content in a file, read from it anew at each Open.
type fileContent struct {
	path string
	size int64
}

func (c fileContent) Open() (io.ReadCloser, error) { return os.Open(c.path) }
func (c fileContent) Size() int64                  { return c.size }

// inFiles is s with each bulk change's manifest in a file (AfterFile)
// instead of memory, as the change tracker passes a large one.
func (s bulkSession) inFiles(t *testing.T) bulkSession {
	dir := t.TempDir()
	out := bulkSession{settle: s.settle}
	for i, ev := range s.events {
		if ev.Results != nil {
			res := slices.Clone(ev.Results)
			for k := range res {
				chs := slices.Clone(res[k].Changes)
				for c := range chs {
					if chs[c].Files == 0 {
						continue
					}
					p := filepath.Join(dir, fmt.Sprintf("manifest-%d-%d-%d", i, k, c))
					if err := os.WriteFile(p, chs[c].AfterData, 0o600); err != nil {
						t.Fatal(err)
					}
					chs[c].AfterFile = fileContent{p, int64(len(chs[c].AfterData))}
					chs[c].AfterData = nil
				}
				res[k].Changes = chs
			}
			ev.Results = res
		}
		out.events = append(out.events, ev)
	}
	return out
}

// record writes s to a new ledger in dir, its clock starting at a fixed
// time and advancing a millisecond an entry, and returns the ledger's
// directory.
func (s bulkSession) record(t *testing.T, dir string, tune func(*Recorder)) (ledger, vkey string) {
	t.Helper()
	signer, vkey := newKey(t, "truss/test")
	dir = filepath.Join(dir, "ledger")
	w, err := Create(dir, "S", signer)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	w.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	rec, err := NewRecorder(w, Start{Truss: "test", Model: "m", Workspace: "/ws"})
	if err != nil {
		t.Fatal(err)
	}
	rec.Settle = func() ([]tool.FileChange, error) { return s.settle, nil }
	if tune != nil {
		tune(rec)
	}
	for _, ev := range s.events {
		rec.Observe(ev)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, vkey
}

// fileDigests is the SHA-256 and size of the files of a ledger that do
// not depend on its key: its entries and its payloads.
func fileDigests(t *testing.T, dir string) string {
	t.Helper()
	var out bytes.Buffer
	for _, name := range []string{"entries.jsonl", PackName} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		fmt.Fprintf(&out, "%s %s %d\n", name, hex.EncodeToString(sum[:]), len(b))
	}
	return out.String()
}

// TestRecordBulkGolden: the entries and payloads of a session whose
// commands change 100,000 files are byte for byte those of
// testdata/bulk_session.golden (their SHA-256 and sizes), written by the
// recorder that held every manifest and final digest in memory, and the
// ledger verifies with its final files as the session left them.
func TestRecordBulkGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("records 100,000 files")
	}
	s := newBulkSession(100_000)
	golden := filepath.Join("testdata", "bulk_session.golden")
	spill := func(r *Recorder) { r.final.max = 1000 } // 100 runs, merged every 16
	for _, v := range []struct {
		name   string
		tune   func(*Recorder)
		inFile bool
	}{
		{"in memory", nil, false},
		{"manifests in files", nil, true},
		{"final digests spilled", spill, false},
		{"manifests in files, final digests spilled", spill, true},
		{"final digests spilled by their bytes", func(r *Recorder) { r.final.maxBytes = 100 << 10 }, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			s := s
			if v.inFile {
				s = s.inFiles(t)
			}
			dir, vkey := s.record(t, t.TempDir(), v.tune)
			got := fileDigests(t, dir)
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
			// Every file made, the unreadable and the strange one, less
			// the third of every 97th removed, and less a.txt's removal
			// kept as "": links and the FIFO have no digest to compare.
			if d, ok := final["a.txt"]; !ok || d != "" {
				t.Errorf("a.txt: %q, %v; want \"\" (deleted)", d, ok)
			}
			if d := final["a/b"]; d != digestOf("c\n") {
				t.Errorf("a/b: %q, want the last scan's content", d)
			}
			if _, ok := final["d999/ln"]; ok {
				t.Error("a link is listed")
			}
			if d, ok := final["d000/f0001"]; !ok || d != digestOf("") {
				t.Errorf("d000/f0001: %q, %v; want the bulk change's digest", d, ok)
			}
			if *update && v.tune == nil {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("the ledger's files differ from %s:\ngot\n%swant\n%s", golden, got, want)
			}
		})
	}
}
