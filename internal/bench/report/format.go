package report

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Number formats shared by the Markdown and the HTML; NaN (no data) is "—".

func pct(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*x)
}

// interval is a 95 % interval of shares in percent: "[25.5, 36.6] %".
func interval(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "—"
	}
	return fmt.Sprintf("[%.1f, %.1f] %%", 100*lo, 100*hi)
}

// pp is a difference of shares in percentage points, signed.
func pp(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%+.1f pp", 100*x) // note: -0.0 prints as -0.0
}

func ppInterval(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "—"
	}
	return fmt.Sprintf("[%+.1f, %+.1f] pp", 100*lo, 100*hi)
}

func pvalue(p float64) string {
	switch {
	case math.IsNaN(p):
		return "—"
	case p >= 1:
		return "1"
	case p < 0.0001:
		return fmt.Sprintf("%.1e", p)
	default:
		return fmt.Sprintf("%.4f", p)
	}
}

func usd(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	if x != 0 && math.Abs(x) < 0.01 {
		return fmt.Sprintf("$%.4f", x)
	}
	return fmt.Sprintf("$%.2f", x)
}

func num(x float64) string {
	if math.IsNaN(x) {
		return "—"
	}
	return fmt.Sprintf("%.1f", x)
}

// perRun is count ÷ runs with two decimals.
func perRun(count, runs int) string {
	if runs == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", float64(count)/float64(runs))
}

// share is count ÷ total in percent.
func share(count, total int) string {
	if total == 0 {
		return "—"
	}
	return pct(float64(count) / float64(total))
}

func tokens(n int64) string {
	switch {
	case n >= 10_000_000:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	default:
		return fmt.Sprint(n)
	}
}

// ledgerURL is a file: URL of a ledger directory (absolute after Load),
// every character that could end a Markdown link or an attribute
// percent-encoded. "" when there is no directory.
func ledgerURL(dir string) string {
	if dir == "" {
		return ""
	}
	u := url.URL{Scheme: "file", Path: dir}
	s := u.String()
	return linkSafe.Replace(s)
}

// pageURL is a relative link to a session page beside the report (a
// '/'-separated relative path), percent-encoded as ledgerURL's.
func pageURL(rel string) string {
	u := url.URL{Path: rel}
	return linkSafe.Replace(u.String())
}

// linkSafe encodes the sub-delimiters url.URL leaves as they are and that
// matter in a Markdown link destination.
var linkSafe = strings.NewReplacer("(", "%28", ")", "%29", "[", "%5B", "]", "%5D", "'", "%27", "*", "%2A", "!", "%21")

// short is s cut to n runes with an ellipsis, for chart labels.
func short(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// mdEscape makes untrusted text (already terminal-safe) inert in a Markdown
// table cell or list item: it cannot end the cell, start a link, an image,
// an HTML tag, an entity, emphasis or code, nor break the line.
func mdEscape(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch c {
		case '\n', '\r', '\t':
			b.WriteByte(' ')
		case '\\', '`', '*', '[', ']', '<', '>', '|', '&', '~', '#', '!', '(', ')', '{', '}', '$':
			b.WriteByte('\\')
			b.WriteRune(c)
		case '_':
			// A run of underscores between letters or digits cannot
			// open or close emphasis (CommonMark's flanking rules) and
			// is left as it is, so instance ids stay readable.
			j := i
			for j < len(rs) && rs[j] == '_' {
				j++
			}
			inner := i > 0 && j < len(rs) && alnum(rs[i-1]) && alnum(rs[j])
			for ; i < j; i++ {
				if !inner {
					b.WriteByte('\\')
				}
				b.WriteByte('_')
			}
			i--
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

func alnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
