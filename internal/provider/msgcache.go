package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/trussdev/truss/internal/model"
)

// Span is the transcript items [Start, End) one wire message is made of.
type Span struct{ Start, End int }

// MessageCache keeps the wire encoding of each message of the last request.
// A transcript only grows, so a turn need encode only the messages past the
// unchanged prefix; without this an adapter re-encodes the whole history
// every turn, a cost that grows with every turn of a session.
type MessageCache struct {
	mu    sync.Mutex
	items []model.Item
	enc   map[Span]encoded
}

type encoded struct {
	raw    json.RawMessage
	digest string
}

// Encoded is one message's encoding and its hex SHA-256.
type Encoded struct {
	Raw    json.RawMessage
	Digest string
}

// Encode returns the encoding of each span. A span that lies in the prefix
// of items unchanged since the last call, and that fresh does not demand
// anew, reuses its earlier encoding; the others are encoded with encode.
func (c *MessageCache) Encode(items []model.Item, spans []Span, encode func(i int) (json.RawMessage, error), fresh func(i int) bool) ([]Encoded, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prefix := 0
	for prefix < len(items) && prefix < len(c.items) && SameItem(items[prefix], c.items[prefix]) {
		prefix++
	}
	out := make([]Encoded, len(spans))
	next := make(map[Span]encoded, len(spans))
	for i, sp := range spans {
		e, ok := c.enc[sp]
		if !ok || sp.End > prefix || fresh(i) {
			raw, err := encode(i)
			if err != nil {
				return nil, fmt.Errorf("encode message %d: %w", i, err)
			}
			e = encoded{raw: raw, digest: digest(raw)}
		}
		out[i] = Encoded{Raw: e.raw, Digest: e.digest}
		if !fresh(i) {
			next[sp] = e
		}
	}
	c.items = append(c.items[:0], items...)
	c.enc = next
	return out, nil
}

// SameItem reports whether two transcript items are the same item.
func SameItem(a, b model.Item) bool {
	if a.Kind != b.Kind || a.Text != b.Text || a.Provider != b.Provider || a.Response != b.Response || string(a.Raw) != string(b.Raw) {
		return false
	}
	if a.Call != b.Call && (a.Call == nil || b.Call == nil || *a.Call != *b.Call) {
		return false
	}
	if a.Result != b.Result {
		if a.Result == nil || b.Result == nil {
			return false
		}
		x, y := a.Result, b.Result
		if x.CallID != y.CallID || x.Name != y.Name || x.Text != y.Text || x.IsError != y.IsError || string(x.Native) != string(y.Native) {
			return false
		}
	}
	return true
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

var (
	comma   = []byte(",")
	closing = []byte("]}")
)

// The digests of comma and closing, written out rather than computed at
// every start of the program (TestSeparatorDigests checks them).
const (
	commaDigest = "d03502c43d74a30b936740a9517dc4ea2b2ad7168caa0a774cefe793ce0b33e7"
	closeDigest = "95ce9902c1c1a114c717088295c2e2285b7e2abf611f884f2aba7d8e5430435e"
)

// JoinBody splices the messages into an encoded request object that has
// none: head without its closing brace, extra fields, then the array named
// key ("messages", "input"). It returns the body and the wire parts it is
// the concatenation of (the prefix, each message, the separators), with
// their digests.
func JoinBody(head []byte, extra, key string, msgs []Encoded) ([]byte, *model.Wire, error) {
	if len(head) < 2 || head[len(head)-1] != '}' {
		return nil, nil, fmt.Errorf("encode request: unexpected head %.80q", head)
	}
	prefix := make([]byte, 0, len(head)+len(extra)+16)
	prefix = append(prefix, head[:len(head)-1]...)
	if len(head) > 2 {
		prefix = append(prefix, ',')
	}
	prefix = append(prefix, extra...)
	prefix = append(prefix, '"')
	prefix = append(prefix, key...)
	prefix = append(prefix, `":[`...)
	w := &model.Wire{Parts: make([][]byte, 0, 2*len(msgs)+2), Digests: make([]string, 0, 2*len(msgs)+2)}
	add := func(b []byte, d string) {
		w.Parts = append(w.Parts, b)
		w.Digests = append(w.Digests, d)
	}
	add(prefix, digest(prefix))
	size := len(prefix) + 2
	for i, m := range msgs {
		if i > 0 {
			add(comma, commaDigest)
		}
		add(m.Raw, m.Digest)
		size += len(m.Raw) + 1
	}
	add(closing, closeDigest)
	buf := make([]byte, 0, size)
	for _, p := range w.Parts {
		buf = append(buf, p...)
	}
	return buf, w, nil
}

// HeadCache keeps the encoded head of the last request: everything but the
// conversation. A session's model, system prompt, output limit and tools do
// not change from turn to turn, so the SDK need not build and encode them
// (tool schemas included) every turn. Tool declarations are recognized by
// identity — the slice a surface.Set shares, which no one changes.
type HeadCache struct {
	mu   sync.Mutex
	key  headKey
	head []byte
}

type headKey struct {
	model, system, extra string
	maxTokens            int
	tools                *model.ToolSpec
	ntools               int
}

// Get returns the head for req and extra (whatever else the head depends
// on, such as a previous response id), calling build when it changed.
func (c *HeadCache) Get(req *model.Request, extra string, build func() ([]byte, error)) ([]byte, error) {
	k := headKey{model: req.Model, system: req.System, extra: extra, maxTokens: req.MaxTokens, ntools: len(req.Tools)}
	if len(req.Tools) > 0 {
		k.tools = &req.Tools[0]
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.head != nil && c.key == k {
		return c.head, nil
	}
	head, err := build()
	if err != nil {
		return nil, err
	}
	c.key, c.head = k, head
	return head, nil
}
