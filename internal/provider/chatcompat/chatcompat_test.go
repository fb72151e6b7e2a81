package chatcompat

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/trussdev/truss/internal/apispec"
	"github.com/trussdev/truss/internal/model"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestBodyGolden(t *testing.T) {
	c := New(Config{BaseURL: "http://127.0.0.1/v1"})
	req := model.SampleRequest()
	b, _, err := c.body(req)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.RequestBody("/chat/completions", "POST", b); err != nil {
		t.Fatalf("the request does not match the API description: %v", err)
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	if *update {
		os.WriteFile("testdata/request.golden.json", buf.Bytes(), 0o644)
	}
	want, _ := os.ReadFile("testdata/request.golden.json")
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("request differs (run with -update to accept):\n%s", buf.Bytes())
	}
	// A second turn with one more item re-encodes only what is new and
	// gives the same bytes for the shared prefix.
	req.Items = append(req.Items, model.Item{Kind: model.KindAssistant, Text: "More."})
	b2, _, err := c.body(req)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b2, b[:len(b)-2]) {
		t.Errorf("the cached prefix changed:\n%s\n%s", b, b2)
	}
	// A history that differs in the middle is re-encoded from there.
	req.Items[5].Result = &model.ToolResult{CallID: "call_1", Name: "read_file", Text: "changed"}
	b3, _, _ := c.body(req)
	if !bytes.Contains(b3, []byte(`"changed"`)) {
		t.Error("a changed item was served from the cache")
	}
}

// TestMaxCompletionTokens: the output limit is max_tokens for a compatible
// server and max_completion_tokens for OpenAI's own API (MaxCompletionTokens),
// and either body matches the API description.
func TestMaxCompletionTokens(t *testing.T) {
	doc, err := apispec.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		own       bool
		want, not string
	}{
		{false, `"max_tokens":`, `"max_completion_tokens":`},
		{true, `"max_completion_tokens":`, `"max_tokens":`},
	} {
		c := New(Config{BaseURL: "http://127.0.0.1/v1", MaxCompletionTokens: tc.own})
		req := model.SampleRequest()
		req.MaxTokens = 128000
		b, _, err := c.body(req)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(b, []byte(tc.want+"128000")) || bytes.Contains(b, []byte(tc.not)) {
			t.Errorf("MaxCompletionTokens %v: %s", tc.own, b)
		}
		if err := doc.RequestBody("/chat/completions", "POST", b); err != nil {
			t.Errorf("MaxCompletionTokens %v: the request does not match the API description: %v", tc.own, err)
		}
	}
}
