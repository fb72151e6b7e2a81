//go:build heavy

package page_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/chromedp/chromedp"

	"github.com/trussdev/truss/internal/browsertest"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/ledger/page"
	"github.com/trussdev/truss/internal/session"
	"github.com/trussdev/truss/internal/toolcache"
	"github.com/trussdev/truss/internal/trusscli"
)

// browser starts a headless Chromium with a fresh profile and returns a
// context for it. Its bound on a hung browser covers the demo runs a
// test makes while the browser is open (five sandboxed demos, each with
// its go test, take ten minutes on a loaded machine).
func browser(t testing.TB) context.Context {
	return browsertest.Start(t, browsertest.Options{Width: 1200, Height: 1400, Timeout: 30 * time.Minute})
}

// shown is what a loaded page shows, every folded part opened.
type shown struct {
	Verdict string `json:"verdict"`
	Class   string `json:"class"`
	Title   string `json:"title"`
	Turns   int    `json:"turns"`
	Folded  int    `json:"folded"`
	Calls   int    `json:"calls"`
	Diffs   int    `json:"diffs"`
	Adds    int    `json:"adds"`
	Dels    int    `json:"dels"`
	Agents  int    `json:"agents"`
	Bars    int    `json:"bars"`
	Text    string `json:"text"`
	Scripts int    `json:"scripts"`
}

// openAll opens every folded part of the page, and every part that
// opening one draws, until none is left closed.
const openAll = `(async () => {
  for (let quiet = 0; quiet < 2;) {
    const closed = [...document.querySelectorAll('details:not([open])')];
    closed.forEach((d) => { d.open = true; });
    quiet = closed.length ? 0 : quiet + 1;
    await new Promise((r) => setTimeout(r, 20));
  }
})()`

// inspect says what the page shows: how many turns it drew folded, then,
// every folded part opened, everything.
const inspect = `(async () => {
  const folded = document.querySelectorAll('details.turnbody:not([open])').length;
  await ` + openAll + `;
  const v = document.getElementById('verdict');
  return {verdict: v.textContent, class: v.className, title: document.title,
    turns: document.querySelectorAll('section.turn').length, folded, calls: document.querySelectorAll('div.call').length,
    diffs: document.querySelectorAll('pre.diff').length, adds: document.querySelectorAll('pre.diff span.add').length,
    dels: document.querySelectorAll('pre.diff span.del').length, agents: document.querySelectorAll('details.agent').length,
    bars: [...document.querySelectorAll('#timeline rect.bar')].filter(r => r.getBBox().width > 0).length,
    text: document.getElementById('session').textContent, scripts: document.scripts.length};
})()`

// load opens the page file in a new tab, waits for its verdict, opens
// every folded part and returns what it shows, what it reported and a screenshot of the verdict
// and of the first diff that removes lines (nil when there is none).
func load(t *testing.T, ctx context.Context, path, query string) (shown, []string, []string, []byte, []byte) {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var log browsertest.Log
	log.Listen(t, tab)
	u := (&url.URL{Scheme: "file", Path: path, RawQuery: query}).String()
	if err := chromedp.Do(tab, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("#verdict.ok, #verdict.bad"))); err != nil {
		t.Fatal(err)
	}
	s, err := chromedp.Run(tab, chromedp.Evaluate[shown](inspect, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	verdictShot, err := chromedp.Run(tab, chromedp.Screenshot(chromedp.CSS("#verdict")))
	if err != nil {
		t.Fatal(err)
	}
	var diffShot []byte
	if s.Dels > 0 { // the first diff that removes a line as well as adding one
		if diffShot, err = chromedp.Run(tab, chromedp.Screenshot(chromedp.CSS("pre.diff:has(span.del)"))); err != nil {
			t.Fatal(err)
		}
	}
	_ = chromedp.Do(tab, chromedp.Sleep(100*time.Millisecond)) // late console messages
	problems, requests := log.Snapshot()
	var others []string
	for _, r := range requests {
		if r != u {
			others = append(others, r)
		}
	}
	return s, problems, others, verdictShot, diffShot
}

// pixels counts a screenshot's pixels that are clearly green (g above r
// and b) and clearly red.
func pixels(t *testing.T, shot []byte) (green, red int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			green, red = count(img, x, y, green, red)
		}
	}
	return green, red
}

func count(img image.Image, x, y, green, red int) (int, int) {
	r, g, b, _ := img.At(x, y).RGBA()
	r, g, b = r>>8, g>>8, b>>8
	switch {
	case int(g)-int(r) > 40 && int(g)-int(b) > 20:
		green++
	case int(r)-int(g) > 40 && int(r)-int(b) > 20:
		red++
	}
	return green, red
}

