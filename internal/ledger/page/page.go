// Package page writes a session's ledger as one self-contained HTML page
// that shows the session as a person reads it and verifies itself in the
// browser, and verifies such a page with the Go verifier.
//
// The page holds the ledger itself: every sealed entry's line as written,
// every checkpoint as signed, and the payloads the page shows. Its script
// recomputes the RFC 6962 tree with WebCrypto's SHA-256, checks every
// checkpoint's Ed25519 signature with WebCrypto's Ed25519, checks every
// embedded payload against the digest its entry names, and only then
// draws the session, from those bytes alone, as text nodes. Verify does
// the same checks in Go (the ledger package's verifier), for a reader who
// does not trust the page's script. docs/ledger.md, "The session page",
// is the format.
package page

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/ledger"
)

// Format names the embedded ledger's format. Version 2 added deflated
// payloads, one stream each; version 3 deflates a ledger's entries
// (Ledger.Entries) and its payloads (Ledger.Pack, Payload.Packed), each
// in one stream.
const Format = "truss-session-page/3"

// MaxEntries is the most bytes a page's ledger's entries may inflate to.
const MaxEntries = 64 << 20

// DefaultMaxPayload is the largest payload a page embeds unless told
// otherwise; a larger one is left out by digest.
const DefaultMaxPayload = 512 << 10

//go:embed page.js
var pageJS string

//go:embed page.css
var pageCSS string

// Doc is the ledger a page embeds, as the JSON of its
// <script type="application/json" id="truss-ledger"> element.
type Doc struct {
	Format string `json:"format"`
	// VKey is the verifier key the page checks the signatures with when
	// the reader gives none.
	VKey string `json:"vkey"`
	// MaxPayload is the limit payloads were left out above.
	MaxPayload int64 `json:"max_payload"`
	// Runs are the session's ledgers, one per run, in order.
	Runs []*Ledger `json:"runs"`
}

// Ledger is one ledger: its sealed entries, its checkpoints, the
// payloads the page shows and its sub-agents' ledgers.
type Ledger struct {
	// Dir names the ledger for people (the run's directory name, a
	// sub-agent's link); it proves nothing.
	Dir string `json:"dir"`
	// Entries are the first lines of entries.jsonl, those the last
	// checkpoint seals, each with its newline: exactly the bytes the tree
	// is over, deflated (Lines reads them).
	Entries *Pack `json:"entries"`
	// Unsealed is how many entries after the last checkpoint were left
	// out (no signature covers them); nil when none were. A page that
	// holds it holds a positive integer, and never in a sub-agent's
	// ledger (a link names a ledger without an unsealed tail).
	Unsealed *uint64 `json:"unsealed,omitempty"`
	// Checkpoints are the signed notes by tree size (decimal).
	Checkpoints map[string]string `json:"checkpoints"`
	// Payloads are the embedded payloads by hex SHA-256.
	Payloads map[string]*Payload `json:"payloads"`
	// Pack holds the bytes of the payloads that name a span of it
	// (Payload.Packed), deflated together; nil when none does.
	Pack *Pack `json:"pack,omitempty"`
	// Agents are the sub-agent ledgers the sealed entries link.
	Agents []*Agent `json:"agents,omitempty"`
}

// Agent is a sub-agent's ledger and the parent entry that links it.
type Agent struct {
	Entry  uint64  `json:"entry"`
	Dir    string  `json:"dir"`
	Ledger *Ledger `json:"ledger"`
}

// Payload is one payload as the page holds it: its bytes (Text when they
// are UTF-8, else Base64, or Packed: a span of its ledger's Pack), or why
// they are not there (Omitted, with the size), or the text shown in
// their place with matches of the redaction patterns replaced
// (Redacted): a redacted payload cannot be checked against its digest.
type Payload struct {
	Text     *string `json:"text,omitempty"`
	Base64   string  `json:"base64,omitempty"`
	Packed   *Span   `json:"packed,omitempty"`
	Omitted  string  `json:"omitted,omitempty"`
	Redacted *string `json:"redacted,omitempty"`
	Size     int     `json:"size,omitempty"`
}

