package page

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/ledger"
)

const (
	openTag  = `<script type="application/json" id="truss-ledger">`
	closeTag = `</script>`
)

// Parse returns the ledger document a page embeds.
func Parse(html []byte) (*Doc, error) {
	i := bytes.Index(html, []byte(openTag))
	if i < 0 {
		return nil, errors.New("not a Truss session page: no embedded ledger")
	}
	if bytes.Count(html, []byte(openTag)) != 1 {
		return nil, errors.New("the page embeds more than one ledger")
	}
	rest := html[i+len(openTag):]
	j := bytes.Index(rest, []byte(closeTag))
	if j < 0 {
		return nil, errors.New("the page's embedded ledger is not closed")
	}
	dec := json.NewDecoder(bytes.NewReader(rest[:j]))
	dec.DisallowUnknownFields()
	var doc Doc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("the page's embedded ledger is not valid: %w", err)
	}
	if doc.Format != Format {
		return nil, fmt.Errorf("the page's ledger has format %q, want %q", doc.Format, Format)
	}
	if len(doc.Runs) == 0 {
		return nil, errors.New("the page's ledger has no run")
	}
	return &doc, nil
}

// Result is what a page's verification found.
type Result struct {
	// VKey is the key the signatures verified with.
	VKey string
	// Runs are the reports of the session's runs, in order.
	Runs []RunResult
	// Continues is what the first run's session.start names as the run
	// before it: nil when the page begins with the session's first run;
	// else the runs before it are not on the page.
	Continues *ledger.Previous
}

// RunResult is one verified ledger of a page: its report, the payloads
// the page holds and checks, and those it does not.
type RunResult struct {
	Dir    string
	Report *ledger.Report
	// Checked are the payloads embedded and matching their digest (each
	// once, however many entries name it).
	Checked int
	// Omitted are the payloads left out for their size; Redacted those
	// shown redacted, whose bytes are not on the page; NotEmbedded those
	// the page does not show (request bodies). Each is by "entry N name".
	Omitted, Redacted, NotEmbedded []string
	Agents                         []RunResult
	// Unsealed is how many entries after the last checkpoint the page
	// left out (its ledger's unsealed member; 0 when absent).
	Unsealed uint64
	// NotEnded is a run's (not a sub-agent's) *ledger.NotEndedError when
	// its entries do not end with session.end: cut short, or still
	// running when the page was written.
	NotEnded error
}

// Entries is how many entries the result's ledgers hold, sub-agents'
// included.
func (r RunResult) Entries() uint64 {
	n := r.Report.Entries
	for _, a := range r.Agents {
		n += a.Entries()
	}
	return n
}

// Verify verifies the ledger a page embeds, with vkey (a verifier key
// the reader trusts) or, when vkey is "", with the key the page names:
// every run's entries, checkpoints and embedded payloads, and its
// sub-agents' ledgers and their links, by the rules of docs/ledger.md.
// A payload that is left out or redacted is not a failure; the result
// lists it. The page's script makes the same checks.
func Verify(html []byte, vkey string) (*Result, error) {
	doc, err := Parse(html)
	if err != nil {
		return nil, err
	}
	if vkey == "" {
		vkey = doc.VKey
	}
	res := &Result{VKey: vkey}
	var prev ledger.Run
	for i, l := range doc.Runs {
		if l == nil {
			return nil, fmt.Errorf("run %d: not a ledger", i+1)
		}
		rr, entries, err := verifyLedger(l, vkey, nil, doc.MaxPayload)
		if err != nil {
			return nil, fmt.Errorf("run %d (%s): %w", i+1, l.Dir, err)
		}
		// The runs are one session's, in order: each resumed run names
		// the run before it by its last checkpoint.
		run := ledger.Run{Name: l.Dir, Report: rr.Report, Entries: entries}
		if i > 0 {
			if err := ledger.CheckNext(prev, run, i+1); err != nil {
				return nil, err
			}
		} else if res.Continues, err = ledger.Continues(entries); err != nil {
			return nil, fmt.Errorf("run %d (%s): %w", i+1, l.Dir, err)
		}
		prev = run
		if err := ledger.CheckEnded(entries, rr.Report.Sealed); err != nil {
			rr.NotEnded = err
		}
		res.Runs = append(res.Runs, *rr)
	}
	// What the browser shows is the whole file, not only the ledger this
	// reads: the page must be byte for byte the one Write makes of it.
	// Anything else — markup or a script added or changed, a second
	// element of the ledger's id, a member the browser reads that Go's
	// case-insensitive decoding folded away — is refused.
	var b bytes.Buffer
	if err := Write(&b, doc); err != nil {
		return nil, err
	}
	if !bytes.Equal(b.Bytes(), html) {
		return nil, ErrNotCanonical
	}
	return res, nil
}

