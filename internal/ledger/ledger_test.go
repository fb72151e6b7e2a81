package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	fproof "github.com/transparency-dev/formats/proof"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
	"google.golang.org/protobuf/encoding/protojson"
)

func newKey(t testing.TB, name string) (note.Signer, string) {
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

// sample writes a ledger of 6 entries with payloads and two checkpoints.
func sample(t *testing.T) (dir, vkey string) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "ledger")
	s, vkey := newKey(t, "truss/test")
	w, err := Create(dir, "S1", s)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := w.Put([]byte("request body"))
	w.Append("session.start", map[string]any{"model": "m", "surface": "generic"}, nil)
	w.Append("model.response", map[string]any{"stop": "tool_use", "usage": map[string]int{"input": 10}}, map[string]string{"request": d})
	w.Append("tool.call", map[string]any{"call_id": "c1", "op": "file.view"}, nil)
	if err := w.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	o, _ := w.Put([]byte("output text"))
	w.Append("tool.result", map[string]any{"call_id": "c1"}, map[string]string{"output": o})
	w.Append("model.response", map[string]any{"stop": "end_turn"}, nil)
	w.Append("session.end", map[string]any{"status": "completed"}, nil)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, vkey
}

func TestVerifyGood(t *testing.T) {
	dir, vkey := sample(t)
	r, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	if r.Entries != 6 || r.Sealed != 6 || r.Checkpoints != 2 || r.Payloads != 2 || r.Unsealed != 0 || len(entries) != 6 || r.Origin != "truss/test/session/S1" {
		t.Fatalf("report %+v", r)
	}
}

func edit(t *testing.T, path string, f func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, f(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// lines splits the file into its lines, each with its newline.
func lines(b []byte) [][]byte {
	l := bytes.SplitAfter(b, []byte("\n"))
	return l[:len(l)-1]
}

// TestMutations: every kind of tampering is detected, with a message that
// names what is wrong.
func TestMutations(t *testing.T) {
	entries := func(dir string) string { return filepath.Join(dir, "entries.jsonl") }
	cpFile := func(dir string, n int) string {
		return filepath.Join(dir, "checkpoints", "0000000000000000000"+string(rune('0'+n)))
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, dir string)
		want   string
	}{
		{"flip a byte in an entry's data", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { return bytes.Replace(b, []byte(`"input":10`), []byte(`"input":90`), 1) })
		}, "entry 1: the entry was changed"},
		{"flip a byte in the last entry", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { return bytes.Replace(b, []byte(`"completed"`), []byte(`"completeD"`), 1) })
		}, "checkpoint 6's root hash does not match the entries"},
		{"re-encode an entry", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { return bytes.Replace(b, []byte(`"v":1,`), []byte(`"v": 1,`), 1) })
		}, "entry 0: the line is not in the ledger's canonical encoding"},
		{"delete an entry", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { l := lines(b); return bytes.Join(append(l[:2:2], l[3:]...), nil) })
		}, "entry 2: sequence number 3, want 2"},
		{"reorder entries", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { l := lines(b); l[3], l[4] = l[4], l[3]; return bytes.Join(l, nil) })
		}, "entry 3: sequence number 4, want 3"},
		{"duplicate an entry", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte {
				l := lines(b)
				return bytes.Join(append(l[:3:3], append([][]byte{l[2]}, l[3:]...)...), nil)
			})
		}, "entry 3: sequence number 2, want 3"},
		{"truncate the entries", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { l := lines(b); return bytes.Join(l[:4], nil) })
		}, "checkpoint 6 covers 6 entries, but only 4 exist"},
		{"truncate and re-sign nothing", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { l := lines(b); return bytes.Join(l[:2], nil) })
		}, "checkpoint 3 covers 3 entries, but only 2 exist"},
		{"tear the last line", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte { return b[:len(b)-5] })
		}, "entry 5: the last line has no newline"},
		{"flip a byte in a payload", func(t *testing.T, dir string) {
			ents, _ := os.ReadDir(filepath.Join(dir, "payloads"))
			edit(t, filepath.Join(dir, "payloads", ents[0].Name()), func(b []byte) []byte { b[0] ^= 1; return b })
		}, "content does not match its digest"},
		{"delete a payload", func(t *testing.T, dir string) {
			ents, _ := os.ReadDir(filepath.Join(dir, "payloads"))
			os.Remove(filepath.Join(dir, "payloads", ents[1].Name()))
		}, "missing"},
		{"flip a byte in a checkpoint's root", func(t *testing.T, dir string) {
			edit(t, cpFile(dir, 3), func(b []byte) []byte {
				l := bytes.SplitN(b, []byte("\n"), 4)
				l[2][0] ^= 'A' ^ 'B'
				return bytes.Join(l, []byte("\n"))
			})
		}, "checkpoint 3: "},
		{"flip a byte in a checkpoint's signature", func(t *testing.T, dir string) {
			edit(t, cpFile(dir, 6), func(b []byte) []byte { i := bytes.LastIndex(b, []byte(" ")) + 5; b[i] ^= 1; return b })
		}, "checkpoint 6: "},
		{"sign with another key", func(t *testing.T, dir string) {
			s, _ := newKey(t, "truss/test")
			b, _ := os.ReadFile(cpFile(dir, 6))
			text := string(b[:bytes.Index(b, []byte("\n\n"))+1])
			signed, _ := note.Sign(&note.Note{Text: text}, s)
			os.WriteFile(cpFile(dir, 6), signed, 0o600)
		}, "checkpoint 6: "},
		{"change the session", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte {
				l := lines(b)
				l[5] = bytes.Replace(l[5], []byte(`"session":"S1"`), []byte(`"session":"S2"`), 1)
				return bytes.Join(l, nil)
			})
		}, `entry 5: session "S2", want "S1"`},
		{"remove every checkpoint", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "checkpoints"))
		}, "no signed checkpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, vkey := sample(t)
			tt.mutate(t, dir)
			_, _, err := Verify(dir, vkey)
			if err == nil {
				t.Fatal("the mutation was not detected")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestUnsealedTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "l")
	s, vkey := newKey(t, "truss/test")
	w, _ := Create(dir, "S", s)
	w.Append("a", nil, nil)
	w.Flush()
	w.Append("b", nil, nil)
	// A killed process: an entry whose payload never reached the disk, and
	// no final checkpoint.
	w.Append("c", nil, map[string]string{"output": strings.Repeat("0", 64)})
	w.f.Sync()
	r, _, err := Verify(dir, vkey)
	if err != nil || r.Sealed != 1 || r.Unsealed != 2 || r.TailPayloads != 1 {
		t.Fatalf("report %+v, %v", r, err)
	}
}

