package provider

import (
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
	enc   map[Span]json.RawMessage
}

// Encode returns the encoding of each span. A span that lies in the prefix
// of items unchanged since the last call, and that fresh does not demand
// anew, reuses its earlier encoding; the others are encoded with encode.
func (c *MessageCache) Encode(items []model.Item, spans []Span, encode func(i int) (json.RawMessage, error), fresh func(i int) bool) ([]json.RawMessage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prefix := 0
	for prefix < len(items) && prefix < len(c.items) && SameItem(items[prefix], c.items[prefix]) {
		prefix++
	}
	out := make([]json.RawMessage, len(spans))
	next := make(map[Span]json.RawMessage, len(spans))
	for i, sp := range spans {
		if raw, ok := c.enc[sp]; ok && sp.End <= prefix && !fresh(i) {
			out[i] = raw
		} else {
			raw, err := encode(i)
			if err != nil {
				return nil, fmt.Errorf("encode message %d: %w", i, err)
			}
			out[i] = raw
		}
		if !fresh(i) {
			next[sp] = out[i]
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

// JoinBody splices the messages into an encoded request object that has
// none: head without its closing brace, extra fields, then "messages".
func JoinBody(head []byte, extra string, msgs []json.RawMessage) ([]byte, error) {
	if len(head) < 2 || head[len(head)-1] != '}' {
		return nil, fmt.Errorf("encode request: unexpected head %.80q", head)
	}
	size := len(head) + len(extra) + 16
	for _, m := range msgs {
		size += len(m) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, head[:len(head)-1]...)
	if len(head) > 2 {
		buf = append(buf, ',')
	}
	buf = append(buf, extra...)
	buf = append(buf, `"messages":[`...)
	for i, m := range msgs {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, m...)
	}
	return append(buf, "]}"...), nil
}
