//go:build linux

package changes

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestIndex runs random sets, deletions and edits on an index, with
// overlays of several budgets, against a map: after every step each
// directory reads back as the map has it, from the overlay or from the
// segment, merged or not.
func TestIndex(t *testing.T) {
	for _, budget := range []int{1, 7, 100, 1 << 20} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			st, err := newStore(t.TempDir(), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			x, err := newIndex(st, budget, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer x.close()
			rng := rand.New(rand.NewPCG(1, uint64(budget)))
			model := map[string][]entry{}
			dirs := []string{"", "a", "a/b", "a/b/c", "a.b", "a-b", "b", "z", "ü", "a/b c", "long/" + string(make([]byte, 300))}
			randEnts := func() []entry {
				ents := make([]entry, rng.IntN(6))
				for i := range ents {
					e := &ents[i]
					e.name = fmt.Sprintf("n%02d", i*3+rng.IntN(3))
					e.mode, e.size, e.mtime, e.ctime = uint32(rng.Uint64()), rng.Int64(), rng.Int64(), -rng.Int64()
					e.ino, e.dev = rng.Uint64(), rng.Uint64()
					e.src = uint8(rng.IntN(3))
					if e.src != srcNone {
						e.sum[0], e.sum[31] = byte(i), 0xff
					}
					e.kept, e.linked, e.racy = rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0
					if e.kept {
						e.at = span{off: rng.Int64N(1 << 40), n: rng.Int64N(1 << 30)}
					}
					if rng.IntN(3) == 0 {
						e.link = "../target " + e.name
					}
				}
				return ents
			}
			for step := range 2000 {
				d := dirs[rng.IntN(len(dirs))]
				switch op := rng.IntN(10); {
				case op < 5:
					ents := randEnts()
					x.set(d, ents, op == 0)
					model[d] = slices.Clone(ents)
				case op < 7:
					x.del(d)
					delete(model, d)
				case op < 9:
					ents, ok := x.edit(d)
					if _, want := model[d]; ok != want {
						t.Fatalf("step %d: edit(%q): known %v, want %v", step, d, ok, want)
					}
					if ok && len(ents) > 0 {
						ents[0].size = int64(step)
						model[d][0].size = int64(step)
						if ents[0].link != "" {
							// A link retargeted in place, as a scan
							// does: its bytes are accounted by grow.
							l := strings.Repeat("t", rng.IntN(4096))
							x.grow(d, len(l)-len(ents[0].link))
							ents[0].link, model[d][0].link = l, l
						}
					}
				default:
					if err := x.maybeMerge(); err != nil {
						t.Fatal(err)
					}
				}
				if want := overlayBytes(x); x.overBytes != want {
					t.Fatalf("step %d: the overlay accounts %d bytes, holds %d", step, x.overBytes, want)
				}
				for _, d := range dirs {
					got, ok, err := x.get(d)
					if err != nil {
						t.Fatalf("step %d: get(%q): %v", step, d, err)
					}
					want, wok := model[d]
					if ok != wok || ok != x.has(d) || (ok && !reflect.DeepEqual(norm(got), norm(want))) {
						t.Fatalf("step %d: %q: got %v %+v, want %v %+v", step, d, ok, got, wok, want)
					}
				}
			}
		})
	}
}

// overlayBytes is what x's overlay holds, counted afresh.
func overlayBytes(x *index) int {
	n := 0
	for d, o := range x.over {
		n += len(d) + entsBytes(o.ents)
	}
	return n
}

// TestIndexByteBudget: the overlay is merged when the bytes of its
// entries (names and link targets) pass its byte budget, whatever their
// number: a few hundred links with 4 KiB targets are not held in memory
// because they are few.
func TestIndexByteBudget(t *testing.T) {
	st, err := newStore(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	const byteBudget = 1 << 20
	x, err := newIndex(st, DefaultIndexMemory, byteBudget)
	if err != nil {
		t.Fatal(err)
	}
	defer x.close()
	target := strings.Repeat("x", 4000)
	for d := range 1000 {
		dir := fmt.Sprintf("d%04d", d)
		x.set(dir, []entry{{name: "l", mode: 0o120777}}, false)
		// The target is set in place, as a scan sets a link's.
		ents, _ := x.edit(dir)
		x.grow(dir, len(target))
		ents[0].link = target
		if err := x.maybeMerge(); err != nil {
			t.Fatal(err)
		}
		if x.overBytes > byteBudget+len(target)+entryBytes+len(dir) {
			t.Fatalf("after %d directories the overlay holds %d bytes, past its budget of %d", d+1, x.overBytes, byteBudget)
		}
	}
	if x.merges == 0 {
		t.Fatal("the overlay was never merged")
	}
	got, ok, err := x.get("d0000")
	if err != nil || !ok || len(got) != 1 || got[0].link != target {
		t.Fatalf("d0000 after the merges: %v %v %+v", ok, err, got)
	}
}

func norm(ents []entry) []entry {
	if len(ents) == 0 {
		return nil
	}
	return ents
}

// FuzzDecodeEntries: a segment's body never panics the decoder, and what
// decodes encodes to what decodes the same.
func FuzzDecodeEntries(f *testing.F) {
	f.Add(appendEntries(nil, nil))
	f.Add(appendEntries(nil, []entry{{name: "a", mode: 0o100644, size: 3, src: srcSHA, kept: true, at: span{off: 9, n: 3}},
		{name: "l", mode: 0o120777, link: "../x"}, {name: "d", mode: 0o40755, linked: true, racy: true}}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		ents, err := decodeEntries(b)
		if err != nil {
			return
		}
		again, err := decodeEntries(appendEntries(nil, ents))
		if err != nil {
			t.Fatalf("re-encoded entries do not decode: %v", err)
		}
		for i := range ents {
			if !ents[i].kept {
				ents[i].at = span{}
			}
			if ents[i].src == srcNone {
				ents[i].sum = [32]byte{}
			}
		}
		if !reflect.DeepEqual(norm(again), norm(ents)) {
			t.Fatalf("round trip:\n%+v\n%+v", ents, again)
		}
	})
}
