package report

import (
	"bufio"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
)

// pageCSS is the page's style sheet, written inside its <style> element.
//
//go:embed report.css
var pageCSS string

// markup is HTML written as it is. Only the page's own text is markup: its
// string constants and its style sheet. A value from the results is never
// converted to markup; it goes through pageWriter's text, attr or href,
// which escape it for where it is written.
type markup string

// pageWriter writes the HTML page. Each method writes into one context and
// escapes for it:
//
//   - text: an element's content (including RCDATA such as <title>);
//   - attr: a whole attribute, name="value", the value quoted and escaped;
//   - num: an attribute whose value is a number it formats itself;
//   - href: a link, checked to be a percent-encoded file: or relative URL.
//
// Nothing written through text, attr or href can end the element or the
// attribute it is in, start another, or become a URL with a scheme other
// than file:. The first error (from the writer, or a link refused) ends the
// page and is kept in err.
type pageWriter struct {
	w   *bufio.Writer
	err error
}

// htmlEscaper escapes text and quoted attribute values with the table of
// html/template (so the page reads as it did when that package wrote it):
// the five characters that can start markup, an entity or end an
// attribute, "+" (which would start UTF-7 in a browser that guessed that
// encoding) and NUL.
var htmlEscaper = strings.NewReplacer(
	"\x00", "\uFFFD",
	`"`, "&#34;",
	"&", "&amp;",
	"'", "&#39;",
	"+", "&#43;",
	"<", "&lt;",
	">", "&gt;",
)

// m writes markup.
func (p *pageWriter) m(s markup) {
	if p.err == nil {
		_, p.err = p.w.WriteString(string(s))
	}
}

// text writes s as text, escaped.
func (p *pageWriter) text(s string) {
	if p.err == nil {
		_, p.err = htmlEscaper.WriteString(p.w, s)
	}
}

// attr writes ` name="value"`, value escaped.
func (p *pageWriter) attr(name markup, value string) {
	p.m(" " + name + `="`)
	p.text(value)
	p.m(`"`)
}

// num writes ` name="x"` with x to one decimal, as the charts' geometry is.
func (p *pageWriter) num(name markup, x float64) {
	p.m(" " + name + `="` + markup(f(x)) + `"`)
}

// int writes n in decimal.
func (p *pageWriter) int(n int) { p.m(markup(strconv.Itoa(n))) }

// count writes "n noun", with an s after the noun unless n is 1.
func (p *pageWriter) count(n int, noun markup) {
	p.int(n)
	p.m(" " + noun)
	if n != 1 {
		p.m("s")
	}
}

// href writes ` href="link"` after checking link (checkLink); a link
// refused ends the page with the error.
func (p *pageWriter) href(link string) {
	if p.err != nil {
		return
	}
	if err := checkLink(link); err != nil {
		p.err = err
		return
	}
	p.attr("href", link)
}

// f formats a chart's coordinate or length: one decimal.
func f(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }

// checkLink accepts a link the page may write: a URL with the file: scheme
// or none (a relative reference), in which every character other than
// RFC 3986's unreserved ones and the delimiters ! # $ & * + , / : ; = ? @
// [ ] is percent-encoded, as ledgerURL builds them. It refuses any other
// scheme (javascript:, data:, http:), a stray %, and any character that
// could end an attribute or needs encoding ( ' ( ) < > " space, controls,
// non-ASCII).
func checkLink(link string) error {
	for i := 0; i < len(link); i++ {
		c := link[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			strings.IndexByte("-._~!#$&*+,/:;=?@[]", c) >= 0:
		case c == '%' && i+2 < len(link) && isHex(link[i+1]) && isHex(link[i+2]):
			i += 2
		default:
			return fmt.Errorf("report: link %q: %q at byte %d is not percent-encoded", link, c, i)
		}
	}
	// RFC 3986: a scheme is what precedes the first ":" when it comes
	// before any "/", "?" or "#".
	if i := strings.IndexAny(link, ":/?#"); i >= 0 && link[i] == ':' && link[:i] != "file" {
		return fmt.Errorf("report: link %q: only file: URLs and relative references are linked", link)
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
