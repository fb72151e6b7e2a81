package report

import (
	"bufio"
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/termsafe"
)

// namedData is a results set in which every string that reaches the page
// from the results or the manifest is built from s: the directory, the
// warnings, the arms' names, providers, models and surfaces, the manifest's
// task file and settings, instance ids, stop reasons, tool and capability
// names, run errors, ledger directories and roots. Two sets built from
// different s have the same shape: the same arms, tasks and runs in the
// same order, so their pages have the same elements.
func namedData(s string) *Data {
	n := func(i int) string { return fmt.Sprintf("%s-%d", s, i) }
	d := &Data{
		Dir:      n(0),
		Warnings: []string{n(1)},
		Manifest: &Manifest{Version: ManifestVersion, Arms: []Arm{
			{Name: n(1), Provider: n(2), Model: n(3), Surface: n(4)},
			{Name: n(2), Provider: n(2), Model: n(3), Surface: n(5)},
			{Name: n(3), Provider: n(2), Model: n(3)}, // no results: a warning
		}, Tasks: n(6), Repeats: 2, Settings: map[string]string{n(7): n(8)}},
	}
	// Arm n(4) is not in the manifest: another warning, compared with
	// every arm.
	for task := 1; task <= 3; task++ {
		for arm := 1; arm <= 4; arm++ {
			if arm == 3 {
				continue
			}
			for rep := 1; rep <= 2; rep++ {
				r := bench.Result{
					InstanceID: n(10 + task), Arm: n(arm), Repeat: rep,
					Resolved: (task+arm+rep)%3 != 0, PatchApplied: (task+rep)%4 != 0,
					Turns: 5 + task, CostUSD: 0.25, WallS: 10, ModelS: 8, HarnessS: 0.1,
					StopReason:      n(20 + rep),
					ToolCalls:       map[string]int{n(30): task, n(31): arm, n(32): 1},
					CapabilityCalls: map[string]int{n(40): task + 1, n(41): 2},
					Edits:           bench.Edits{Editor: task % 2, Patch: arm % 2, Shell: 1},
					Validation:      bench.Validation{RanTests: rep == 1, Runs: rep, LastPassed: task == 1},
					Ledger:          bench.LedgerRef{Dir: "/var/lib/truss/" + n(50+task) + "/" + n(arm), Root: n(60)},
				}
				if task == 3 && arm == 2 && rep == 2 {
					r.Error = n(70)
				}
				if task == 2 && arm == 4 {
					r.Ledger.Dir = "" // no link
				}
				d.Results = append(d.Results, r)
			}
		}
	}
	return d
}

// hostileNames are strings that would become markup, an attribute, a
// style, a URL or a control sequence if the page wrote them unescaped.
var hostileNames = []struct{ name, s string }{
	{"script", `<script>alert(1)</script>`},
	{"attribute breakout", `"><svg onload=alert(1)>`},
	{"single-quoted breakout", `' onmouseover='alert(1)' x='`},
	{"javascript URL", `javascript:alert(1)`},
	{"style end", `</style><style>*{display:none}</style>`},
	{"title end", `</title><img src=x onerror=alert(1)>`},
	{"textarea end", `</textarea></svg></table><iframe src=//x>`},
	{"comment and cdata", `--><!-- <![CDATA[ ]]>`},
	{"entities", `&amp;&lt;&#60;&#x3c;`},
	{"control characters", "a\x00b\x1b[31mred\x1b]8;;http://x\x07c\x7f\u202eevil\r\nline\ttab"},
	{"utf-7", `+ADw-script+AD4-alert(1)+ADw-/script+AD4-`},
	{"invalid utf-8", "\xff\xfe<b>\xc0"},
	{"url parts", `/../?a=1&b=2#frag %41 %zz (x)[y]`},
	{"style attribute", `x" style="background:url(javascript:alert(1))`},
}

