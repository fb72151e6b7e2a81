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