// ErrNotCanonical is Verify's error for a page whose ledger verifies but
// whose file is not the page Write makes of that ledger: something outside
// the signed ledger (markup, style, script, the ledger's JSON form) was
// changed, or another version of Truss wrote it.
var ErrNotCanonical = errors.New("the page is not the page its ledger makes: something outside the signed ledger (markup, style, script or the ledger's JSON form) was changed, or another version of Truss wrote it")

// maxUnsealed is the largest unsealed count a page may hold: the largest
// integer a browser's number holds exactly, so that both verifiers read
// the same count.
const maxUnsealed = 1<<53 - 1

// verifyLedger verifies one embedded ledger (and, when parent is set,
// that it is the ledger the parent's link names) and returns its result
// and its entries. maxPayload is the page's limit, which no deflated
// payload inflates past.
func verifyLedger(l *Ledger, vkey string, parent *ledger.ChildLink, maxPayload int64) (*RunResult, []ledger.Entry, error) {
	data, err := l.Entries.inflate("the entries", MaxEntries, maxEntriesRatio)
	if err != nil {
		return nil, nil, &ledger.Error{Entry: -1, Reason: err.Error()}
	}
	if n := len(data); n > 0 && data[n-1] != '\n' {
		return nil, nil, &ledger.Error{Entry: int64(bytes.Count(data, []byte("\n"))), Reason: "the entries end in a line without its newline"}
	}
	cps := map[uint64][]byte{}
	for k, v := range l.Checkpoints {
		n, err := strconv.ParseUint(k, 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != k {
			return nil, nil, &ledger.Error{Entry: -1, Reason: fmt.Sprintf("checkpoint %q: not keyed by a tree size", k)}
		}
		cps[n] = []byte(v)
	}
	r, entries, err := ledger.VerifyEntries(data, cps, vkey)
	if err != nil {
		return nil, nil, err
	}
	if r.Unsealed != 0 || r.TornBytes != 0 {
		return nil, nil, &ledger.Error{Entry: int64(r.Sealed), Reason: fmt.Sprintf("%d entries after the last checkpoint (size %d): a page holds sealed entries only", r.Unsealed, r.Sealed)}
	}
	rr := &RunResult{Dir: l.Dir, Report: r}
	if u := l.Unsealed; u != nil {
		switch {
		case parent != nil:
			return nil, nil, &ledger.Error{Entry: -1, Reason: "a sub-agent's ledger has no unsealed entries (its link names its last checkpoint), but the page says it has"}
		case *u == 0 || *u > maxUnsealed:
			return nil, nil, &ledger.Error{Entry: -1, Reason: fmt.Sprintf("unsealed %d is not a positive count of entries", *u)}
		}
		rr.Unsealed = *u
	}
	pack, err := l.inflatePack(entries, maxPayload)
	if err != nil {
		return nil, nil, &ledger.Error{Entry: -1, Reason: err.Error()}
	}
	used, checked := map[string]bool{}, map[string]bool{}
	for i, e := range entries {
		for _, name := range slices.Sorted(maps.Keys(e.Payloads)) {
			d := e.Payloads[name]
			where := fmt.Sprintf("entry %d %s", i, name)
			p, ok := l.Payloads[d]
			if !ok {
				if shown(name) {
					return nil, nil, &ledger.Error{Entry: int64(i), Reason: fmt.Sprintf("payload %s (%s) is not on the page", name, d)}
				}
				rr.NotEmbedded = append(rr.NotEmbedded, where)
				continue
			}
			used[d] = true
			switch {
			case p == nil:
				return nil, nil, &ledger.Error{Entry: int64(i), Reason: fmt.Sprintf("payload %s: not a payload", name)}
			case p.Omitted != "":
				rr.Omitted = append(rr.Omitted, where)
			case p.Redacted != nil:
				rr.Redacted = append(rr.Redacted, where)
			case checked[d]:
			default:
				checked[d] = true
				b, err := p.bytes(maxPayload, pack)
				if err != nil {
					return nil, nil, &ledger.Error{Entry: int64(i), Reason: fmt.Sprintf("payload %s: %v", name, err)}
				}
				sum := sha256.Sum256(b)
				if hex.EncodeToString(sum[:]) != d {
					return nil, nil, &ledger.Error{Entry: int64(i), Reason: fmt.Sprintf("payload %s: content does not match its digest %s", name, d)}
				}
				rr.Checked++
			}
		}
	}
	for d := range l.Payloads {
		if !used[d] {
			return nil, nil, &ledger.Error{Entry: -1, Reason: fmt.Sprintf("payload %s: no entry names it", d)}
		}
	}
	if parent != nil {
		if err := checkLink(parent, r, entries); err != nil {
			return nil, nil, err
		}
	}
	links := ledger.Links(entries, uint64(len(entries)))
	if len(links) != len(l.Agents) {
		return nil, nil, &ledger.Error{Entry: -1, Reason: fmt.Sprintf("the entries link %d sub-agent ledgers, the page holds %d", len(links), len(l.Agents))}
	}
	for k, lk := range links {
		a := l.Agents[k]
		if a == nil || a.Entry != lk.Entry || a.Dir != lk.Dir || a.Ledger == nil {
			return nil, nil, &ledger.Error{Entry: int64(lk.Entry), Reason: fmt.Sprintf("sub-agent ledger %s is not on the page", lk.Dir)}
		}
		ar, _, err := verifyLedger(a.Ledger, vkey, &lk, maxPayload)
		if err != nil {
			return nil, nil, &ledger.Error{Entry: int64(lk.Entry), Reason: fmt.Sprintf("sub-agent ledger: %s does not verify: %v", lk.Dir, err)}
		}
		rr.Agents = append(rr.Agents, *ar)
	}
	return rr, entries, nil
}

// unb64 is s, base64 as a page writes it, decoded strictly: padded, the
// last digit's unused bits zero, and no line break (which Go's decoder
// would skip and the page's script refuses): one text for each bytes.
func unb64(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("not base64: a line break")
	}
	return base64.StdEncoding.Strict().DecodeString(s)
}