func writeFile(t testing.TB, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "session.html")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var entryRE = regexp.MustCompile(`entry (\d+)`)

// named is the entry a verdict or an error names first, or "none".
func named(s string) string {
	if m := entryRE.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return "none"
}

// checkVerified checks a page that must verify: its verdict, no problem,
// no request, and the screenshots' content.
func checkVerified(t *testing.T, ctx context.Context, path string, entries uint64, withDiff bool) shown {
	t.Helper()
	s, problems, requests, vshot, dshot := load(t, ctx, path, "")
	for _, p := range problems {
		t.Errorf("the page reported: %s", p)
	}
	for _, r := range requests {
		t.Errorf("the page requested %s", r)
	}
	want := fmt.Sprintf("verified: %d entries, signed by ", entries)
	if s.Class != "ok" || !strings.HasPrefix(s.Verdict, want) {
		t.Fatalf("verdict %q (%s), want %q", s.Verdict, s.Class, want)
	}
	if !strings.HasPrefix(s.Title, "Truss session ") || s.Turns == 0 || s.Calls == 0 || s.Bars == 0 {
		t.Errorf("page shows %+v", s)
	}
	if g, _ := pixels(t, vshot); g < 500 {
		t.Errorf("the verdict's screenshot has %d green pixels", g)
	}
	if withDiff {
		if s.Diffs == 0 || s.Adds == 0 || s.Dels == 0 {
			t.Fatalf("no coloured diff: %+v", s)
		}
		if g, r := pixels(t, dshot); g < 200 || r < 200 {
			t.Errorf("the diff's screenshot has %d green and %d red pixels", g, r)
		}
	}
	return s
}

// checkFails checks a page that must not verify: its verdict names the
// part that fails, and its screenshot is red.
func checkFails(t *testing.T, ctx context.Context, path, want string) shown {
	t.Helper()
	s, problems, requests, vshot, _ := load(t, ctx, path, "")
	for _, p := range problems {
		t.Errorf("the page reported: %s", p)
	}
	for _, r := range requests {
		t.Errorf("the page requested %s", r)
	}
	if s.Class != "bad" || !strings.HasPrefix(s.Verdict, "NOT VERIFIED") || !strings.Contains(s.Verdict, want) {
		t.Errorf("verdict %q (%s), want NOT VERIFIED naming %q", s.Verdict, s.Class, want)
	}
	if s.Text != "" {
		t.Errorf("a page that does not verify shows the session: %.200q", s.Text)
	}
	if _, r := pixels(t, vshot); r < 300 {
		t.Errorf("the failing verdict's screenshot has %d red pixels", r)
	}
	return s
}

// TestSyntheticInChromium: a session with a sub-agent verifies in the
// browser and shows its parts; every mutation of TestMutations fails in
// the browser too, naming the same entry as the Go verifier; a key the
// reader trusts is checked.
func TestSyntheticInChromium(t *testing.T) {
	ctx := browser(t)
	dir, vkey := sample(t, 3, true)
	doc := build(t, dir, vkey, page.Options{})
	html := write(t, doc)
	path := writeFile(t, html)
	s := checkVerified(t, ctx, path, 27, true)
	if s.Agents != 1 || !strings.Contains(s.Text, "CHILD writes notes.txt") || !strings.Contains(s.Text, "Thinking about turn 2") {
		t.Errorf("the sub-agent or the reasoning is not shown: %+v", s)
	}
	// A turn's input is every input token, the cache's parts included.
	if !strings.Contains(s.Text, "in 3,301 · out 50 · cache read 2,000 · cache write 300") {
		t.Errorf("turn 1's tokens are not all counted: %.2000q", s.Text)
	}
	// Markup in model text is text.
	if !strings.Contains(s.Text, "<script>alert(1)</script>") || s.Scripts != 2 {
		t.Errorf("model text with markup: %d scripts, text %.300q", s.Scripts, s.Text)
	}

	t.Run("trusted key", func(t *testing.T) {
		s, _, _, _, _ := load(t, ctx, path, "key="+url.QueryEscape(vkey))
		if s.Class != "ok" || !strings.Contains(s.Verdict, "against the key you gave") {
			t.Errorf("with the right key: %q", s.Verdict)
		}
		_, other := newKey(t, "truss/test")
		s, _, _, _, _ = load(t, ctx, path, "key="+url.QueryEscape(other))
		if s.Class != "bad" || !strings.Contains(s.Verdict, "checkpoint") {
			t.Errorf("with another key: %q", s.Verdict)
		}
	})

	for _, m := range mutations {
		t.Run(m.name, func(t *testing.T) {
			b := mutated(t, dir, vkey, m)
			_, goErr := page.Verify(b, vkey)
			if goErr == nil {
				t.Fatal("the Go verifier accepts the mutation")
			}
			s := checkFails(t, ctx, writeFile(t, b), "")
			if g, js := named(goErr.Error()), named(s.Verdict); g != js {
				t.Errorf("the page names entry %s, truss ledger verify entry %s:\npage: %s\ngo:   %v", js, g, s.Verdict, goErr)
			}
		})
	}

	t.Run("redacted and left out", func(t *testing.T) {
		doc := build(t, dir, vkey, page.Options{MaxPayload: 300, Redact: []*regexp.Regexp{regexp.MustCompile(`sk-secret-[0-9]+`)}})
		s, problems, _, _, _ := load(t, ctx, writeFile(t, write(t, doc)), "")
		if len(problems) > 0 || s.Class != "ok" || !strings.Contains(s.Verdict, "redacted, so not verified") || !strings.Contains(s.Verdict, "left out for their size") {
			t.Errorf("verdict %q, problems %v", s.Verdict, problems)
		}
		if !strings.Contains(s.Text, "redacted, unverified") || strings.Contains(s.Text, "sk-secret") {
			t.Errorf("the redacted output is not shown as such: %.400q", s.Text)
		}
	})
}

