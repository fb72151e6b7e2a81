package ledger

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/trussdev/truss/internal/tool"
)

// referenceJSON is the final list as the recorder wrote it when it held
// every path in a map: a JSON object, keys sorted, "" for deleted.
func referenceJSON(m map[string]string) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(p)
		b.Write(k)
		b.WriteByte(':')
		v, _ := json.Marshal(m[p])
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// TestFinalFilesSpill: whatever the budget of paths in memory, the final
// list — paths set, set again, deleted and taken off in any order, spilled
// in runs and the runs merged — is the list a map of every path gives.
func TestFinalFilesSpill(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ops, max  int
		paths     int
		wantSpill bool
		long      int // bytes added to every path
		maxBytes  int
	}{
		{"in memory", 3000, 100_000, 500, false, 0, 0},
		{"a few runs", 3000, 500, 2000, true, 0, 0},
		{"runs merged", 20_000, 64, 5000, true, 0, 0},
		{"removals hiding older runs", 20_000, 16, 40, true, 0, 0},
		// Few paths, but long: spilled by their bytes.
		{"long paths in memory", 3000, 100_000, 100, false, 4000, 800 * 4100},
		{"long paths spilled by bytes", 3000, 100_000, 600, true, 4000, 64 * 4100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.ops)))
			f := newFinalFiles(t.TempDir())
			f.max, f.maxBytes = tc.max, tc.maxBytes
			defer f.close()
			long := strings.Repeat("l", tc.long)
			model := map[string]string{}
			for range tc.ops {
				p := fmt.Sprintf("d%d/%sf%d", rng.IntN(7), long, rng.IntN(tc.paths))
				if rng.IntN(9) == 0 {
					p += "/\"<é>\n"
				}
				switch rng.IntN(4) {
				case 0:
					f.set(p, "")
					model[p] = ""
				case 1:
					f.remove(p)
					delete(model, p)
				default:
					d := tool.Digest([]byte(fmt.Sprint(rng.Int())))
					f.set(p, d)
					model[p] = d
				}
			}
			if (len(f.runs) > 0) != tc.wantSpill {
				t.Fatalf("%d runs; spilled: %v, want %v", len(f.runs), len(f.runs) > 0, tc.wantSpill)
			}
			if tc.maxBytes > 0 && f.memBytes >= tc.maxBytes {
				t.Fatalf("%d bytes in memory, past %d", f.memBytes, tc.maxBytes)
			}
			if len(f.runs) >= maxRuns {
				t.Fatalf("%d runs, past %d", len(f.runs), maxRuns)
			}
			want := referenceJSON(model)
			file, size, digest, count, err := f.spooled()
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(io.NewSectionReader(file, 0, size))
			file.Close()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || count != len(model) || digest != tool.Digest(want) {
				t.Fatalf("spooled list (%d files, %s):\n%.300s\nwant (%d files):\n%.300s", count, digest, got, len(model), want)
			}
			inline, small, err := f.json()
			switch {
			case err != nil:
				t.Fatal(err)
			case small != (!tc.wantSpill && len(model) <= InlineFiles):
				t.Fatalf("json: small %v with %d files and %d runs", small, len(model), len(f.runs))
			case small && !bytes.Equal(inline, want):
				t.Fatalf("json:\n%s\nwant\n%s", inline, want)
			}
		})
	}
}

