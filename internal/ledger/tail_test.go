package ledger

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/rfc6962"
)

// appendLines appends lines to the ledger's entries, each ending in its
// own ending ("\n", "\r\n", or "" for a torn last line). In each line,
// SEQ becomes the next entry's index and PREV the leaf hash of the line
// before it: the bytes before its "\n", a "\r" included.
func appendLines(t testing.TB, dir string, lines ...string) {
	t.Helper()
	path := filepath.Join(dir, "entries.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, withTail(b, lines...), 0o600); err != nil {
		t.Fatal(err)
	}
}

// withTail returns entries (a complete entries.jsonl) with lines appended
// as appendLines appends them.
func withTail(entries []byte, lines ...string) []byte {
	ls := bytes.SplitAfter(entries, []byte("\n"))
	ls = ls[:len(ls)-1]
	seq := len(ls)
	last := bytes.TrimSuffix(ls[seq-1], []byte("\n"))
	out := bytes.Clone(entries)
	for _, l := range lines {
		prev := hex.EncodeToString(rfc6962.DefaultHasher.HashLeaf(last))
		line := strings.NewReplacer("SEQ", fmt.Sprint(seq), "PREV", prev).Replace(l)
		out = append(out, line...)
		last = []byte(strings.TrimSuffix(line, "\n"))
		seq++
	}
	return out
}

// tailEntry is an entry of sample's session, for appendLines, without its
// line ending.
const tailEntry = `{"v":1,"seq":SEQ,"time":"2026-12-02T14:44:32.513054Z","session":"S1","type":"x","prev":"PREV","data":{},"payloads":{}}`

// TestUnsealedCount: entries appended after the last checkpoint are
// counted as unsealed however they are encoded, a torn last line is
// reported beside them and not counted, and CheckSealed fails on either.
func TestUnsealedCount(t *testing.T) {
	ok := tailEntry
	whole := len(ok) - len("SEQ") + len("6") - len("PREV") + 64 // ok's length in the ledger
	for _, tc := range []struct {
		name     string
		lines    []string
		unsealed uint64
		torn     int
		msg      string // in CheckSealed's error
	}{
		{name: "nothing appended"},
		{name: "as Truss writes it", lines: []string{ok + "\n"}, unsealed: 1, msg: "1 entry after the last checkpoint (size 6); no signature covers it"},
		{name: "escaped strings", lines: []string{strings.NewReplacer(`"S1"`, `"\u00531"`, `"x"`, `"\u0078"`, `"data":{}`, `"data":{"t":"a\ufffdb\/\ud83d\ude00"}`).Replace(ok) + "\n"}, unsealed: 1},
		{name: "escaped member names", lines: []string{strings.NewReplacer(`"v"`, `"\u0076"`, `"seq"`, `"se\u0071"`, `"payloads"`, `"pay\u006coads"`).Replace(ok) + "\n"}, unsealed: 1},
		{name: "whitespace between tokens", lines: []string{" \t" + strings.NewReplacer(`":`, `" :	`, `,"`, ` , "`, `{}`, `{ }`).Replace(ok) + "  \n"}, unsealed: 1},
		{name: "members in another order", lines: []string{`{"payloads":{},"data":{},"prev":"PREV","type":"x","session":"S1","time":"2026-12-02T14:44:32Z","seq":SEQ,"v":1}` + "\n"}, unsealed: 1},
		{name: "CR LF", lines: []string{ok + "\r\n"}, unsealed: 1},
		{name: "three entries, three encodings", lines: []string{ok + "\r\n", strings.ReplaceAll(ok, ",", " ,") + "\n", strings.Replace(ok, `"x"`, `"\u0078"`, 1) + "\n"}, unsealed: 3,
			msg: "3 entries after the last checkpoint (size 6); no signature covers them"},
		{name: "a whole entry without its newline", lines: []string{ok}, torn: whole,
			msg: fmt.Sprintf("a torn last line of %d bytes", whole) + " (a write cut short, not an entry) after the last checkpoint (size 6); no signature covers it"},
		{name: "a torn partial line", lines: []string{`{"v":1,"se`}, torn: 10},
		{name: "a torn CR LF line", lines: []string{ok + "\r"}, torn: whole + 1},
		{name: "entries and a torn line", lines: []string{ok + "\n", ok + "\r\n", `{"v"`}, unsealed: 2, torn: 4,
			msg: "2 entries and a torn last line of 4 bytes (a write cut short, not an entry) after the last checkpoint (size 6); no signature covers them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, vkey := sample(t)
			appendLines(t, dir, tc.lines...)
			r, entries, err := Verify(dir, vkey)
			if err != nil {
				t.Fatal(err)
			}
			if r.Sealed != 6 || r.Entries != 6+tc.unsealed || r.Unsealed != tc.unsealed || r.TornBytes != tc.torn || len(entries) != int(r.Entries) {
				t.Fatalf("report: %d entries, %d sealed, %d unsealed, torn %d; want 6 sealed, %d unsealed, torn %d",
					r.Entries, r.Sealed, r.Unsealed, r.TornBytes, tc.unsealed, tc.torn)
			}
			err = r.CheckSealed()
			if complete := tc.unsealed == 0 && tc.torn == 0; r.Complete() != complete || (err == nil) != complete {
				t.Fatalf("Complete %t, CheckSealed %v; want complete %t", r.Complete(), err, complete)
			}
			if err == nil {
				return
			}
			var ue *UnsealedError
			if !errors.As(err, &ue) || ue.Sealed != 6 || ue.Unsealed != tc.unsealed || ue.TornBytes != tc.torn {
				t.Fatalf("CheckSealed: %#v", err)
			}
			if !strings.HasPrefix(err.Error(), "unsealed tail: ") || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("CheckSealed: %q, want %q in it", err, tc.msg)
			}
		})
	}
}

