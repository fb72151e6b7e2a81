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

// PortableSchema rewrites a JSON schema from elsewhere (an MCP server's
// tool) into the form every provider accepts as function parameters: local
// "$ref"s ("#/$defs/X", "#/definitions/X") are inlined (a recursive one
// becomes an unconstrained schema), the meta keywords "$schema", "$id",
// "$anchor", "$comment", "$defs" and "definitions" are dropped, and the root
// is an object with properties. Anything that is not a JSON object becomes
// the empty object schema.
func PortableSchema(schema json.RawMessage) json.RawMessage {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil || root == nil {
		return json.RawMessage(`{"properties":{},"type":"object"}`)
	}
	defs := map[string]any{}
	for _, key := range []string{"definitions", "$defs"} {
		if d, ok := root[key].(map[string]any); ok {
			for name, v := range d {
				defs["#/"+key+"/"+name] = v
			}
		}
	}
	out, _ := portable(root, defs, nil).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	out["type"] = "object"
	if _, ok := out["properties"].(map[string]any); !ok {
		out["properties"] = map[string]any{}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{"properties":{},"type":"object"}`)
	}
	return b
}

var metaKeywords = []string{"$schema", "$id", "$anchor", "$comment", "$defs", "definitions"}

func portable(v any, defs map[string]any, seen []string) any {
	switch x := v.(type) {
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			target, known := defs[ref]
			if !known || slices.Contains(seen, ref) || len(seen) > 16 {
				return map[string]any{}
			}
			return portable(target, defs, append(seen, ref))
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			if slices.Contains(metaKeywords, k) {
				continue
			}
			out[k] = portable(val, defs, seen)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = portable(val, defs, seen)
		}
		return out
	}
	return v
}

// SubsetSchema keeps only the keywords every tool-calling server reads
// (Ollama's tool schema among them): type, description, enum, items,
// properties and required. A type list ("type": ["null", "array"]) becomes
// its first non-null type; alternatives (anyOf, oneOf) become their first
// non-null alternative.
func SubsetSchema(schema json.RawMessage) (json.RawMessage, error) {
	var v map[string]any
	if err := json.Unmarshal(schema, &v); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return json.Marshal(subset(v))
}

func subset(s map[string]any) map[string]any {
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok {
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && m["type"] != "null" {
					merged := subset(m)
					if d, ok := s["description"].(string); ok && merged["description"] == nil {
						merged["description"] = d
					}
					return merged
				}
			}
		}
	}
	out := map[string]any{}
	switch t := s["type"].(type) {
	case string:
		out["type"] = t
	case []any:
		for _, x := range t {
			if name, ok := x.(string); ok && name != "null" {
				out["type"] = name
				break
			}
		}
	}
	for _, k := range []string{"description", "enum", "required"} {
		if v, ok := s[k]; ok {
			out[k] = v
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = subset(items)
	}
	if props, ok := s["properties"].(map[string]any); ok {
		np := make(map[string]any, len(props))
		for name, p := range props {
			if m, ok := p.(map[string]any); ok {
				np[name] = subset(m)
			}
		}
		out["properties"] = np
		if out["type"] == nil {
			out["type"] = "object"
		}
	}
	return out
}
