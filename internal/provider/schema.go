package provider

import (
	"encoding/json"
	"fmt"
	"slices"
)

// StrictSchema rewrites a function tool's JSON schema to the rules of
// OpenAI's strict mode (structured outputs): every object has
// "additionalProperties": false and lists all its properties in "required";
// a property that was optional becomes nullable instead ("type": [T,
// "null"], or an anyOf with {"type": "null"}). Nested objects, array items
// and anyOf alternatives are rewritten the same way. The input is not
// changed.
func StrictSchema(schema json.RawMessage) (json.RawMessage, error) {
	var v map[string]any
	if err := json.Unmarshal(schema, &v); err != nil {
		return nil, fmt.Errorf("strict schema: %w", err)
	}
	return json.Marshal(strictObject(v))
}

func strictObject(s map[string]any) map[string]any {
	out := make(map[string]any, len(s)+2)
	for k, v := range s {
		out[k] = v
	}
	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = strictObject(items)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok {
			n := make([]any, len(alts))
			for i, a := range alts {
				if m, ok := a.(map[string]any); ok {
					n[i] = strictObject(m)
				} else {
					n[i] = a
				}
			}
			out[key] = n
		}
	}
	props, ok := s["properties"].(map[string]any)
	if !ok && s["type"] != "object" {
		return out
	}
	var required []string
	if r, ok := s["required"].([]any); ok {
		for _, x := range r {
			if name, ok := x.(string); ok {
				required = append(required, name)
			}
		}
	}
	names := make([]string, 0, len(props))
	np := make(map[string]any, len(props))
	for name, p := range props {
		names = append(names, name)
		m, ok := p.(map[string]any)
		if !ok {
			np[name] = p
			continue
		}
		m = strictObject(m)
		if !slices.Contains(required, name) {
			m = nullable(m)
		}
		np[name] = m
	}
	slices.Sort(names)
	out["properties"] = np
	out["required"] = names
	out["additionalProperties"] = false
	return out
}

// nullable lets a property schema also accept null.
func nullable(s map[string]any) map[string]any {
	switch t := s["type"].(type) {
	case string:
		if t != "null" {
			s["type"] = []any{t, "null"}
		}
		if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, any(nil)) {
			s["enum"] = append(slices.Clone(enum), nil)
		}
		return s
	case []any:
		if !slices.Contains(t, any("null")) {
			s["type"] = append(slices.Clone(t), "null")
		}
		return s
	}
	if alts, ok := s["anyOf"].([]any); ok {
		s["anyOf"] = append(slices.Clone(alts), map[string]any{"type": "null"})
		return s
	}
	return map[string]any{"anyOf": []any{s, map[string]any{"type": "null"}}}
}
