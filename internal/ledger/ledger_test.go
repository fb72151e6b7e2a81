package ledger

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

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
func sample(t testing.TB) (dir, vkey string) {
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
	if _, err := w.Flush(); err != nil {
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
	cps := func(dir string) string { return filepath.Join(dir, CheckpointsName) }
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
		}, "entry 0: the entry was changed"},
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
		}, "entry 5: checkpoint 6 covers 6 entries, but only 5 exist"},
		{"flip a byte in a payload", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, PackName), func(b []byte) []byte {
				i := bytes.Index(b, []byte("request body"))
				b[i] ^= 1
				return b
			})
		}, "entry 1: payload request: content does not match its digest"},
		{"delete a payload", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, PackName), func(b []byte) []byte {
				first := bytes.Index(b, []byte("request body\n")) + len("request body\n")
				return b[first:]
			})
		}, "entry 1: payload request: missing"},
		{"damage a payload record's header", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, PackName), func(b []byte) []byte { return bytes.Replace(b, []byte(" 12\n"), []byte(" 1x\n"), 1) })
		}, "payload request: missing (payloads.pack is unreadable from byte 0: a malformed record header"},
		{"tear the payloads", func(t *testing.T, dir string) {
			edit(t, filepath.Join(dir, PackName), func(b []byte) []byte { return b[:len(b)-3] })
		}, "entry 3: payload output: missing (payloads.pack is unreadable from byte 81: the record of"},
		{"flip a byte in a checkpoint's root", func(t *testing.T, dir string) {
			editCheckpoint(t, dir, 3, func(b []byte) []byte {
				l := bytes.SplitN(b, []byte("\n"), 4)
				l[2][0] ^= 'A' ^ 'B'
				return bytes.Join(l, []byte("\n"))
			})
		}, "checkpoint 3: "},
		{"flip a byte in a checkpoint's signature", func(t *testing.T, dir string) {
			editCheckpoint(t, dir, 6, func(b []byte) []byte { i := bytes.LastIndex(b, []byte(" ")) + 5; b[i] ^= 1; return b })
		}, "checkpoint 6: "},
		{"sign with another key", func(t *testing.T, dir string) {
			s, _ := newKey(t, "truss/test")
			editCheckpoint(t, dir, 6, func(b []byte) []byte {
				text := string(b[:bytes.Index(b, []byte("\n\n"))+1])
				signed, _ := note.Sign(&note.Note{Text: text}, s)
				return signed
			})
		}, "checkpoint 6: "},
		{"change the session", func(t *testing.T, dir string) {
			edit(t, entries(dir), func(b []byte) []byte {
				l := lines(b)
				l[5] = bytes.Replace(l[5], []byte(`"session":"S1"`), []byte(`"session":"S2"`), 1)
				return bytes.Join(l, nil)
			})
		}, `entry 5: session "S2", want "S1"`},
		{"remove every checkpoint", func(t *testing.T, dir string) {
			os.Remove(cps(dir))
		}, "no signed checkpoint"},
		{"swap two checkpoints' sizes", func(t *testing.T, dir string) {
			edit(t, cps(dir), func(b []byte) []byte { return bytes.Replace(b, []byte("3 "), []byte("6 "), 1) })
		}, "checkpoints.log: two checkpoints of size 6"},
		{"damage a checkpoint record's header", func(t *testing.T, dir string) {
			edit(t, cps(dir), func(b []byte) []byte { return bytes.Replace(b, []byte("3 "), []byte("3x"), 1) })
		}, "checkpoints.log is unreadable from byte 0: a malformed record header"},
		{"duplicate the first checkpoint", func(t *testing.T, dir string) {
			edit(t, cps(dir), func(b []byte) []byte { return append(b, b...) })
		}, "checkpoints.log: two checkpoints of size 3"},
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