// TestHostileNames renders, for each hostile string, the page of a results
// set made of it and of a benign one of the same shape: the two pages must
// parse to the same elements with the same attributes (and the same values
// but for tooltips and links), every link must be a file: URL, and the
// hostile text must be on the page as text, whole.
func TestHostileNames(t *testing.T) {
	render := func(t *testing.T, s string) (*html.Node, string) {
		t.Helper()
		var buf bytes.Buffer
		if err := Analyze(namedData(s), Options{Resamples: 100}).HTML(&buf); err != nil {
			t.Fatal(err)
		}
		doc, err := html.Parse(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		return doc, buf.String()
	}
	benign, _ := render(t, "name")
	want := elements(benign)
	for _, tt := range hostileNames {
		t.Run(tt.name, func(t *testing.T) {
			doc, page := render(t, tt.s)
			got := elements(doc)
			if len(got) != len(want) {
				t.Fatalf("%d elements, want %d (as with a benign name): %s", len(got), len(want), firstDiff(got, want))
			}
			for i := range got {
				g, w := got[i], want[i]
				if g.tag != w.tag || !slices.Equal(g.keys(), w.keys()) {
					t.Fatalf("element %d is <%s %v>, want <%s %v>", i, g.tag, g.keys(), w.tag, w.keys())
				}
				for j, a := range g.attr {
					switch a.Key {
					case "title":
						// A tooltip: text from the results.
					case "href":
						wantFileLink(t, a.Val)
					default:
						if a.Val != w.attr[j].Val {
							t.Errorf("<%s %s=%q>, want %q", g.tag, a.Key, a.Val, w.attr[j].Val)
						}
					}
				}
				if g.tag == "style" && g.text != w.text {
					t.Errorf("the style sheet changed with the names")
				}
			}
			// The names are shown, whole and as written (bar controls).
			shown := termsafe.String(tt.s)
			if !strings.Contains(pageText(doc), shown+"-11") {
				t.Errorf("the page's text does not hold the instance id %q", shown+"-11")
			}
			for _, bad := range []string{"<script", "<svg onload", "<img", "<iframe", "</style><style>", "\x1b", "\x00"} {
				if strings.Contains(page, bad) {
					t.Errorf("the page's source holds %q", bad)
				}
			}
		})
	}
}

type element struct {
	tag  string
	attr []html.Attribute
	text string // a <style>'s content
}

func (e element) keys() []string {
	var k []string
	for _, a := range e.attr {
		k = append(k, a.Key)
	}
	return k
}

// elements lists the document's elements in order.
func elements(doc *html.Node) []element {
	var out []element
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode {
			continue
		}
		e := element{tag: n.Data, attr: n.Attr}
		if n.Data == "style" && n.FirstChild != nil {
			e.text = n.FirstChild.Data
		}
		out = append(out, e)
	}
	return out
}

func firstDiff(got, want []element) string {
	for i := range min(len(got), len(want)) {
		if got[i].tag != want[i].tag || !slices.Equal(got[i].keys(), want[i].keys()) {
			return fmt.Sprintf("first difference at element %d: <%s %v>, want <%s %v>", i, got[i].tag, got[i].keys(), want[i].tag, want[i].keys())
		}
	}
	return "one is a prefix of the other"
}

// pageText is the document's text, its text nodes joined.
func pageText(doc *html.Node) string {
	var b strings.Builder
	for n := range doc.Descendants() {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
	}
	return b.String()
}

// wantFileLink fails unless href is a file: URL with every special character
// percent-encoded.
func wantFileLink(t *testing.T, href string) {
	t.Helper()
	u, err := url.Parse(href)
	if err != nil || u.Scheme != "file" || strings.ContainsAny(href, "<>\"' \\`{}|^()[]") {
		t.Errorf("link %q is not a percent-encoded file: URL (%v)", href, err)
	}
}