// Pack is bytes deflated: a raw DEFLATE stream (RFC 1951) in base64 that
// inflates to exactly Size bytes. A ledger's entries are one pack and its
// larger payloads another, not one a payload: a browser inflates one
// stream of megabytes in the time it takes to set up a few dozen, and a
// session's payloads (the same file before and after each edit, results
// alike) deflate far better together.
type Pack struct {
	Deflate string `json:"deflate"`
	Size    int64  `json:"size"`
}

// Span is where a packed payload's bytes are in its ledger's inflated
// Pack: Size bytes from At.
type Span struct {
	At   int64 `json:"at"`
	Size int64 `json:"size"`
}

// Options say what a page holds.
type Options struct {
	// VKey is the verifier key the ledgers are verified with before the
	// page is written, and which the page embeds.
	VKey string
	// MaxPayload is the largest payload embedded; a larger one is left
	// out by digest. 0 means DefaultMaxPayload.
	MaxPayload int
	// Redact are patterns whose matches are replaced by [REDACTED] in
	// every embedded payload that is text.
	Redact []*regexp.Regexp
}

// shown reports whether the page shows the payload of that name: the
// request bodies are left out (the page never shows them and they are
// most of a ledger's bytes), everything else is shown.
func shown(name string) bool {
	switch name {
	case "request", "request_parts", "replaced":
		return false
	}
	return true
}

// ErrRedactEntry is returned when a redaction pattern matches an entry
// itself: an entry is the proof and cannot be changed, so the page would
// show what the pattern names.
var ErrRedactEntry = errors.New("a redaction pattern matches an entry, which a page cannot redact")

