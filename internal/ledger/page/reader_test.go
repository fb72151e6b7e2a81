//go:build heavy

package page_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trussdev/truss/internal/ledger/page"
)

// readers is the part of page.js that holds its two JSON readers,
// parseStrict and parseFast, with what they use.
func readers(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("page.js")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "  const MAX_DEPTH"), strings.Index(s, "  // ---- what every entry must be")
	if i < 0 || j < i || !strings.Contains(s[i:j], "function parseStrict") || !strings.Contains(s[i:j], "function parseFast") {
		t.Fatal("page.js: the readers are not where the test looks for them")
	}
	return s[i:j]
}

// TestReadersAgreeInChromium: the page's fast JSON reader, on every
// entry of a session and on thousands of mutations of them and of lines
// made to differ only in what JSON.parse does not check (a member twice,
// escaped names, nesting, numbers written as non-integers), never
// accepts a line the strict reader refuses, and reads every line it
// accepts as the strict reader does: the same value and the same
// members' source text.
func TestReadersAgreeInChromium(t *testing.T) {
	ctx := browser(t)
	dir, vkey := sample(t, 3, true)
	doc := build(t, dir, vkey, page.Options{})
	seeds := lines(doc.Runs[0])
	seeds = append(seeds, lines(doc.Runs[0].Agents[0].Ledger)...)
	seeds = append(seeds,
		`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `{"\u0061":1,"a":2}`, `{"\\u0061":1,"a":2}`, `[{"a":1},{"a":1}]`,
		`{"v":1.0,"seq":1e0}`, ` {"v" : 1 , "seq":-0 } `, `{"x":"\ud800"}`, `{"k":"a\" :b","k2":[]}`,
		`{"__proto__":{"a":1},"b":[]}`, `{}`, `[]`, `"s"`, `{"a":[[[]]],"b":{}}`,
		`{"d":`+nest(9998)+`}`, `{"d":`+nest(9999)+`}`)
	const alphabet = "{}[]\",:\\ 0123456789-.eE+truefalsnul\tabu\n\x01"
	r := rand.New(rand.NewPCG(1, 2))
	inputs := append([]string{}, seeds...)
	for len(inputs) < 6000 {
		s := seeds[r.IntN(len(seeds))]
		for k := r.IntN(4); k >= 0 && len(s) < 1<<16; k-- {
			i := r.IntN(len(s) + 1)
			c := string(alphabet[r.IntN(len(alphabet))])
			switch r.IntN(4) {
			case 0:
				s = s[:i] + c + s[i:]
			case 1:
				if i < len(s) {
					s = s[:i] + s[i+1:]
				}
			case 2: // a piece of the line written again, as a member twice
				j := r.IntN(len(s) + 1)
				s = s[:i] + s[min(i, j):max(i, j)] + s[i:]
			default:
				if i < len(s) {
					s = s[:i] + c + s[i+1:]
				}
			}
		}
		inputs = append(inputs, s)
	}
	in, err := json.Marshal(inputs)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		Fast, Refused int
		Bad           []string
	}
	js := `(() => {
` + readers(t) + `
  const inputs = ` + string(in) + `;
  const out = {fast: 0, refused: 0, bad: []};
  for (const s of inputs) {
    let ref = null, err = null;
    try { ref = parseStrict(s); } catch (e) { err = e.message; out.refused++; }
    const f = parseFast(s);
    if (!f) continue;
    out.fast++;
    if (err !== null) out.bad.push("the fast reader accepts what the strict one refuses (" + err + "): " + JSON.stringify(s).slice(0, 300));
    else if (JSON.stringify(f.v) !== JSON.stringify(ref.v) || JSON.stringify(f.raw) !== JSON.stringify(ref.raw)) out.bad.push("the readers read differently: " + JSON.stringify(s).slice(0, 300));
  }
  return out;
})()`
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Run(tab, chromedp.Evaluate[result](js))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range res.Bad {
		t.Error(b)
	}
	// Both kinds of line were read: the test means something only if
	// many lines pass the fast reader and many are refused.
	if res.Fast < len(seeds)-4 || res.Refused < 1000 {
		t.Errorf("%d of %d lines read by the fast reader, %d refused by the strict one", res.Fast, len(inputs), res.Refused)
	}
	t.Logf("%d lines: %d read by the fast reader, %d refused by the strict one", len(inputs), res.Fast, res.Refused)
}