func TestCheckLink(t *testing.T) {
	tests := []struct {
		link string
		ok   bool
	}{
		{"file:///var/lib/truss/ledger", true},
		{"file:///a%20b/%28x%29%5By%5D%3Cz%3E%22%27", true},
		{"file://runs/1/ledger", true},
		{"runs/1/ledger", true},
		{"../ledger?x=1&y=2#f", true},
		{"file:///a+b/c,d;e=f@g!$*[]", true},
		{"javascript:alert(1)", false},
		{"JavaScript:alert%281%29", false},
		{"javascript%3Aalert(1)", false},
		{"data:text/html,x", false},
		{"http://example.com/", false},
		{"FILE:///x", false},
		{":x", false},
		{"file:///a b", false},
		{`file:///a"b`, false},
		{"file:///a'b", false},
		{"file:///a<b", false},
		{"file:///a(b)", false},
		{"file:///a\nb", false},
		{"file:///é", false},
		{"file:///a%2", false},
		{"file:///a%zz", false},
		{"file:///a%", false},
		{"", true},
	}
	for _, tt := range tests {
		err := checkLink(tt.link)
		if (err == nil) != tt.ok {
			t.Errorf("checkLink(%q) = %v, want ok %v", tt.link, err, tt.ok)
		}
	}
}

// TestHTMLRefusesLink: a link that is not a file: URL ends the page with an
// error rather than being written.
func TestHTMLRefusesLink(t *testing.T) {
	var buf bytes.Buffer
	p := &pageWriter{w: bufio.NewWriter(&buf)}
	p.cell(cell{Text: "x", Link: "javascript:alert(1)"})
	p.text("after")
	if p.err == nil || !strings.Contains(p.err.Error(), "javascript:alert(1)") {
		t.Fatalf("err %v, want the link refused", p.err)
	}
	_ = p.w.Flush()
	if strings.Contains(buf.String(), "javascript") || strings.Contains(buf.String(), "after") {
		t.Errorf("written after the refused link: %q", buf.String())
	}
}

func TestPageWriterEscapes(t *testing.T) {
	tests := []struct{ in, text string }{
		{"plain – ✓", "plain – ✓"},
		{`<a href="x">'&'</a>`, "&lt;a href=&#34;x&#34;&gt;&#39;&amp;&#39;&lt;/a&gt;"},
		{"+1.0 pp", "&#43;1.0 pp"},
		{"nul\x00", "nul\uFFFD"},
		{"&amp;", "&amp;amp;"},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		p := &pageWriter{w: bufio.NewWriter(&buf)}
		p.text(tt.in)
		p.attr("title", tt.in)
		if err := p.w.Flush(); err != nil || p.err != nil {
			t.Fatal(err, p.err)
		}
		if want := tt.text + ` title="` + tt.text + `"`; buf.String() != want {
			t.Errorf("%q written as %q, want %q", tt.in, buf.String(), want)
		}
	}
}

// TestStyleSheetStaysInItsElement: the embedded style sheet cannot end its
// <style> element.
func TestStyleSheetStaysInItsElement(t *testing.T) {
	if strings.Contains(strings.ToLower(pageCSS), "</style") || strings.Contains(pageCSS, "<!--") {
		t.Error("report.css holds </style or <!--")
	}
}

// FuzzLedgerURL: every ledger directory gives a link the page accepts,
// naming the same path.
func FuzzLedgerURL(f *testing.F) {
	for _, s := range []string{"/var/lib/truss/l", "/a b/(x)[y]<z>\"'", "runs/1", "javascript:alert(1)", "/é/%41/\x00", "//host/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dir string) {
		link := ledgerURL(dir)
		if err := checkLink(link); err != nil {
			t.Fatalf("ledgerURL(%q) = %q, refused: %v", dir, link, err)
		}
		if dir == "" || !strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "//") {
			return
		}
		u, err := url.Parse(link)
		if err != nil || u.Scheme != "file" || u.Path != dir {
			t.Fatalf("ledgerURL(%q) = %q parses to path %q (%v)", dir, link, u.Path, err)
		}
	})
}
