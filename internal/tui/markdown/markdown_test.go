package markdown

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestRenderPlain(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		width     int
		want      string
	}{
		{"paragraph", "Hello *there*, **you** and `code`.", 80, "Hello *there*, **you** and `code`."},
		{"soft break", "one\ntwo", 80, "one two"},
		{"hard break", "one  \ntwo", 80, "one\ntwo"},
		{"heading", "## Plan\n\nText", 80, "## Plan\n\nText"},
		{"wrap", "aaa bbb ccc ddd eee fff ggg hhh", 12, "aaa bbb ccc\nddd eee fff\nggg hhh"},
		{"tight list", "- one\n- two\n  more", 80, "• one\n• two more"},
		{"ordered", "3. three\n4. four", 80, "3. three\n4. four"},
		{"nested", "- a\n  - b\n  - c", 80, "• a\n  • b\n  • c"},
		{"loose list", "- a\n\n- b", 80, "• a\n\n• b"},
		{"list wrap", "- aaa bbb ccc ddd eee", 12, "• aaa bbb\n  ccc ddd\n  eee"},
		{"code block", "```go\nfunc f() {\n\treturn\n}\n```", 80, "```go\n  func f() {\n      return\n  }\n```"},
		{"code cut", "    abcdefghijklmnopqrstuvwxyz", 14, "  abcdefghijk…"},
		{"quote", "> quoted\n> text", 80, "│ quoted text"},
		{"link", "see [the docs](https://example.com/d) or <https://x.org>", 80, "see the docs (https://example.com/d) or https://x.org"},
		{"link same", "[https://a.b](https://a.b)", 80, "https://a.b"},
		{"rule", "a\n\n---\n\nb", 80, "a\n\n" + strings.Repeat("─", 40) + "\n\nb"},
		{"entities", "a &amp; b &lt; c \\*d\\*", 80, "a & b < c *d*"},
		{"image", "![logo](l.png)", 80, "[image: logo] (l.png)"},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", 80, "| a | b |\n|---|---|\n| 1 | 2 |"},
		{"table cut", "| aaaa | bbbb |\n|---|---|", 12, "| aaaa | bb…\n|---|---|"},
		{"pipe in text", "a | b\n| c", 80, "a | b | c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := strings.Join(New(false).Render(tc.src, tc.width), "\n")
			if got != tc.want {
				t.Errorf("Render(%q, %d):\n%s\nwant:\n%s", tc.src, tc.width, got, tc.want)
			}
		})
	}
}

func TestRenderColor(t *testing.T) {
	lines := New(true).Render("# Title\n\nSome **bold** and `code`.", 80)
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "\x1b[") {
		t.Fatalf("no styles with colour: %q", joined)
	}
	if got := ansi.Strip(joined); got != "# Title\n\nSome bold and code." {
		t.Errorf("text %q", got)
	}
}

// An entity or an escape in the source must not become a control
// character on the terminal.
func TestEntitiesCannotMakeControls(t *testing.T) {
	for _, color := range []bool{false, true} {
		src := "title &#27;]0;pwned&#7; and &#x9b;31m and &#8238;evil `a&#27;b`\n\n```\n&#27;[2J\n```"
		out := strings.Join(New(color).Render(src, 80), "\n")
		plain := ansi.Strip(out)
		for _, bad := range []string{"\x1b]", "\x07", "\x9b", "\u202e"} {
			if strings.Contains(out, bad) {
				t.Errorf("color=%v: %q in %q", color, bad, out)
			}
		}
		if !strings.Contains(plain, "<U+001B>]0;pwned<U+0007>") {
			t.Errorf("color=%v: the escape is not shown as text: %q", color, plain)
		}
	}
}

func FuzzRender(f *testing.F) {
	f.Add("# h\n\n- a\n- b\n\n```\ncode\n```\n> q\n\n[l](u) `c` **b** *i*", 40)
	f.Add("&#27;[31m x", 20)
	f.Fuzz(func(t *testing.T, src string, width int) {
		width = 12 + abs(width)%120
		for _, color := range []bool{false, true} {
			for _, l := range New(color).Render(src, width) {
				if w := ansi.StringWidth(l); w > width {
					// Deep nesting may leave less than minWidth; bound it loosely.
					if w > width+4*strings.Count(src, ">")+4*strings.Count(src, "-")+4*strings.Count(src, "*")+4*strings.Count(src, "+")+8*strings.Count(src, "1") {
						t.Errorf("line %q is %d wide, width %d", l, w, width)
					}
				}
				plain := ansi.Strip(l)
				for _, r := range plain {
					if (r < 0x20 && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
						t.Fatalf("control %U in %q", r, l)
					}
				}
				if !color && strings.ContainsRune(l, 0x1b) {
					t.Fatalf("escape without colour: %q", l)
				}
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