// MaxPack is the most bytes a ledger's pack may inflate to.
const MaxPack = 64 << 20

// maxEntriesRatio is how many times its deflated bytes a ledger's
// entries may inflate to (and 64 KiB more): a page's entries deflate to
// a fifth or a sixth, and Build writes them undeflated when they would
// deflate further. Every byte of the entries is parsed as JSON, which
// costs each verifier tens of times the bytes, so a small page must not
// hold much more.
const maxEntriesRatio = 16

// inflatePack is the ledger's pack inflated, nil when it has none. Its
// size is at most MaxPack, and the page's limit for each payload that an
// entry names and the page packs.
func (l *Ledger) inflatePack(entries []ledger.Entry, max int64) ([]byte, error) {
	named := map[string]bool{}
	for _, e := range entries {
		for _, d := range e.Payloads {
			named[d] = true
		}
	}
	n := int64(0)
	for d, p := range l.Payloads {
		if p != nil && p.Packed != nil && named[d] {
			n++
		}
	}
	switch {
	case l.Pack == nil:
		return nil, nil
	case n == 0:
		return nil, errors.New("the pack: no payload is packed in it")
	case l.Pack.Size/n > max || l.Pack.Size/n == max && l.Pack.Size%n != 0:
		return nil, fmt.Errorf("the pack: its size of %d bytes is more than the page's limit of %d for each of its %d payloads", l.Pack.Size, max, n)
	}
	return l.Pack.inflate("the pack", MaxPack, 0)
}