// TestUnsealedAfterLostCheckpoint: entries whose checkpoint is gone are the
// unsealed tail of the one before.
func TestUnsealedAfterLostCheckpoint(t *testing.T) {
	dir, vkey := sample(t)
	edit(t, filepath.Join(dir, CheckpointsName), func(b []byte) []byte {
		return b[:bytes.LastIndex(b, []byte("\n6 "))+1]
	})
	appendLines(t, dir, tailEntry+"\r\n")
	r, _, err := Verify(dir, vkey)
	if err != nil || r.Sealed != 3 || r.Unsealed != 4 || r.Checkpoints != 1 {
		t.Fatalf("report %+v, %v", r, err)
	}
	if err := r.CheckSealed(); err == nil || !strings.Contains(err.Error(), "4 entries after the last checkpoint (size 3)") {
		t.Fatalf("CheckSealed: %v", err)
	}
}

// TestNoCheckpoint: a ledger without a signed checkpoint does not verify,
// and its report counts every entry as unsealed.
func TestNoCheckpoint(t *testing.T) {
	dir, vkey := sample(t)
	appendLines(t, dir, tailEntry+"\n", `{"v"`)
	if err := os.WriteFile(filepath.Join(dir, CheckpointsName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, _, err := Verify(dir, vkey)
	if err == nil || !strings.Contains(err.Error(), "no signed checkpoint: none of the 7 entries is sealed") {
		t.Fatalf("err %v", err)
	}
	if r.Entries != 7 || r.Sealed != 0 || r.Unsealed != 7 || r.TornBytes != 4 || r.Complete() {
		t.Fatalf("report %+v", r)
	}
}

// TestFormatRoot: roots are shown as the checkpoint writes them.
func TestFormatRoot(t *testing.T) {
	dir, vkey := sample(t)
	r, _, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := FormatRoot(r.Root), strings.Split(string(r.Checkpoint), "\n")[2]; got != want {
		t.Fatalf("FormatRoot %q, the checkpoint's root line %q", got, want)
	}
}

// TestExportSealedOnly: an unsealed session.end naming files is not taken
// for the session's: the statement's subject is the last checkpoint.
func TestExportSealedOnly(t *testing.T) {
	keyDir := t.TempDir()
	signer, vkey, err := LoadOrCreateKey(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "l")
	w, _ := Create(dir, "S9", signer)
	rec, _ := NewRecorder(w, Start{Truss: "test", Provider: "sim", Model: "m"})
	rec.Close()
	w.Close()
	appendLines(t, dir, strings.NewReplacer(`"S1"`, `"S9"`, `"x"`, `"session.end"`, `"data":{}`, `"data":{"files":{"evil.go":"`+strings.Repeat("b", 64)+`"}}`).Replace(tailEntry)+"\n")
	priv, err := PrivateKey(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	env, err := Export(dir, vkey, priv)
	if err != nil {
		t.Fatal(err)
	}
	body, err := VerifyExport(env, vkey, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	var st statement
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Subject) != 1 || st.Subject[0].Name != "ledger-checkpoint" {
		t.Fatalf("subjects %+v", st.Subject)
	}
}

// FuzzUnsealedTail: whatever is appended after a sealed ledger, Verify
// either fails on the tail or reports the sealed entries as they were, and
// every complete line after them as unsealed and the bytes after the last
// newline as torn. (In the input, SEQ and PREV are filled in line by line,
// so that mutations of the seeds keep reaching the entry checks.)
func FuzzUnsealedTail(f *testing.F) {
	dir, vkey := sample(f)
	files := map[string][]byte{}
	for _, name := range []string{"entries.jsonl", PackName, CheckpointsName} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			f.Fatal(err)
		}
		files[name] = b
	}
	for _, s := range []string{
		tailEntry + "\n",
		tailEntry + "\r\n" + tailEntry,
		strings.ReplaceAll(tailEntry, ",", " ,\t") + "\n" + `{"v":1`,
		strings.Replace(tailEntry, `"v"`, `"\u0076"`, 1) + "\n",
		"\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, tail []byte) {
		d := t.TempDir()
		for name, b := range files {
			if name == "entries.jsonl" {
				b = withTail(b, strings.SplitAfter(string(tail), "\n")...)
				tail = b[len(files[name]):] // as written
			}
			if err := os.WriteFile(filepath.Join(d, name), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		r, entries, err := Verify(d, vkey)
		if err != nil {
			var e *Error
			// A first line with a wrong prev link names entry 5.
			if !errors.As(err, &e) || e.Entry < 5 {
				t.Fatalf("the tail %q fails %v, not at an entry after the sealed ones", tail, err)
			}
			return
		}
		complete := uint64(bytes.Count(tail, []byte("\n")))
		torn := len(tail) - (bytes.LastIndexByte(tail, '\n') + 1)
		if r.Sealed != 6 || r.Unsealed != complete || r.Entries != 6+complete || len(entries) != int(r.Entries) || r.TornBytes != torn {
			t.Fatalf("the tail %q: report %+v, want %d unsealed, torn %d", tail, r, complete, torn)
		}
		if (r.CheckSealed() == nil) != (complete == 0 && torn == 0) {
			t.Fatalf("the tail %q: CheckSealed %v", tail, r.CheckSealed())
		}
	})
}
