// Package apispec validates JSON bodies and stream events against the
// providers' official OpenAPI descriptions, vendored in specs/. It is meant
// for tests: every request Truss sends to a simulated model and every body or
// event the simulator authors is checked against the real schema. The truss
// binary does not link it (kin-openapi's JSON Schema compiler costs every
// start about 4 ms and 1.7 MB, the descriptions 4.6 MB); a binary built with
// -tags apispec, as the tests build it, gives its built-in simulated model
// this package's Checker.
package apispec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed specs/openai-openapi.yaml
var openaiSpec []byte

//go:embed specs/anthropic-openapi.json
var anthropicSpec []byte

// Doc is a loaded API description.
type Doc struct {
	doc  *openapi3.T
	opts []openapi3.SchemaValidationOption
}

var (
	openaiOnce sync.Once
	openaiDoc  *Doc
	openaiErr  error
)

// OpenAI returns the OpenAI description, loaded once per process.
func OpenAI() (*Doc, error) {
	openaiOnce.Do(func() {
		l := openapi3.NewLoader()
		d, err := l.LoadFromData(openaiSpec)
		if err != nil {
			openaiErr = fmt.Errorf("load the OpenAI description: %w", err)
			return
		}
		// The document declares OpenAPI 3.1 but marks nullable fields with
		// the 3.0 keyword "nullable: true" (finish_reason, logprobs...),
		// which JSON Schema 2020 ignores; kin-openapi's OpenAPI validator
		// honours it, and the real API does send those nulls.
		openaiDoc = &Doc{doc: d}
	})
	return openaiDoc, openaiErr
}

var (
	anthropicOnce sync.Once
	anthropicDoc  *Doc
	anthropicErr  error
)

// Anthropic returns the Anthropic description, loaded once per process.
func Anthropic() (*Doc, error) {
	anthropicOnce.Do(func() {
		d, err := openapi3.NewLoader().LoadFromData(anthropicSpec)
		if err != nil {
			anthropicErr = fmt.Errorf("load the Anthropic description: %w", err)
			return
		}
		// This document is written in JSON Schema 2020 terms ({"type":
		// "null"} alternatives, const tool types), which only the 2020
		// validator honours; in OpenAPI 3.0 mode every typed tool would
		// also match the custom tool schema.
		anthropicDoc = &Doc{doc: d, opts: []openapi3.SchemaValidationOption{openapi3.EnableJSONSchema2020()}}
	})
	return anthropicDoc, anthropicErr
}

// Schema validates a JSON document against the named component schema.
func (d *Doc) Schema(name string, body []byte) error {
	ref, ok := d.doc.Components.Schemas[name]
	if !ok || ref.Value == nil {
		return fmt.Errorf("no schema %q", name)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("%s: not JSON: %w", name, err)
	}
	if err := ref.Value.VisitJSON(v, d.opts...); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// RequestBody validates a request body against the JSON request schema of
// the operation at path and method ("/chat/completions", "POST").
func (d *Doc) RequestBody(path, method string, body []byte) error {
	item := d.doc.Paths.Find(path)
	if item == nil {
		return fmt.Errorf("no path %s", path)
	}
	op := item.GetOperation(method)
	if op == nil || op.RequestBody == nil || op.RequestBody.Value == nil {
		return fmt.Errorf("no request body for %s %s", method, path)
	}
	mt := op.RequestBody.Value.Content.Get("application/json")
	if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
		return fmt.Errorf("no JSON request schema for %s %s", method, path)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("request body is not JSON: %w", err)
	}
	if err := NoDuplicateKeys(body); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if err := mt.Schema.Value.VisitJSON(v, d.opts...); err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	return nil
}

// NoDuplicateKeys reports an object key that occurs twice in one object,
// which decoders silently resolve (usually to the last one).
func NoDuplicateKeys(body []byte) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	type frame struct {
		object bool
		keys   map[string]bool
		expect bool // the next string token is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.expect = true
				}
				stack = append(stack, &frame{object: t == '{', keys: map[string]bool{}, expect: t == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		case string:
			if top != nil && top.object && top.expect {
				if top.keys[t] {
					return fmt.Errorf("duplicate key %q", t)
				}
				top.keys[t] = true
				top.expect = false
				continue
			}
		}
		if top != nil && top.object {
			top.expect = true
		}
	}
}

// Event validates a stream event against the component schema whose
// "type" property is the single value the event's "type" names (among
// schemas named ...Event), so that a failure names the exact schema instead
// of a union's "doesn't match any schema".
func (d *Doc) Event(body []byte) error {
	var ev struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("event: not JSON: %w", err)
	}
	var names []string
	for name, ref := range d.doc.Components.Schemas {
		if ref.Value == nil || !strings.HasSuffix(name, "Event") {
			continue
		}
		p := ref.Value.Properties["type"]
		if p == nil || p.Value == nil || len(p.Value.Enum) != 1 || p.Value.Enum[0] != ev.Type {
			continue
		}
		names = append(names, name)
	}
	if len(names) == 0 {
		return fmt.Errorf("no event schema has type %q", ev.Type)
	}
	// The released schema, not a beta twin of it.
	sort.Slice(names, func(i, j int) bool {
		bi, bj := strings.HasPrefix(names[i], "Beta"), strings.HasPrefix(names[j], "Beta")
		if bi != bj {
			return bj
		}
		return names[i] < names[j]
	})
	return d.Schema(names[0], body)
}

// Checker validates request bodies against the two vendored descriptions.
// It satisfies sim.SpecChecker; its zero value is ready to use.
type Checker struct{}

// CheckRequest validates body as the JSON request of POST path in the
// description of api ("openai" or "anthropic"). The error, when the body
// does not validate, is one line naming the most specific failure
// ("messages.0.content.0.text: minLength: got 0, want 1").
func (Checker) CheckRequest(api, path string, body []byte) error {
	load := OpenAI
	switch api {
	case "openai":
	case "anthropic":
		load = Anthropic
	default:
		return fmt.Errorf("no API description named %q", api)
	}
	doc, err := load()
	if err != nil {
		return fmt.Errorf("the simulator cannot load the API description: %w", err)
	}
	err = doc.RequestBody(path, "POST", body)
	if err == nil {
		return nil
	}
	return errors.New(shortFailure(err))
}

// shortFailure returns the deepest failure a validation error names, as
// "where: what" with the JSON pointer in dotted form, or the error's first
// line when it names none.
func shortFailure(err error) string {
	best, bestPath := "", ""
	for _, m := range failure().FindAllStringSubmatch(err.Error(), -1) {
		if len(m[1]) >= len(bestPath) {
			bestPath, best = m[1], m[2]
		}
	}
	if best == "" {
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return msg
	}
	where := strings.ReplaceAll(strings.TrimPrefix(bestPath, "/"), "/", ".")
	if where == "" {
		return best
	}
	return where + ": " + best
}

// failure matches one failure in a validation error: the JSON pointer of
// the value and what is wrong with it.
var failure = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`at '(/[^']*)': ([^\n]*)`) })
