package ollama

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/trussdev/truss/internal/model"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	buf.WriteByte('\n')
	if *update {
		os.WriteFile(name, buf.Bytes(), 0o644)
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs (run with -update to accept):\n%s", name, buf.Bytes())
	}
}

func TestEncodeGolden(t *testing.T) {
	b, err := (&Client{}).encode(model.SampleRequest())
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/request.golden.json", b)
}

func TestEncodeRejectsTypedTools(t *testing.T) {
	req := &model.Request{Model: "m", Tools: []model.ToolSpec{{Kind: model.ToolTyped, Name: "bash", Type: "bash_20250124"}}}
	if _, err := (&Client{}).encode(req); err == nil {
		t.Fatal("a typed tool was accepted")
	}
}

func TestHostURL(t *testing.T) {
	for in, want := range map[string]string{"": DefaultHost, "127.0.0.1:11434": "http://127.0.0.1:11434", "https://o.example/": "https://o.example"} {
		if got := HostURL(in); got != want {
			t.Errorf("HostURL(%q) = %q, want %q", in, got, want)
		}
	}
}