func TestKey(t *testing.T) {
	dir := t.TempDir()
	s1, v1, err := LoadOrCreateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, v2, _ := LoadOrCreateKey(dir)
	if v1 != v2 || s1.KeyHash() != s2.KeyHash() || !strings.HasPrefix(v1, "truss/") {
		t.Fatalf("key not stable: %s %s", v1, v2)
	}
	fi, _ := os.Stat(filepath.Join(dir, "ledger.key"))
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key mode %v", fi.Mode().Perm())
	}
}

func BenchmarkAppend(b *testing.B) {
	s, _ := newKey(b, "truss/bench")
	w, err := Create(filepath.Join(b.TempDir(), "l"), "S", s)
	if err != nil {
		b.Fatal(err)
	}
	data := map[string]any{"call_id": "call_1", "op": "file.view", "surface": "generic", "exit_code": 0}
	pl := map[string]string{"output": strings.Repeat("a", 64)}
	b.ResetTimer()
	for b.Loop() {
		if _, err := w.Append("tool.result", data, pl); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify100k verifies a ledger of 100,000 entries with a
// checkpoint every 10 entries.
func BenchmarkVerify100k(b *testing.B) {
	s, vkey := newKey(b, "truss/bench")
	dir := filepath.Join(b.TempDir(), "l")
	w, _ := Create(dir, "S", s)
	for i := 0; i < 100000; i++ {
		w.Append("tool.result", map[string]any{"call_id": i, "op": "file.view"}, nil)
		if i%10 == 9 {
			w.Checkpoint()
		}
	}
	w.Close()
	b.ResetTimer()
	for b.Loop() {
		r, _, err := Verify(dir, vkey)
		if err != nil || r.Entries != 100000 {
			b.Fatal(r, err)
		}
	}
}

func TestProve(t *testing.T) {
	dir, vkey := sample(t)
	leaves, _ := readLeaves(dir, 6)
	r, _, _ := Verify(dir, vkey)
	for i := uint64(0); i < 6; i++ {
		b, err := Prove(dir, vkey, i)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("c2sp.org/tlog-proof@v1\n")) || !bytes.Contains(b, []byte("index "+string(rune('0'+i))+"\n")) {
			t.Fatalf("proof %d:\n%s", i, b)
		}
		var tp fproof.TLogProof
		if err := tp.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		var hs [][]byte
		for _, h := range tp.Hashes {
			hs = append(hs, append([]byte(nil), h[:]...))
		}
		if err := proof.VerifyInclusion(rfc6962.DefaultHasher, tp.Index, 6, leaves[i], hs, r.Root); err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	if _, err := Prove(dir, vkey, 6); err == nil {
		t.Fatal("proved an entry past the checkpoint")
	}
}

func TestExport(t *testing.T) {
	keyDir := t.TempDir()
	signer, vkey, err := LoadOrCreateKey(keyDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "l")
	w, _ := Create(dir, "S9", signer)
	rec, _ := NewRecorder(w, Start{Truss: "test", Provider: "sim", Model: "m", Repo: &RepoState{Head: strings.Repeat("a", 40)}})
	rec.Close()
	w.Append("session.end", map[string]any{"status": "completed", "files": map[string]string{"a.go": strings.Repeat("b", 64), "gone.go": ""}}, nil)
	w.Close()
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
	// The in-toto library's own types and validation accept the documents.
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(body, st); err != nil {
		t.Fatalf("not an in-toto statement: %v\n%s", err, body)
	}
	if err := st.Validate(); err != nil {
		t.Fatalf("statement: %v", err)
	}
	pj, _ := protojson.Marshal(st.Predicate)
	prov := &slsa.Provenance{}
	if err := protojson.Unmarshal(pj, prov); err != nil {
		t.Fatalf("not an SLSA provenance: %v", err)
	}
	if err := prov.Validate(); err != nil {
		t.Fatalf("provenance: %v", err)
	}
	if len(st.Subject) != 1 || st.Subject[0].Name != "a.go" || st.PredicateType != "https://slsa.dev/provenance/v1" ||
		prov.BuildDefinition.ResolvedDependencies[0].Digest["gitCommit"] != strings.Repeat("a", 40) {
		t.Fatalf("statement %v", st)
	}
	// A changed payload fails verification.
	tampered := bytes.Replace(env, []byte(`"payload": "`), []byte(`"payload": "A`), 1)
	if _, err := VerifyExport(tampered, vkey, priv.Public().(ed25519.PublicKey)); err == nil {
		t.Fatal("a tampered envelope verified")
	}
}