// inflate is the pack's bytes, which must be exactly its size, at most
// max, and, when ratio is not 0, at most ratio times its deflated bytes
// and 64 KiB: no more is inflated. Its errors begin with what.
func (k *Pack) inflate(what string, max int64, ratio int64) ([]byte, error) {
	switch {
	case k == nil:
		return nil, fmt.Errorf("%s: missing", what)
	case k.Size < 0 || k.Size > max:
		return nil, fmt.Errorf("%s: a size of %d bytes, not from 0 to %d", what, k.Size, max)
	}
	z, err := unb64(k.Deflate)
	if err != nil {
		return nil, fmt.Errorf("%s: its deflated bytes: %w", what, err)
	}
	if ratio > 0 && k.Size > ratio*int64(len(z))+64<<10 {
		return nil, fmt.Errorf("%s: a size of %d bytes from %d deflated, more than %d times as many", what, k.Size, len(z), ratio)
	}
	zr := bytes.NewReader(z) // an io.ByteReader: the decompressor reads no byte past its stream
	var b bytes.Buffer
	b.Grow(int(k.Size) + 1)
	_, err = b.ReadFrom(io.LimitReader(flate.NewReader(zr), k.Size+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: its deflated bytes: %w", what, err)
	case int64(b.Len()) != k.Size:
		return nil, fmt.Errorf("%s: its deflated bytes inflate to more or fewer than its size of %d bytes", what, k.Size)
	case zr.Len() > 0:
		return nil, fmt.Errorf("%s: its deflated bytes: %d bytes after the end of the stream", what, zr.Len())
	}
	return b.Bytes(), nil
}

// Lines are the ledger's entries, each without its newline.
func (l *Ledger) Lines() ([]string, error) {
	b, err := l.Entries.inflate("the entries", MaxEntries, maxEntriesRatio)
	if err != nil {
		return nil, err
	}
	s := strings.Split(string(b), "\n")
	return s[:len(s)-1], nil
}

// bytes are the payload's bytes as embedded; a packed one's are its span
// of pack, its ledger's inflated pack.
func (p *Payload) bytes(max int64, pack []byte) ([]byte, error) {
	switch {
	case p.Text != nil:
		return []byte(*p.Text), nil
	case p.Base64 != "":
		return unb64(p.Base64)
	case p.Packed != nil:
		s := p.Packed
		switch {
		case pack == nil:
			return nil, errors.New("packed, but the ledger has no pack")
		case s.Size < 0 || s.Size > max:
			return nil, fmt.Errorf("a packed payload of %d bytes, larger than the page's limit of %d", s.Size, max)
		case s.At < 0 || s.At > int64(len(pack))-s.Size:
			return nil, fmt.Errorf("its span of %d bytes at %d is outside the pack's %d bytes", s.Size, s.At, len(pack))
		}
		return pack[s.At : s.At+s.Size], nil
	}
	return nil, nil
}

// checkLink checks a sub-agent's verified ledger against its parent's
// link, as ledger.VerifyLinks does for a directory.
func checkLink(lk *ledger.ChildLink, r *ledger.Report, entries []ledger.Entry) error {
	if lk.Dir == "" || strings.HasPrefix(lk.Dir, "/") || slices.Contains(strings.Split(lk.Dir, "/"), "..") {
		return &ledger.Error{Entry: -1, Reason: fmt.Sprintf("the link's directory %q is not inside the ledger", lk.Dir)}
	}
	if size, err := strconv.ParseUint(lk.Size, 10, 64); err != nil || size != r.Sealed {
		return &ledger.Error{Entry: -1, Reason: fmt.Sprintf("the link names a tree of %s entries, but its last checkpoint covers %d", lk.Size, r.Sealed)}
	}
	if want, err := base64.StdEncoding.DecodeString(lk.Root); err != nil || !bytes.Equal(want, r.Root) {
		return &ledger.Error{Entry: -1, Reason: "its root hash is not the one the link names"}
	}
	sum := sha256.Sum256(r.Checkpoint)
	if lk.Checkpoint != hex.EncodeToString(sum[:]) {
		return &ledger.Error{Entry: -1, Reason: "its last checkpoint is not the one the link names"}
	}
	if len(entries) == 0 || entries[0].Type != "session.start" {
		return &ledger.Error{Entry: 0, Reason: "it does not begin with session.start"}
	}
	sd, _ := entries[0].Data.(map[string]any)
	p, _ := sd["parent"].(map[string]any)
	if s, _ := p["session"].(string); s != lk.Session {
		return &ledger.Error{Entry: 0, Reason: fmt.Sprintf("its session.start names parent session %q, not %q", s, lk.Session)}
	}
	if c, _ := p["call_id"].(string); c != lk.Call {
		return &ledger.Error{Entry: 0, Reason: fmt.Sprintf("its session.start names spawn call %q, not %q", c, lk.Call)}
	}
	return nil
}
