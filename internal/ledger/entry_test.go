package ledger

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
)

// appendRaw appends line to the ledger's entries after its last line, as
// the next entry would be: the caller formats it with its seq and with prev
// (the last line's leaf hash) through %d and %s. With torn, the line has no
// final newline.
func appendRaw(t *testing.T, dir, format string, torn bool) int {
	t.Helper()
	path := filepath.Join(dir, "entries.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ls := lines(b)
	last := bytes.TrimSuffix(ls[len(ls)-1], []byte("\n"))
	prev := hex.EncodeToString(rfc6962.DefaultHasher.HashLeaf(last))
	line := fmt.Sprintf(format, len(ls), prev)
	n := len(line)
	if !torn {
		line += "\n"
	}
	if err := os.WriteFile(path, append(b, line...), 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestEntryRules checks the entry rules of docs/ledger.md on an entry
// appended after the last checkpoint: unsealed entries are checked as
// sealed ones are, any JSON string escape is accepted, and a torn last line
// is an unsealed tail.
func TestEntryRules(t *testing.T) {
	const ok = `{"v":1,"seq":%d,"time":"2026-12-02T14:44:32.513054Z","session":"S1","type":"x","prev":"%s","data":{},"payloads":{}}`
	digest := strings.Repeat("ab", 32)
	result := strings.Replace(ok, `"type":"x"`, `"type":"tool.result"`, 1)
	end := strings.Replace(ok, `"type":"x"`, `"type":"session.end"`, 1)
	compacted := strings.Replace(ok, `"type":"x"`, `"type":"context.compact"`, 1)
	for _, tc := range []struct {
		name     string
		line     string
		wantErr  string // "" when it verifies
		unsealed uint64
		torn     bool
	}{
		{name: "well formed", line: ok, unsealed: 1},
		{name: "escapes in strings", line: strings.Replace(ok, `"data":{}`, `"data":{"t":"a\ufffdb\u0041\/\u00e9\ud83d\ude00"}`, 1), unsealed: 1},
		{name: "whitespace between tokens", line: strings.NewReplacer(`":`, `" :	`, `,"`, ` , "`, `{`, `{ `).Replace(ok), unsealed: 1},
		{name: "no fraction of a second", line: strings.Replace(ok, "32.513054Z", "32Z", 1), unsealed: 1},
		{name: "time yesterday", line: strings.Replace(ok, "2026-12-02T14:44:32.513054Z", "yesterday", 1), wantErr: "time"},
		{name: "time not UTC", line: strings.Replace(ok, "32.513054Z", "32.5+01:00", 1), wantErr: "time"},
		{name: "time not a date", line: strings.Replace(ok, "12-02T", "02-30T", 1), wantErr: "time"},
		{name: "time a number", line: strings.Replace(ok, `"2026-12-02T14:44:32.513054Z"`, `1`, 1), wantErr: "time"},
		{name: "payload digest ABC", line: strings.Replace(ok, `"payloads":{}`, `"payloads":{"output":"ABC"}`, 1), wantErr: "digest"},
		{name: "payload digest upper case", line: strings.Replace(ok, `"payloads":{}`, `"payloads":{"output":"`+strings.ToUpper(digest)+`"}`, 1), wantErr: "digest"},
		{name: "payload digest a number", line: strings.Replace(ok, `"payloads":{}`, `"payloads":{"output":1}`, 1), wantErr: "payloads"},
		{name: "payload name empty", line: strings.Replace(ok, `"payloads":{}`, `"payloads":{"":"`+digest+`"}`, 1), wantErr: "payload name"},
		{name: "change digest ABC", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"ABC","kind":"add","path":"a"}]}]}`, 1), wantErr: "digest"},
		{name: "change path absolute", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","kind":"add","path":"/memories/a"}]}]}`, 1), unsealed: 1},
		{name: "change path not clean", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","kind":"add","path":"a/../b"}]}]}`, 1), wantErr: "path"},
		{name: "change path with a double slash", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","kind":"add","path":"//a"}]}]}`, 1), wantErr: "path"},
		{name: "change path empty", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","kind":"add","path":""}]}]}`, 1), wantErr: "path"},
		{name: "change well formed", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","before":"","kind":"update","moved_to":"b/c","path":"a"}]}]}`, 1), unsealed: 1},
		{name: "change moved out of the workspace", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","kind":"update","moved_to":"../b","path":"a"}]}]}`, 1), wantErr: "moved_to"},
		{name: "change kind unknown", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":[{"after":"`+digest+`","kind":"make","path":"a"}]}]}`, 1), wantErr: "kind"},
		{name: "files digest ABC", line: strings.Replace(end, `"data":{}`, `"data":{"files":{"a":"ABC"}}`, 1), wantErr: "digest"},
		{name: "files_count of few files", line: strings.NewReplacer(`"data":{}`, `"data":{"files_count":5}`, `"payloads":{}`, `"payloads":{"final_files":"`+digest+`"}`).Replace(end), wantErr: "files_count"},
		{name: "files_count not a number", line: strings.NewReplacer(`"data":{}`, `"data":{"files_count":"2000"}`, `"payloads":{}`, `"payloads":{"final_files":"`+digest+`"}`).Replace(end), wantErr: "files_count"},
		{name: "files_count and files", line: strings.NewReplacer(`"data":{}`, `"data":{"files":{},"files_count":2000}`, `"payloads":{}`, `"payloads":{"final_files":"`+digest+`"}`).Replace(end), wantErr: "both"},
		{name: "files_count without final_files", line: strings.Replace(end, `"data":{}`, `"data":{"files_count":2000}`, 1), wantErr: "final_files"},
		{name: "results null", line: strings.Replace(result, `"data":{}`, `"data":{"results":null}`, 1), unsealed: 1},
		{name: "results an object", line: strings.Replace(result, `"data":{}`, `"data":{"results":{}}`, 1), wantErr: "data.results"},
		{name: "changes a string", line: strings.Replace(result, `"data":{}`, `"data":{"results":[{"changes":"a"}]}`, 1), wantErr: "changes"},
		{name: "files an array", line: strings.Replace(end, `"data":{}`, `"data":{"files":[]}`, 1), wantErr: "data.files"},
		{name: "files well formed", line: strings.Replace(end, `"data":{}`, `"data":{"files":{"a":"`+digest+`","b/c":""}}`, 1), unsealed: 1},
		{name: "compaction well formed", line: strings.NewReplacer(`"data":{}`, `"data":{"digest":"`+digest+`","replaced":3}`, `"payloads":{}`, `"payloads":{"replaced":"`+digest+`"}`).Replace(compacted), unsealed: 1},
		{name: "compaction digest ABC", line: strings.Replace(compacted, `"data":{}`, `"data":{"digest":"ABC"}`, 1), wantErr: "data.digest"},
		{name: "compaction without a digest", line: compacted, wantErr: "data.digest"},
		{name: "compaction replaced payload not its digest", line: strings.NewReplacer(`"data":{}`, `"data":{"digest":"`+digest+`"}`, `"payloads":{}`, `"payloads":{"replaced":"`+strings.Repeat("cd", 32)+`"}`).Replace(compacted), wantErr: "replaced"},
		{name: "data not an object", line: strings.Replace(ok, `"data":{}`, `"data":[]`, 1), wantErr: "data"},
		{name: "session empty", line: strings.Replace(ok, `"session":"S1"`, `"session":""`, 1), wantErr: "session"},
		{name: "type empty", line: strings.Replace(ok, `"type":"x"`, `"type":""`, 1), wantErr: "type"},
		{name: "v a string", line: strings.Replace(ok, `"v":1`, `"v":"1"`, 1), wantErr: "v"},
		{name: "seq a fraction", line: strings.Replace(ok, `"seq":%d`, `"seq":%d.0`, 1), wantErr: "seq"},
		{name: "member missing", line: strings.Replace(ok, `,"payloads":{}`, ``, 1), wantErr: "payloads"},
		{name: "member unknown", line: strings.Replace(ok, `"payloads":{}`, `"payloads":{},"extra":1`, 1), wantErr: "extra"},
		{name: "duplicate member", line: strings.Replace(ok, `"data":{}`, `"data":{"a":1,"a":2}`, 1), wantErr: "duplicate"},
		{name: "trailing bytes", line: ok + ` {}`, wantErr: "JSON"},
		{name: "invalid UTF-8", line: strings.Replace(ok, `"data":{}`, "\"data\":{\"t\":\"\xff\"}", 1), wantErr: "UTF-8"},
		{name: "torn last line", line: ok, torn: true},
		{name: "torn garbage", line: `{"v":1,"se`, torn: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, vkey := sample(t)
			n := appendRaw(t, dir, tc.line, tc.torn)
			r, _, err := Verify(dir, vkey)
			if tc.wantErr != "" {
				var e *Error
				if err == nil || !errors.As(err, &e) || e.Entry != 6 || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want entry 6's error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			torn := 0
			if tc.torn {
				torn = n
			}
			if r.Sealed != 6 || r.Entries != 6+tc.unsealed || r.Unsealed != tc.unsealed || r.TornBytes != torn {
				t.Fatalf("report %d entries, %d sealed, %d unsealed, torn %d; want 6 sealed, %d unsealed, torn %d",
					r.Entries, r.Sealed, r.Unsealed, r.TornBytes, tc.unsealed, torn)
			}
		})
	}
}

// TestTornLineSealed: a checkpoint that covers a torn line's entry fails.
func TestTornLineSealed(t *testing.T) {
	dir, vkey := sample(t)
	edit(t, filepath.Join(dir, "entries.jsonl"), func(b []byte) []byte { return b[:len(b)-1] })
	_, _, err := Verify(dir, vkey)
	if err == nil || !strings.Contains(err.Error(), "only 5 exist") {
		t.Fatalf("err %v", err)
	}
}

// TestWriterReplacesInvalidUTF8: the writer writes invalid UTF-8 in data as
// U+FFFD itself, not as an escape, and the entry verifies.
func TestWriterReplacesInvalidUTF8(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "l")
	s, vkey := newKey(t, "truss/test")
	w, _ := Create(dir, "S", s)
	w.Append("x", map[string]any{"t": "a\xffb"}, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if !bytes.Contains(b, []byte(`"t":"a`+"\uFFFD"+`b"`)) {
		t.Fatalf("entry %s", b)
	}
	if _, _, err := Verify(dir, vkey); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseEntry: parseEntry never panics, and an entry it accepts, written
// again by the writer's encoder, is accepted again and reads the same.
func FuzzParseEntry(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":0,"time":"2026-12-02T14:44:32.513054Z","session":"S","type":"x","prev":"","data":{},"payloads":{}}`))
	f.Add([]byte(`{"v":1,"seq":3,"time":"2026-12-02T14:44:32Z","session":"S","type":"tool.result","prev":"","data":{"results":[{"changes":[{"kind":"add","path":"a","after":""}]}]},"payloads":{"o":"` + strings.Repeat("0", 64) + `"}}`))
	f.Add([]byte(`{"v":1,"seq":1,"time":"yesterday","session":"S","type":"x","prev":"","data":{"a":"\ufffd"},"payloads":{}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := parseEntry(line)
		if err != nil {
			return
		}
		re, err := marshal(e)
		if err != nil {
			t.Fatalf("marshal %q: %v", line, err)
		}
		e2, err := parseEntry(re)
		if err != nil {
			t.Fatalf("%q accepted, its re-encoding %q not: %v", line, re, err)
		}
		if e2.Seq != e.Seq || e2.Time != e.Time || e2.Session != e.Session || e2.Type != e.Type || e2.Prev != e.Prev || len(e2.Payloads) != len(e.Payloads) {
			t.Fatalf("%q reads %+v, its re-encoding %+v", line, e, e2)
		}
	})
}