// editCheckpoint rewrites the checkpoint of size n in checkpoints.log.
func editCheckpoint(t *testing.T, dir string, n int, f func([]byte) []byte) {
	t.Helper()
	p := filepath.Join(dir, CheckpointsName)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	recs, perr := parsePack(b)
	if perr != nil {
		t.Fatal(perr)
	}
	var out []byte
	found := false
	for _, r := range recs {
		data := r.data
		if r.key == strconv.Itoa(n) {
			data, found = f(bytes.Clone(data)), true
		}
		out = appendRecord(out, r.key, data)
	}
	if !found {
		t.Fatalf("no checkpoint of size %d", n)
	}
	os.WriteFile(p, out, 0o600)
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

// BenchmarkVerify100k verifies a ledger of 100,000 entries with a signed
// checkpoint every 10 entries (each asked for as a caller that waits would,
// so that none is sealed together with the next).
func BenchmarkVerify100k(b *testing.B) {
	s, vkey := newKey(b, "truss/bench")
	dir := filepath.Join(b.TempDir(), "l")
	w, _ := Create(dir, "S", s)
	for i := 0; i < 100000; i++ {
		w.Append("tool.result", map[string]any{"call_id": i, "op": "file.view"}, nil)
		if i%10 == 9 {
			w.mu.Lock()
			root, _ := w.root()
			w.queue.push(job{size: w.seq, root: root, ack: make(chan []byte, 1)})
			w.sealed = w.seq
			w.mu.Unlock()
		}
	}
	w.Close()
	b.ResetTimer()
	var r *Report
	for b.Loop() {
		var err error
		r, _, err = Verify(dir, vkey)
		if err != nil || r.Entries != 100000 {
			b.Fatal(r, err)
		}
	}
	b.ReportMetric(float64(r.Checkpoints), "checkpoints")
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
	// Two files whose names are not UTF-8 are two subjects, by their
	// recorded names.
	w.Append("session.end", map[string]any{"status": "completed", "files": map[string]string{"a.go": strings.Repeat("b", 64), "gone.go": "",
		EncodeName("r\xff.go"): strings.Repeat("c", 64), EncodeName("r\xfe.go"): strings.Repeat("d", 64)}}, nil)
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
	if len(st.Subject) != 3 || st.Subject[0].Name != "a.go" || st.Subject[1].Name != "\x0072fe2e676f" || st.Subject[1].Digest["sha256"] != strings.Repeat("d", 64) ||
		st.Subject[2].Name != "\x0072ff2e676f" || st.PredicateType != "https://slsa.dev/provenance/v1" ||
		prov.BuildDefinition.ResolvedDependencies[0].Digest["gitCommit"] != strings.Repeat("a", 40) {
		t.Fatalf("statement %v", st)
	}
	// A changed payload fails verification.
	tampered := bytes.Replace(env, []byte(`"payload": "`), []byte(`"payload": "A`), 1)
	if _, err := VerifyExport(tampered, vkey, priv.Public().(ed25519.PublicKey)); err == nil {
		t.Fatal("a tampered envelope verified")
	}
}

// TestTornCheckpoint: a process killed while appending a checkpoint leaves
// a ledger sealed by the one before.
func TestTornCheckpoint(t *testing.T) {
	dir, vkey := sample(t)
	edit(t, filepath.Join(dir, CheckpointsName), func(b []byte) []byte { return b[:len(b)-40] })
	r, _, err := Verify(dir, vkey)
	if err != nil || r.Sealed != 3 || r.Unsealed != 3 || r.Checkpoints != 1 {
		t.Fatalf("report %+v, %v", r, err)
	}
}

// TestOldLayout checks ledgers written before the packs: payloads as
// payloads/<digest> files and checkpoints as checkpoints/<size> files
// verify, and a changed or missing payload file is found.
func TestOldLayout(t *testing.T) {
	unpack := func(t *testing.T, dir string) []string {
		b, err := os.ReadFile(filepath.Join(dir, PackName))
		if err != nil {
			t.Fatal(err)
		}
		recs, perr := parsePack(b)
		if perr != nil || len(recs) != 2 {
			t.Fatalf("pack: %d records, %v", len(recs), perr)
		}
		os.Mkdir(filepath.Join(dir, "payloads"), 0o700)
		var names []string
		for _, r := range recs {
			os.WriteFile(filepath.Join(dir, "payloads", r.key), r.data, 0o600)
			names = append(names, r.key)
		}
		os.Remove(filepath.Join(dir, PackName))
		b, _ = os.ReadFile(filepath.Join(dir, CheckpointsName))
		recs, _ = parsePack(b)
		os.Mkdir(filepath.Join(dir, "checkpoints"), 0o700)
		for _, r := range recs {
			n, _ := strconv.Atoi(r.key)
			os.WriteFile(filepath.Join(dir, "checkpoints", fmt.Sprintf("%020d", n)), r.data, 0o600)
		}
		os.Remove(filepath.Join(dir, CheckpointsName))
		return names
	}
	dir, vkey := sample(t)
	unpack(t, dir)
	r, _, err := Verify(dir, vkey)
	if err != nil || r.Payloads != 2 || r.Checkpoints != 2 || r.Sealed != 6 {
		t.Fatalf("report %+v, %v", r, err)
	}
	for _, tt := range []struct {
		name   string
		mutate func(p string)
		want   string
	}{
		{"flip", func(p string) { edit(t, p, func(b []byte) []byte { b[0] ^= 1; return b }) }, "entry 1: payload request: content does not match its digest"},
		{"delete", func(p string) { os.Remove(p) }, "entry 1: payload request: missing"},
	} {
		dir, vkey := sample(t)
		names := unpack(t, dir)
		tt.mutate(filepath.Join(dir, "payloads", names[0]))
		if _, _, err := Verify(dir, vkey); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

func FuzzParsePack(f *testing.F) {
	f.Add(appendRecord(appendRecord(nil, "k1", []byte("a\nb")), "k2", nil))
	f.Add([]byte("k 3\nabc"))
	f.Add([]byte("k 01\na\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, perr := parsePack(b)
		var again []byte
		for _, r := range recs {
			again = appendRecord(again, r.key, r.data)
		}
		// The records read are a prefix of the input, re-encoded exactly.
		if !bytes.HasPrefix(b, again) {
			t.Fatalf("records do not re-encode to a prefix of the input")
		}
		if perr == nil && len(again) != len(b) {
			t.Fatalf("no error, but %d of %d bytes read", len(again), len(b))
		}
		if perr != nil && perr.Offset != int64(len(again)) {
			t.Fatalf("error at %d, records end at %d", perr.Offset, len(again))
		}
	})
}

// TestCheckpointOnce: sealing a tree twice writes its checkpoint once.
func TestCheckpointOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "l")
	s, vkey := newKey(t, "truss/test")
	w, _ := Create(dir, "S", s)
	w.Append("a", nil, nil)
	a, _ := w.Flush()
	b, _ := w.Flush()
	w.Checkpoint()
	if err := w.Close(); err != nil || !bytes.Equal(a, b) {
		t.Fatalf("close: %v; flushes %q, %q", err, a, b)
	}
	log, _ := os.ReadFile(filepath.Join(dir, CheckpointsName))
	recs, perr := parsePack(log)
	if perr != nil || len(recs) != 1 || recs[0].key != "1" {
		t.Fatalf("records %v, %v", recs, perr)
	}
	if r, _, err := Verify(dir, vkey); err != nil || r.Checkpoints != 1 {
		t.Fatalf("report %+v, %v", r, err)
	}
}

// TestSealTogether: checkpoints that no caller waits for, asked for within
// the seal interval, are sealed by one checkpoint of the last tree; one a
// caller waits for is sealed at once, and exactly.
func TestSealTogether(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "l")
	s, vkey := newKey(t, "truss/test")
	w, err := create(dir, "S", s, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"a", "b"} {
		w.Append(typ, nil, nil)
		if _, err := w.Flush(); err != nil { // awaited: not held for the hour
			t.Fatal(err)
		}
	}
	for _, typ := range []string{"c", "d", "e"} {
		w.Append(typ, nil, nil)
		w.Checkpoint() // held until Close
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, CheckpointsName))
	recs, perr := parsePack(log)
	var keys []string
	for _, r := range recs {
		keys = append(keys, r.key)
	}
	if perr != nil || strings.Join(keys, " ") != "1 2 5" {
		t.Fatalf("checkpoint records %v, %v; want sizes 1 2 5", keys, perr)
	}
	if r, _, err := Verify(dir, vkey); err != nil || r.Checkpoints != 3 || r.Sealed != 5 {
		t.Fatalf("report %+v, %v", r, err)
	}
}

// TestLargePayload: a payload larger than a batch's buffer is written as
// it is, between the buffered ones, and reads back whole.
func TestLargePayload(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "l")
	s, vkey := newKey(t, "truss/test")
	w, _ := Create(dir, "S", s)
	big := bytes.Repeat([]byte("0123456789abcdef"), (3<<20)/16)
	var ps = map[string]string{}
	for i, b := range [][]byte{[]byte("small before"), big, []byte("small after")} {
		d, _ := w.Put(b)
		ps[strconv.Itoa(i)] = d
	}
	w.Append("tool.result", nil, ps)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r, _, err := Verify(dir, vkey); err != nil || r.Payloads != 3 {
		t.Fatalf("report %+v, %v", r, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, PackName))
	recs, perr := parsePack(b)
	if perr != nil || len(recs) != 3 || !bytes.Equal(recs[1].data, big) || string(recs[2].data) != "small after" {
		t.Fatalf("%d records, %v", len(recs), perr)
	}
}
