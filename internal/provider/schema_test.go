package provider

import (
	"encoding/json"
	"testing"
)

func TestStrictSchema(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path"]}`,
			`{"additionalProperties":false,"properties":{"limit":{"type":["integer","null"]},"path":{"type":"string"}},"required":["limit","path"],"type":"object"}`},
		{`{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"]},"opts":{"type":"object","properties":{"x":{"type":"boolean"}}}}}`,
			`{"additionalProperties":false,"properties":{"mode":{"enum":["a","b",null],"type":["string","null"]},"opts":{"additionalProperties":false,"properties":{"x":{"type":["boolean","null"]}},"required":["x"],"type":["object","null"]}},"required":["mode","opts"],"type":"object"}`},
		{`{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}},"u":{"anyOf":[{"type":"string"},{"type":"number"}]}},"required":["items"]}`,
			`{"additionalProperties":false,"properties":{"items":{"items":{"additionalProperties":false,"properties":{"n":{"type":"number"}},"required":["n"],"type":"object"},"type":"array"},"u":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"null"}]}},"required":["items","u"],"type":"object"}`},
		{`{"type":"object"}`, `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}`},
	}
	for _, tc := range tests {
		got, err := StrictSchema(json.RawMessage(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, got, tc.want)
		}
	}
	if _, err := StrictSchema(json.RawMessage(`[`)); err == nil {
		t.Error("no error for a malformed schema")
	}
}

func TestPortableAndSubsetSchema(t *testing.T) {
	for _, tc := range []struct{ in, portable, subset string }{
		{`[1]`, `{"properties":{},"type":"object"}`, `{"properties":{},"type":"object"}`},
		{`{"$schema":"x","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":["null","string"],"minLength":1}}}`,
			`{"properties":{"a":{"minLength":1,"type":["null","string"]}},"type":"object"}`,
			`{"properties":{"a":{"type":"string"}},"type":"object"}`},
		{`{"properties":{"n":{"$ref":"#/definitions/N"}},"definitions":{"N":{"properties":{"next":{"$ref":"#/definitions/N"}}}}}`,
			`{"properties":{"n":{"properties":{"next":{}}}},"type":"object"}`,
			`{"properties":{"n":{"properties":{"next":{}},"type":"object"}},"type":"object"}`},
		{`{"properties":{"m":{"anyOf":[{"type":"null"},{"type":"integer","enum":[1,2]}],"description":"d"}},"required":["m"]}`,
			`{"properties":{"m":{"anyOf":[{"type":"null"},{"enum":[1,2],"type":"integer"}],"description":"d"}},"required":["m"],"type":"object"}`,
			`{"properties":{"m":{"description":"d","enum":[1,2],"type":"integer"}},"required":["m"],"type":"object"}`},
	} {
		p := PortableSchema(json.RawMessage(tc.in))
		if string(p) != tc.portable {
			t.Errorf("PortableSchema(%s) = %s, want %s", tc.in, p, tc.portable)
		}
		sub, err := SubsetSchema(p)
		if err != nil || string(sub) != tc.subset {
			t.Errorf("SubsetSchema(%s) = %s, %v; want %s", p, sub, err, tc.subset)
		}
	}
}

// FuzzPortableSchema: whatever a server sends, the portable schema is an
// object schema every normalizer after it takes.
func FuzzPortableSchema(f *testing.F) {
	f.Add([]byte(`{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`))
	f.Add([]byte(`{"$ref":"#/definitions/X","definitions":{"X":{"$ref":"#/definitions/X"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := PortableSchema(b)
		var m map[string]any
		if err := json.Unmarshal(p, &m); err != nil || m["type"] != "object" {
			t.Fatalf("PortableSchema(%q) = %s", b, p)
		}
		if _, ok := m["properties"].(map[string]any); !ok {
			t.Fatalf("no properties: %s", p)
		}
		if _, err := SubsetSchema(p); err != nil {
			t.Fatalf("SubsetSchema(%s): %v", p, err)
		}
		if _, err := StrictSchema(p); err != nil {
			t.Fatalf("StrictSchema(%s): %v", p, err)
		}
	})
}