// Build verifies the ledgers of a session's runs (dirs, in order) with
// opts.VKey, their sub-agents' ledgers with them, and returns the
// document a page embeds: the sealed entries, every checkpoint, and the
// payloads the page shows.
func Build(dirs []string, opts Options) (*Doc, error) {
	if len(dirs) == 0 {
		return nil, errors.New("page: no ledger")
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	doc := &Doc{Format: Format, VKey: opts.VKey, MaxPayload: int64(opts.MaxPayload)}
	var prev ledger.Run
	for i, dir := range dirs {
		r, entries, err := ledger.Verify(dir, opts.VKey)
		if err != nil {
			return nil, fmt.Errorf("ledger %s does not verify: %w", dir, err)
		}
		run := ledger.Run{Name: filepath.Base(dir), Report: r, Entries: entries}
		if i > 0 {
			if err := ledger.CheckNext(prev, run, i+1); err != nil {
				return nil, fmt.Errorf("the session does not verify: %w", err)
			}
		} else if _, err := ledger.Continues(entries); err != nil {
			return nil, fmt.Errorf("ledger %s does not verify: %w", dir, err)
		}
		prev = run
		kids, err := ledger.VerifyLinks(dir, opts.VKey, entries, r.Sealed)
		if err != nil {
			return nil, fmt.Errorf("ledger %s does not verify: %w", dir, err)
		}
		l, err := build(dir, r, kids, opts)
		if err != nil {
			return nil, err
		}
		l.Dir = filepath.Base(dir)
		doc.Runs = append(doc.Runs, l)
	}
	return doc, nil
}

// build makes the Ledger of the verified ledger in dir.
func build(dir string, r *ledger.Report, kids []ledger.Child, opts Options) (*Ledger, error) {
	data, err := os.ReadFile(filepath.Join(dir, "entries.jsonl"))
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	lines := bytes.SplitN(data, []byte("\n"), int(r.Sealed)+1)
	if uint64(len(lines)) <= r.Sealed {
		return nil, fmt.Errorf("page: %s changed while it was read", dir)
	}
	sealed := data[:len(data)-len(lines[r.Sealed])] // each sealed line with its newline
	if len(sealed) > MaxEntries {
		return nil, fmt.Errorf("page: %s: its %d sealed entries are %d bytes, more than a page holds (%d)", dir, r.Sealed, len(sealed), MaxEntries)
	}
	l := &Ledger{Checkpoints: map[string]string{}, Payloads: map[string]*Payload{}}
	if r.Unsealed > 0 {
		u := r.Unsealed
		l.Unsealed = &u
	}
	all, err := ledger.Payloads(dir)
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	var pk packer
	for i, line := range lines[:r.Sealed] {
		if !utf8.Valid(line) {
			return nil, fmt.Errorf("page: %s: entry %d is not UTF-8", dir, i) // Verify refuses it first
		}
		for _, re := range opts.Redact {
			if re.Match(line) {
				return nil, fmt.Errorf("%w: entry %d of %s matches %q (its data is shown as recorded; a page of this session cannot hide it)", ErrRedactEntry, i, dir, re)
			}
		}
		var e struct {
			Payloads map[string]string `json:"payloads"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("page: %s: entry %d: %w", dir, i, err)
		}
		for _, name := range slices.Sorted(maps.Keys(e.Payloads)) {
			d := e.Payloads[name]
			if !shown(name) || l.Payloads[d] != nil {
				continue
			}
			b, ok := all[d]
			if !ok {
				return nil, fmt.Errorf("page: %s: entry %d: payload %s is missing", dir, i, name)
			}
			p := embed(b, opts)
			if p.Text != nil || p.Base64 != "" {
				pk.add(p, b)
			}
			l.Payloads[d] = p
		}
	}
	l.Pack = pk.seal()
	// Entries that deflate further than a verifier takes are written
	// undeflated (stored blocks).
	z := deflate(sealed, flate.BestCompression)
	if int64(len(sealed)) > maxEntriesRatio*int64(len(z))+64<<10 {
		z = deflate(sealed, flate.NoCompression)
	}
	l.Entries = &Pack{Deflate: base64.StdEncoding.EncodeToString(z), Size: int64(len(sealed))}
	cps, err := ledger.Checkpoints(dir)
	if err != nil {
		return nil, fmt.Errorf("page: %w", err)
	}
	for n, b := range cps {
		if n > r.Sealed {
			continue // it cannot be: Verify refused it
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("page: %s: checkpoint %d is not UTF-8", dir, n)
		}
		l.Checkpoints[strconv.FormatUint(n, 10)] = string(b)
	}
	for _, k := range kids {
		c, err := build(k.Dir, k.Report, k.Children, opts)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(dir, k.Dir)
		if err != nil {
			return nil, fmt.Errorf("page: %w", err)
		}
		c.Dir = filepath.ToSlash(rel)
		l.Agents = append(l.Agents, &Agent{Entry: k.Entry, Dir: c.Dir, Ledger: c})
	}
	return l, nil
}

// Redacted is what replaces each match of a redaction pattern.
const Redacted = "[REDACTED]"

// packFrom is the size from which an embedded payload goes into its
// ledger's pack: a smaller one stays as it is, readable in the page's
// source, as a task's text or a command's short output is.
const packFrom = 512

// embed is how a page holds payload b, before packing.
func embed(b []byte, opts Options) *Payload {
	if len(b) > opts.MaxPayload {
		return &Payload{Omitted: fmt.Sprintf("larger than %d bytes", opts.MaxPayload), Size: len(b)}
	}
	valid := utf8.Valid(b)
	if valid && len(opts.Redact) > 0 {
		s := string(b)
		red := s
		for _, re := range opts.Redact {
			red = re.ReplaceAllLiteralString(red, Redacted)
		}
		if red != s {
			return &Payload{Redacted: &red, Size: len(b)}
		}
	}
	if !valid {
		return &Payload{Base64: base64.StdEncoding.EncodeToString(b)}
	}
	s := string(b)
	return &Payload{Text: &s}
}

// packer gathers a ledger's payloads of packFrom bytes or more, in the
// order the entries first name them.
type packer struct {
	raw   bytes.Buffer
	spans []packed
}

type packed struct {
	p    *Payload
	span Span
}

func (k *packer) add(p *Payload, b []byte) {
	if len(b) < packFrom || k.raw.Len()+len(b) > MaxPack {
		return // a payload that would take the pack past MaxPack stays as it is
	}
	k.spans = append(k.spans, packed{p, Span{At: int64(k.raw.Len()), Size: int64(len(b))}})
	k.raw.Write(b)
}

// seal deflates the gathered payloads and makes each a span of the pack
// it returns, when that makes the page smaller; else it leaves them as
// they are and returns nil.
func (k *packer) seal() *Pack {
	if len(k.spans) == 0 {
		return nil
	}
	z := deflate(k.raw.Bytes(), flate.BestCompression)
	if base64.StdEncoding.EncodedLen(len(z)) >= k.raw.Len()*3/4 {
		return nil
	}
	for _, s := range k.spans {
		sp := s.span
		*s.p = Payload{Packed: &sp}
	}
	return &Pack{Deflate: base64.StdEncoding.EncodeToString(z), Size: int64(k.raw.Len())}
}

// deflate is b as a raw DEFLATE stream, at level (the best compression
// unless that is too much: a page is written once and read many times).
func deflate(b []byte, level int) []byte {
	var z bytes.Buffer
	w, _ := flate.NewWriter(&z, level) // the level is valid
	w.Write(b)                         // a bytes.Buffer does not fail
	w.Close()
	return z.Bytes()
}

// Write writes the page of doc: the HTML document, its style sheet and
// script inline and allowed by their hashes in a Content-Security-Policy
// that allows nothing else (no request, no other script, no frame, no
// form), and doc as the JSON of its ledger element, in ASCII alone (every
// other character as its \u escape).
func Write(w io.Writer, doc *Doc) error {
	js, err := json.Marshal(doc) // escapes <, > and &: the element cannot be ended from inside
	if err != nil {
		return fmt.Errorf("page: %w", err)
	}
	js = asciiJSON(js)
	var b bytes.Buffer
	b.Grow(len(js) + len(pageJS) + len(pageCSS) + 2048)
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString(`<meta http-equiv="Content-Security-Policy" content="` + CSP() + `">` + "\n")
	b.WriteString("<meta name=\"color-scheme\" content=\"light dark\">\n<meta name=\"referrer\" content=\"no-referrer\">\n")
	b.WriteString("<title>Truss session</title>\n<style>" + pageCSS + "</style>\n</head>\n<body>\n")
	b.WriteString(`<header id="verdict" class="pending"><strong>Checking the ledger…</strong></header>` + "\n")
	b.WriteString("<noscript><p>This page checks its ledger and draws the session with its script. Without it, verify the page with <code>truss ledger verify FILE</code>.</p></noscript>\n")
	b.WriteString("<main id=\"session\"></main>\n")
	b.WriteString(`<script type="application/json" id="truss-ledger">`)
	b.Write(js)
	b.WriteString("</script>\n<script>" + pageJS + "</script>\n</body>\n</html>\n")
	_, err = w.Write(b.Bytes())
	return err
}

// asciiJSON returns js, a JSON text that is valid UTF-8 (as
// json.Marshal writes it), with every character outside ASCII written
// as its \u escape (a pair of them above U+FFFF): the same JSON value in
// ASCII alone. Chromium holds a text that has one character outside
// Latin-1 in two bytes a character, and every signed note has one (the
// em dash of its signature lines), so without this the browser decoded,
// tokenized and read the page's whole ledger at twice the width.
func asciiJSON(js []byte) []byte {
	n := 0
	for _, c := range js {
		if c >= utf8.RuneSelf {
			n++
		}
	}
	if n == 0 {
		return js
	}
	const hexDigits = "0123456789abcdef"
	out := make([]byte, 0, len(js)+5*n)
	for i := 0; i < len(js); {
		if c := js[i]; c < utf8.RuneSelf {
			out = append(out, c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(js[i:])
		i += size
		units := []rune{r}
		if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			units = []rune{r1, r2}
		}
		for _, u := range units {
			out = append(out, '\\', 'u', hexDigits[u>>12&0xf], hexDigits[u>>8&0xf], hexDigits[u>>4&0xf], hexDigits[u&0xf])
		}
	}
	return out
}

// CSP is the page's Content-Security-Policy: nothing may load (no
// request of any kind), the page's own style sheet and script run,
// allowed by their SHA-256, and nothing else.
func CSP() string {
	return "default-src 'none'; script-src '" + hashSource(pageJS) + "'; style-src '" + hashSource(pageCSS) +
		"'; img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'"
}

func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}