// demo runs truss demo on a dialect (and a script) in this process, in a
// Truss home of its own, and returns the session's page.
func demo(t *testing.T, args ...string) []byte {
	t.Helper()
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	// The demos' sandboxed go test share one build cache, kept for the
	// test binary (testenv.Run removes its temporary directory).
	t.Setenv(toolcache.SharedEnv, filepath.Join(os.TempDir(), "sandbox-cache"))
	t.Setenv("GOTOOLCHAIN", "local")
	var out bytes.Buffer
	if code := trusscli.Main(append([]string{"demo"}, args...), &out, &out); code != 0 {
		t.Fatalf("truss demo %v: exit %d\n%s", args, code, out.String())
	}
	sd, err := session.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(sd)
	var ids []os.DirEntry
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") { // the change tracker's store
			ids = append(ids, e)
		}
	}
	if err != nil || len(ids) != 1 {
		t.Fatalf("sessions: %v %v", ents, err)
	}
	file := filepath.Join(t.TempDir(), "demo.html")
	out.Reset()
	if code := trusscli.Main([]string{"ledger", "export", ids[0].Name(), "--html", file}, &out, &out); code != 0 {
		t.Fatalf("truss ledger export: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := trusscli.Main([]string{"ledger", "verify", file}, &out, &out); code != 0 || !strings.Contains(out.String(), "verified") {
		t.Fatalf("truss ledger verify %s: exit %d\n%s", file, code, out.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const spawnScript = `{"steps":[
  {"say":"Two sub-tasks.","actions":[{"kind":"spawn","content":"CHILD-A: write notes.txt"}]},
  {"say":"Now the fix.","actions":[{"kind":"replace","path":"stats.go","old":"\treturn (s[n/2] + s[n/2+1]) / 2\n","new":"\treturn (s[n/2-1] + s[n/2]) / 2\n"}]},
  {"say":"The child wrote its notes; the median is fixed."}],
 "agents":{
  "CHILD-A":{"steps":[
    {"actions":[{"kind":"run","command":"ls"}]},
    {"actions":[{"kind":"create","path":"notes.txt","content":"reviewed\n"}]},
    {"say":"Wrote notes.txt."}]}}}`

// TestDemoInChromium: the demo's page on every dialect, and a session
// with a sub-agent, verifies in the browser; one changed byte in an
// entry, a payload, a checkpoint's signature and the shown diff makes
// each page say which part fails, as truss ledger verify does.
func TestDemoInChromium(t *testing.T) {
	ctx := browser(t)
	script := filepath.Join(t.TempDir(), "spawn.json")
	if err := os.WriteFile(script, []byte(spawnScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		diff bool
	}{
		{"anthropic", []string{"--sim-dialect", "anthropic"}, true},
		{"responses", []string{"--sim-dialect", "responses"}, true},
		{"chat", []string{"--sim-dialect", "chat"}, true},
		{"ollama", []string{"--sim-dialect", "ollama"}, true},
		{"gemini", []string{"--sim-dialect", "gemini"}, true},
		{"sub-agent", []string{"--script", script}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			html := demo(t, c.args...)
			res, err := page.Verify(html, "")
			if err != nil {
				t.Fatal(err)
			}
			var n uint64
			for _, r := range res.Runs {
				n += r.Entries()
			}
			s := checkVerified(t, ctx, writeFile(t, html), n, c.diff)
			if c.name == "sub-agent" && (s.Agents == 0 || !strings.Contains(s.Text, "Wrote notes.txt.")) {
				t.Errorf("the sub-agent is not shown: %+v", s)
			}
			if !strings.Contains(s.Text, "Verification boundary: passed") {
				t.Errorf("no verification boundary: %.500q", s.Text)
			}
			doc, err := page.Parse(html)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range byteChanges(t, doc, c.diff) {
				t.Run(m.name, func(t *testing.T) {
					b := bytes.Clone(html)
					i := m.at(b)
					if b[i] == 'a' {
						b[i] = 'b'
					} else {
						b[i] = 'a'
					}
					_, goErr := page.Verify(b, "")
					if goErr == nil || !strings.Contains(goErr.Error(), m.want) {
						t.Fatalf("truss ledger verify: %v, want %q", goErr, m.want)
					}
					f := checkFails(t, ctx, writeFile(t, b), m.want)
					if g, js := named(goErr.Error()), named(f.Verdict); g != js {
						t.Errorf("the page names entry %s, truss ledger verify entry %s", js, g)
					}
					if m.part != nil && (!m.part.MatchString(goErr.Error()) || !m.part.MatchString(f.Verdict)) {
						t.Errorf("truss ledger verify says %q, the page %q: want both to name %s", goErr, f.Verdict, m.part)
					}
				})
			}
		})
	}
}

// change is one byte changed in a page's source.
type change struct {
	name string
	at   func(html []byte) int // the byte to change
	want string
	// part, when set, is what the verdict must name instead of want:
	// where a change in a deflated stream shows depends on the byte.
	part *regexp.Regexp
}

// byteChanges finds in a demo's page an entry, a payload, a checkpoint's
// signature and (with diff) the content the first diff is drawn from, as
// the page's source holds them, and changes one byte of each.
func byteChanges(t *testing.T, doc *page.Doc, diff bool) []change {
	t.Helper()
	run := doc.Runs[0]
	find := func(html []byte, anchor, then string) int {
		i := bytes.Index(html, []byte(anchor))
		if i < 0 {
			t.Fatalf("no %.80q in the page", anchor)
		}
		j := bytes.Index(html[i:], []byte(then))
		if j < 0 {
			t.Fatalf("no %q after %.80q in the page", then, anchor)
		}
		return i + j
	}
	payloadAt := func(d string) string { return `"` + d + `":{"text":"` }
	var out []change
	// An entry: a digit of the entries' deflated stream, well inside it.
	// What that changes depends on the byte (the stream may no longer
	// inflate, or inflate to other bytes of any entry after it): the
	// page must say what truss ledger verify says.
	out = append(out, change{"entry", func(h []byte) int {
		z := `"entries":{"deflate":"`
		return find(h, z, z) + len(z) + 40
	}, "", regexp.MustCompile(`\b(the entries: its deflated bytes|entry \d+: )`)})
	entries := lines(run)
	// A payload: the task's text.
	d := regexp.MustCompile(`"text":"([0-9a-f]{64})"`).FindStringSubmatch(entries[1])[1]
	out = append(out, change{"payload", func(h []byte) int { return find(h, payloadAt(d), "tests") + 2 }, "entry 1: payload text: content does not match", nil})
	// A checkpoint's signature: a base64 digit of a checkpoint.
	var cp string
	for _, c := range run.Checkpoints {
		cp = c
		break
	}
	// (The page writes the signature line's em dash as its escape.)
	out = append(out, change{"checkpoint signature", func(h []byte) int { return find(h, jsonText(cp), `\u2014 `) + 23 }, "checkpoint ", nil})
	if diff {
		// The diff: the new line of the fix, in the after content.
		for i, e := range entries {
			m := regexp.MustCompile(`"after":"([0-9a-f]{64})"`).FindStringSubmatch(e)
			if m == nil || !strings.Contains(e, `"kind":"update"`) {
				continue
			}
			if p := run.Payloads[m[1]]; p.Text != nil {
				out = append(out, change{"shown diff", func(h []byte) int { return find(h, payloadAt(m[1]), "n/2-1") + 4 }, fmt.Sprintf("entry %d: payload content.", i), nil})
				break
			}
			out = append(out, change{"shown diff (packed)", func(h []byte) int {
				// Packed: a digit of the pack's base64, well inside it.
				// What that changes depends on the byte (the stream may
				// no longer inflate, or inflate to other bytes of any
				// payload after it): the page must say what truss ledger
				// verify says.
				z := `"pack":{"deflate":"`
				return find(h, z, z) + len(z) + 20
			}, "", regexp.MustCompile(`\b(the pack: its deflated bytes|entry \d+: payload )`)})
			break
		}
	}
	return out
}

// jsonText is s as the page's JSON writes it, without its quotes: each
// character outside ASCII as its \u escape.
func jsonText(s string) string {
	b, _ := json.Marshal(s)
	var out strings.Builder
	for _, r := range string(b[1 : len(b)-1]) {
		if r < utf8.RuneSelf {
			out.WriteRune(r)
			continue
		}
		units := []rune{r}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			units = []rune{r1, r2}
		}
		for _, u := range units {
			fmt.Fprintf(&out, `\u%04x`, u)
		}
	}
	return out.String()
}

// TestFoldedInChromium: a session longer than the first screen draws its
// first turns open and the others folded; a folded turn opened after
// load draws its calls and diff from the verified ledger; a changed byte
// that only a folded turn shows fails the whole page at load, as truss
// ledger verify does, before anything is drawn.
func TestFoldedInChromium(t *testing.T) {
	ctx := browser(t)
	dir, vkey := sample(t, 12, false)
	doc := build(t, dir, vkey, page.Options{})
	html := write(t, doc)
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var log browsertest.Log
	log.Listen(t, tab)
	u := (&url.URL{Scheme: "file", Path: writeFile(t, html)}).String()
	if err := chromedp.Do(tab, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("#verdict.ok"))); err != nil {
		t.Fatal(err)
	}
	type screen struct {
		Turns, Open, Diffs, Calls10 int
		Text10                      string
	}
	look := func() screen {
		t.Helper()
		s, err := chromedp.Run(tab, chromedp.Evaluate[screen](`({turns: document.querySelectorAll('section.turn').length,
			open: document.querySelectorAll('details.turnbody[open]').length, diffs: document.querySelectorAll('pre.diff').length,
			calls10: document.querySelectorAll('#turn-10 div.call').length, text10: document.getElementById('turn-10').textContent})`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// 12 turns and the last response's; the first five drawn open, each
	// with its edit's diff.
	s := look()
	if s.Turns != 13 || s.Open != 5 || s.Diffs != 5 || s.Calls10 != 0 {
		t.Errorf("first screen: %+v, want 13 turns, 5 open, 5 diffs, turn 10 not drawn", s)
	}
	if !strings.Contains(s.Text10, "Turn 10") || !strings.Contains(s.Text10, "2 calls: str_replace_based_edit_tool, bash") ||
		!strings.Contains(s.Text10, "Turn 10: I will edit main.go <script>alert(1)</script>.") || strings.Contains(s.Text10, "println") {
		t.Errorf("folded turn 10 shows %q", s.Text10)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS("#turn-10 > details > summary")), chromedp.WaitVisible(chromedp.CSS("#turn-10 pre.diff"))); err != nil {
		t.Fatal(err)
	}
	s = look()
	for _, want := range []string{"-\tprintln(9)\n", "+\tprintln(10)\n", "Reasoning summary", "go test ./...", "exit status 0", "The file main.go has been edited."} {
		if !strings.Contains(s.Text10, want) {
			t.Errorf("opened turn 10 does not show %q: %.1000q", want, s.Text10)
		}
	}
	if s.Calls10 != 2 || s.Open != 6 || s.Diffs != 6 {
		t.Errorf("after opening turn 10: %+v", s)
	}
	if n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.scripts.length`)); err != nil || n != 2 {
		t.Errorf("%d scripts after opening (%v)", n, err)
	}
	if problems, requests := log.Snapshot(); len(problems) > 0 || len(requests) > 1 {
		t.Errorf("problems %v, requests %v", problems, requests)
	}

	// The content turn 10's diff is drawn from, changed in the file.
	var d string
	for _, e := range lines(doc.Runs[0]) {
		if strings.Contains(e, `"type":"tool.result"`) && strings.Contains(e, `"call_id":"call_10_1"`) {
			d = regexp.MustCompile(`"after":"([0-9a-f]{64})"`).FindStringSubmatch(e)[1]
		}
	}
	if doc.Runs[0].Payloads[d] == nil {
		t.Fatal("turn 10's content is not in the page")
	}
	editPayload(t, doc.Runs[0], d, "println(10)", "println(17)")
	b := write(t, doc)
	_, goErr := page.Verify(b, vkey)
	if goErr == nil || !strings.Contains(goErr.Error(), ": payload content."+d[:16]+": content does not match") {
		t.Fatalf("truss ledger verify: %v", goErr)
	}
	f := checkFails(t, ctx, writeFile(t, b), "payload content."+d[:16]+": content does not match its digest")
	if g, js := named(goErr.Error()), named(f.Verdict); g != js {
		t.Errorf("the page names entry %s, truss ledger verify entry %s", js, g)
	}
	if f.Turns != 0 {
		t.Errorf("a page that does not verify draws %d turns", f.Turns)
	}
}

// BenchmarkRenderInChromium measures how long Chromium takes to open the
// page of a 200-turn session, verify it and draw it: from navigation to
// the verdict, in one tab per load.
func BenchmarkRenderInChromium(b *testing.B) {
	dir, vkey := sample(b, 200, true)
	doc, err := page.Build([]string{dir}, page.Options{VKey: vkey})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if err := page.Write(&buf, doc); err != nil {
		b.Fatal(err)
	}
	path := writeFile(b, buf.Bytes())
	ctx := browser(b)
	u := (&url.URL{Scheme: "file", Path: path}).String()
	// From the navigation's start (performance's time origin, which the
	// browser takes when the navigation begins, a few milliseconds after
	// Navigate is sent): when the browser had read the file
	// (responseEnd), and the page's marks (performance.mark) of when its
	// script began (the page parsed), when its check ended, when it had
	// drawn the first screen, and when the frame after that was painted.
	type marks struct{ Read, Script, Inflated, Parsed, Leaves, Tree, Checkpoints, Payloads, Own, Verified, Drawn, Painted float64 }
	var sum marks
	for b.Loop() {
		tab, cancel := chromedp.NewContext(ctx)
		if err := chromedp.Do(tab, chromedp.Navigate(u), chromedp.WaitVisible(chromedp.CSS("#verdict.ok"))); err != nil {
			b.Fatal(err)
		}
		if _, err := chromedp.Run(tab, chromedp.Poll[bool](`performance.getEntriesByName("truss-painted").length > 0`)); err != nil {
			b.Fatal(err)
		}
		m, err := chromedp.Run(tab, chromedp.Evaluate[marks](`(() => { const t = (n) => performance.getEntriesByName("truss-" + n)[0].startTime;
			return {read: performance.getEntriesByType("navigation")[0].responseEnd, script: t("start"), inflated: t("inflated"), parsed: t("parsed"), leaves: t("leaves"), tree: t("tree"), checkpoints: t("checkpoints"),
				payloads: t("payloads"), own: t("own"), verified: t("verified"), drawn: t("drawn"), painted: t("painted")}; })()`))
		if err != nil {
			b.Fatal(err)
		}
		sum.Read += m.Read
		sum.Script += m.Script
		sum.Inflated += m.Inflated
		sum.Parsed += m.Parsed
		sum.Leaves += m.Leaves
		sum.Tree += m.Tree
		sum.Checkpoints += m.Checkpoints
		sum.Payloads += m.Payloads
		sum.Own += m.Own
		sum.Verified += m.Verified
		sum.Drawn += m.Drawn
		sum.Painted += m.Painted
		cancel()
	}
	b.ReportMetric(float64(buf.Len()), "page-bytes")
	b.ReportMetric(sum.Read/float64(b.N), "ms-to-read")
	b.ReportMetric(sum.Script/float64(b.N), "ms-to-script")
	b.ReportMetric(sum.Inflated/float64(b.N), "ms-to-inflated")
	b.ReportMetric(sum.Parsed/float64(b.N), "ms-to-parsed")
	b.ReportMetric(sum.Leaves/float64(b.N), "ms-to-leaves")
	b.ReportMetric(sum.Tree/float64(b.N), "ms-to-tree")
	b.ReportMetric(sum.Checkpoints/float64(b.N), "ms-to-checkpoints")
	b.ReportMetric(sum.Payloads/float64(b.N), "ms-to-payloads")
	b.ReportMetric(sum.Own/float64(b.N), "ms-to-own")
	b.ReportMetric(sum.Verified/float64(b.N), "ms-to-verified")
	b.ReportMetric(sum.Drawn/float64(b.N), "ms-to-drawn")
	b.ReportMetric(sum.Painted/float64(b.N), "ms-to-painted")
}

// hostile writes a ledger whose files the model named and filled to
// mislead the reader: a right-to-left override in a name and a line, a
// name with line breaks that would add lines to a diff, and a file
// rewritten whole that is too large to diff; and a number longer than
// the page's reader once read.
func hostile(t *testing.T) (string, string) {
	t.Helper()
	s, vkey := newKey(t, "truss/test")
	dir := filepath.Join(t.TempDir(), "ledger")
	w, err := ledger.Create(dir, "S1", s)
	if err != nil {
		t.Fatal(err)
	}
	put := func(b string) string {
		d, err := w.Put([]byte(b))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	w.Append("session.start", map[string]any{"model": "sim-claude", "provider": "sim", "surface": "anthropic", "sandbox": "workspace-write",
		"workspace": "/work/repo", "truss": "test", "tools": []any{map[string]any{"name": "bash", "kind": "typed", "type": "bash_20250124"}}}, nil)
	w.Append("user", map[string]any{"chars": 5}, map[string]string{"text": put("do it")})
	w.Append("model.response", map[string]any{"turn": 1, "id": "msg_1", "model": "sim-claude", "stop_reason": "tool_use",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
		"items": []any{map[string]any{"kind": "assistant"}, map[string]any{"kind": "tool_call", "call_id": "call_1", "name": "bash"}}},
		map[string]string{"response": put(sse("Making files.", ""))})
	var big, big2 strings.Builder
	for i := range 9000 {
		fmt.Fprintf(&big, "%d\n", i)
		fmt.Fprintf(&big2, "%d changed\n", i)
	}
	payloads := map[string]string{"output": put("")}
	var changes []any
	for _, f := range []struct{ path, kind, before, after string }{
		{"evil\u202etxt.exe", "add", "", "line\u202e2 edoc\n"},
		{"nl\n@@ -1 +1 @@\n+fake", "add", "", "x\n"},
		{"big.txt", "update", big.String(), big2.String()},
		// Names that are not UTF-8, in their recorded form, beside the
		// name both would have become.
		{ledger.EncodeName("run\xff.sh"), "add", "", "one\n"},
		{ledger.EncodeName("run\xfe.sh"), "add", "", "two\n"},
		{"run\uFFFD.sh", "add", "", "three\n"},
	} {
		c := map[string]any{"path": f.path, "kind": f.kind}
		if f.before != "" {
			d := put(f.before)
			c["before"], payloads["content."+d[:16]] = d, d
		}
		d := put(f.after)
		c["after"], payloads["content."+d[:16]] = d, d
		changes = append(changes, c)
	}
	w.Append("tool.call", map[string]any{"turn": 1, "call_id": "call_1", "tool": "bash", "kind": "typed", "type": "bash_20250124", "surface": "anthropic", "decoded": true,
		"ops": []any{map[string]any{"op": "shell.exec", "args": map[string]any{"command": "make files",
			// A number of 600 digits: JSON, and Go's verifier reads it.
			"n": json.Number(strings.Repeat("9", 600)),
			// Arrays nested so that the line nests 5,000 levels (the
			// entry, data, ops, the operation and args are 5).
			"deep": json.RawMessage(nest(4995))}}}}, map[string]string{"input": put(`{"command":"make files"}`)})
	w.Append("tool.result", map[string]any{"turn": 1, "call_id": "call_1", "is_error": false, "results": []any{map[string]any{"op": "shell.exec", "exit_code": 0,
		"timed_out": false, "truncated": false, "changes": changes}}}, payloads)
	// A line nested 10,000 levels deep, as deep as Go's encoding/json
	// reads (the entry and data are 2).
	w.Append("note", map[string]any{"deep": json.RawMessage(nest(9998))}, nil)
	w.Checkpoint()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, vkey
}

// The model's names and contents cannot reorder, hide or add what the
// page draws, and a file too large to diff does not hold the page up.
func TestHostileContentInChromium(t *testing.T) {
	ctx := browser(t)
	dir, vkey := hostile(t)
	path := writeFile(t, write(t, build(t, dir, vkey, page.Options{})))
	s, problems, requests, _, _ := load(t, ctx, path, "")
	if s.Class != "ok" || len(problems) > 0 || len(requests) > 0 {
		t.Fatalf("verdict %q (%s), problems %v, requests %v", s.Verdict, s.Class, problems, requests)
	}
	if strings.ContainsRune(s.Text, '\u202e') || !strings.Contains(s.Text, "evil⟨U+202E⟩txt.exe") || !strings.Contains(s.Text, "line⟨U+202E⟩2 edoc") {
		t.Errorf("the override is drawn as is: %.2000q", s.Text)
	}
	if strings.Contains(s.Text, "+++ b/nl\n") || !strings.Contains(s.Text, `+++ b/nl\x0a@@ -1 +1 @@\x0a+fake`) {
		t.Errorf("a name's line breaks add lines to the diff: %.2000q", s.Text)
	}
	for _, want := range []string{`+++ b/"run\xff.sh"`, `+++ b/"run\xfe.sh"`, "+++ b/run\uFFFD.sh"} {
		if !strings.Contains(s.Text, want) {
			t.Errorf("a name that is not UTF-8 is not shown by its bytes: no %s in %.3000q", want, s.Text)
		}
	}
	if !strings.Contains(s.Text, "too large to diff here") {
		t.Errorf("the large rewrite is not said to be too large to diff: %.300q", s.Text)
	}
	// The lines nested 5,000 and 10,000 levels deep are read and drawn;
	// the session has no session.end, which the verdict says.
	if !strings.Contains(s.Text, `"deep": [`) || !strings.Contains(s.Text, "[[[[[[[[]]]]]]]]") {
		t.Errorf("the deep arguments are not drawn: %.300q", s.Text)
	}
	if !strings.Contains(s.Verdict, "NOT ENDED — the run ends at entry 5 (note) without session.end") {
		t.Errorf("verdict %q does not say the run did not end", s.Verdict)
	}
	// One level more: both verifiers refuse the line, naming it.
	doc := build(t, dir, vkey, page.Options{})
	editLines(doc.Runs[0], func(l []string) []string { l[5] = strings.Replace(l[5], nest(9998), nest(9999), 1); return l })
	b := write(t, doc)
	_, goErr := page.Verify(b, vkey)
	if goErr == nil || !strings.Contains(goErr.Error(), "entry 5: not a JSON object") {
		t.Fatalf("10,001 levels: truss ledger verify says %v", goErr)
	}
	checkFails(t, ctx, writeFile(t, b), "entry 5: not a JSON entry: exceeded max depth")
}

var runRE = regexp.MustCompile(`run (\d+)`)

// TestRunsInChromium: a page of a session's three runs verifies in the
// browser; runs spliced from another session, reordered, dropped or cut
// short fail there as in Go, naming the same run and entry; a run that
// did not end and entries left out unsealed are said beside the verdict;
// an unsealed count that is not a positive integer is refused.
func TestRunsInChromium(t *testing.T) {
	ctx := browser(t)
	doc, _, vkey := runsDoc(t)
	s := checkVerified(t, ctx, writeFile(t, write(t, doc)), 18, false)
	if strings.Contains(s.Verdict, "NOT ENDED") || strings.Count(s.Text, "Run ") < 3 {
		t.Errorf("verdict %q, text %.300q", s.Verdict, s.Text)
	}
	for _, m := range runMutations {
		t.Run(m.name, func(t *testing.T) {
			d, o, vkey := runsDoc(t)
			m.mutate(d, o)
			b := write(t, d)
			_, goErr := page.Verify(b, vkey)
			if goErr == nil {
				t.Fatal("the Go verifier accepts the mutation")
			}
			s := checkFails(t, ctx, writeFile(t, b), "entry 0: ")
			gr, jr := runRE.FindString(goErr.Error()), runRE.FindString(s.Verdict)
			if g, js := named(goErr.Error()), named(s.Verdict); g != js || gr != jr {
				t.Errorf("the page names %s entry %s, truss ledger verify %s entry %s:\npage: %s\ngo:   %v", jr, js, gr, g, s.Verdict, goErr)
			}
		})
	}

	t.Run("not ended, unsealed, not the first run", func(t *testing.T) {
		sg, vkey := newKey(t, "truss/test")
		dirs := runsSample(t, sg, "S1", 2, false)
		doc, err := page.Build(dirs[1:], page.Options{VKey: vkey})
		if err != nil {
			t.Fatal(err)
		}
		u := uint64(3)
		doc.Runs[0].Unsealed = &u
		s := checkVerified(t, ctx, writeFile(t, write(t, doc)), 5, false)
		for _, want := range []string{"NOT ENDED — the run ends at entry 4 (tool.result) without session.end: it was cut short, or is still running",
			"UNSEALED — 3 entries after the last checkpoint are not on this page: unsealed",
			"NOT THE WHOLE SESSION — this page begins at a resumed run"} {
			if !strings.Contains(s.Verdict, want) {
				t.Errorf("verdict %q does not say %q", s.Verdict, want)
			}
		}
	})

	dir, vkey := sample(t, 1, true)
	for _, tc := range []struct {
		name, member, want string
		agent              bool
	}{
		{"unsealed 0", `"unsealed":0,`, "unsealed 0 is not a positive count of entries", false},
		{"unsealed 1.5", `"unsealed":1.5,`, "unsealed 1.5 is not a positive count of entries", false},
		{"unsealed too large", `"unsealed":9007199254740992,`, "is not a positive count of entries", false},
		{"unsealed on a sub-agent", `"unsealed":2,`, "a sub-agent's ledger has no unsealed entries", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := unsealedPage(t, dir, vkey, tc.member, tc.agent)
			if _, err := page.Verify(b, vkey); err == nil {
				t.Fatal("the Go verifier accepts it")
			}
			checkFails(t, ctx, writeFile(t, b), tc.want)
		})
	}
}