// TestPutFrom: a payload stored from a reader is the record Put writes of
// the same bytes; one stored already is not read again; a source that
// fails, ends short or is not the bytes of its digest leaves no record
// and fails the writer, and the payloads after it are stored, that same
// payload too; a payload queued twice is written once.
func TestPutFrom(t *testing.T) {
	payload := bytes.Repeat([]byte("manifest line\n"), 10_000) // past maxBuffered's share of a batch
	d := tool.Digest(payload)
	open := func(b []byte) func() (io.ReadCloser, error) {
		return func() (io.ReadCloser, error) { return io.NopCloser(iotest.HalfReader(bytes.NewReader(b))), nil }
	}
	pack := func(t *testing.T, put func(w *Writer)) ([]byte, error) {
		t.Helper()
		s, _ := newKey(t, "truss/test")
		dir := filepath.Join(t.TempDir(), "l")
		w, err := Create(dir, "S", s)
		if err != nil {
			t.Fatal(err)
		}
		w.Put([]byte("before"))
		put(w)
		w.Put([]byte("after"))
		if _, err := w.Append("x", nil, nil); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		werr := w.Err()
		w.Close()
		b, err := os.ReadFile(filepath.Join(dir, PackName))
		if err != nil {
			t.Fatal(err)
		}
		return b, werr
	}
	want, err := pack(t, func(w *Writer) { w.Put(payload) })
	if err != nil {
		t.Fatal(err)
	}
	wantNone, _ := pack(t, func(*Writer) {})
	opened := 0
	for _, tc := range []struct {
		name    string
		put     func(w *Writer)
		want    []byte
		wantErr string
	}{
		{"from a reader", func(w *Writer) { w.PutFrom(d, int64(len(payload)), open(payload)) }, want, ""},
		{"stored before", func(w *Writer) {
			w.Put(payload)
			w.PutFrom(d, int64(len(payload)), func() (io.ReadCloser, error) { opened++; return nil, errors.New("opened") })
		}, want, ""},
		{"cannot be opened", func(w *Writer) {
			w.PutFrom(d, int64(len(payload)), func() (io.ReadCloser, error) { return nil, errors.New("no such manifest") })
		}, wantNone, "no such manifest"},
		{"ends short", func(w *Writer) { w.PutFrom(d, int64(len(payload)), open(payload[:1000])) }, wantNone, "ended after 1000"},
		{"other bytes", func(w *Writer) {
			other := bytes.ToUpper(payload)
			w.PutFrom(d, int64(len(other)), open(other))
		}, wantNone, "do not hash"},
		{"a failing reader", func(w *Writer) {
			w.PutFrom(d, int64(len(payload)), func() (io.ReadCloser, error) {
				return io.NopCloser(io.MultiReader(bytes.NewReader(payload[:70_000]), iotest.ErrReader(errors.New("disk gone")))), nil
			})
		}, wantNone, "disk gone"},
		{"failed, then from a good reader", func(w *Writer) {
			w.PutFrom(d, int64(len(payload)), open(payload[:1000]))
			w.PutFrom(d, int64(len(payload)), open(payload))
		}, want, "ended after 1000"},
		{"failed, then put", func(w *Writer) {
			w.PutFrom(d, int64(len(payload)), func() (io.ReadCloser, error) { return nil, errors.New("no such manifest") })
			w.Put(payload)
		}, want, "no such manifest"},
		{"twice from a reader, stored once", func(w *Writer) {
			w.PutFrom(d, int64(len(payload)), open(payload))
			w.PutFrom(d, int64(len(payload)), open(payload))
		}, want, ""},
		{"put, then from a reader", func(w *Writer) {
			w.PutFrom(d, int64(len(payload)), open(payload))
			w.Put(payload)
		}, want, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pack(t, tc.put)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("pack of %d bytes, want %d:\n%.200q", len(got), len(tc.want), got)
			}
		})
	}
	if opened != 0 {
		t.Errorf("a payload stored before was read again")
	}
}

// FuzzBulkManifest: any manifest, read a byte at a time or whole, gives
// the same final digests, and nothing it holds makes the reader fail.
func FuzzBulkManifest(f *testing.F) {
	f.Add([]byte("add file - " + strings.Repeat("ab", 32) + " 3 \"a b\"\ndelete file " + strings.Repeat("cd", 32) + " - 0 \"x\"\n"))
	f.Add([]byte("update link - - 0 \"l\" -> \"t\"\nadd fifo - - 0 \"p\"\n\n\nbad\n"))
	f.Add([]byte("add file - - 0 \"\\xff\\n\""))
	f.Fuzz(func(t *testing.T, m []byte) {
		final := func(r io.Reader, max int) string {
			rec := &Recorder{final: newFinalFiles(t.TempDir())}
			rec.final.max = max
			defer rec.final.close()
			if err := rec.bulk(r); err != nil {
				t.Fatal(err)
			}
			file, size, _, _, err := rec.final.spooled()
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()
			b, _ := io.ReadAll(io.NewSectionReader(file, 0, size))
			return string(b)
		}
		whole := final(bytes.NewReader(m), 0)
		if got := final(iotest.OneByteReader(bytes.NewReader(m)), 2); got != whole {
			t.Fatalf("read a byte at a time, spilled: %s; whole: %s", got, whole)
		}
		var obj map[string]string
		if err := json.Unmarshal([]byte(whole), &obj); err != nil {
			t.Fatalf("not a JSON object: %v", err)
		}
		for p, d := range obj {
			if _, err := hex.DecodeString(d); err != nil || (d != "" && len(d) != 64) {
				t.Fatalf("%q: %q is not a digest", p, d)
			}
		}
	})
}

// FuzzFinalRun: a spilled run of final digests that is not as written
// reads back as an error or as records, never a panic.
func FuzzFinalRun(f *testing.F) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	writeRun(w, memIter(map[string]finalDigest{"a": {sum: [32]byte{1}}, "b/c": {removed: true}}))
	f.Add(buf.Bytes())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "run")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		file, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer file.Close()
		next := runIter(file, span64{0, int64(len(b))})
		for range len(b) + 1 {
			if _, ok, err := next(); err != nil || !ok {
				return
			}
		}
		t.Fatal("more records than bytes")
	})
}
