package ollama

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
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
	for in, want := range map[string]string{
		"":                   DefaultHost,
		"127.0.0.1:11434":    "http://127.0.0.1:11434",
		"https://o.example/": "https://o.example",
		// Ollama's rule: no scheme and no port is port 11434.
		"0.0.0.0":           "http://0.0.0.0:11434",
		" gpu-box ":         "http://gpu-box:11434",
		"[::1]":             "http://[::1]:11434",
		"gpu-box:8080/api/": "http://gpu-box:8080/api",
		"gpu-box/sub":       "http://gpu-box:11434/sub",
		":11500":            "http://:11500",
		// With a scheme, the URL as given: its scheme's port.
		"http://gpu-box": "http://gpu-box",
	} {
		if got := HostURL(in); got != want {
			t.Errorf("HostURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestAnswersOfOtherServers: an answer without Ollama's {"error": ...} and
// with a status that asks for no retry, or a 200 whose body is not
// Ollama's stream, is from a server that is not Ollama (ErrNotAPI, no
// contact with the model), said with what was asked, the status and the
// body's first line; Ollama's own errors keep their kind and text, and a
// proxy's 502 stays a server error, said as precisely.
func TestAnswersOfOtherServers(t *testing.T) {
	const html = "<!DOCTYPE html>\n<html><body>Not here</body></html>\n"
	for _, tc := range []struct {
		status int
		body   string
		kind   provider.ErrorKind
		msg    string
	}{
		{404, "", provider.ErrNotAPI, `the server at URL does not look like Ollama: POST /api/chat answered 404 Not Found with an empty body (is OLLAMA_HOST the address of an Ollama server?)`},
		{404, html, provider.ErrNotAPI, `the server at URL does not look like Ollama: POST /api/chat answered 404 Not Found: "<!DOCTYPE html> …" (is OLLAMA_HOST the address of an Ollama server?)`},
		{405, "Method Not Allowed", provider.ErrNotAPI, `the server at URL does not look like Ollama: POST /api/chat answered 405 Method Not Allowed: "Method Not Allowed" (is OLLAMA_HOST the address of an Ollama server?)`},
		{501, "Unsupported method ('POST')", provider.ErrNotAPI, `the server at URL does not look like Ollama: POST /api/chat answered 501 Not Implemented: "Unsupported method ('POST')" (is OLLAMA_HOST the address of an Ollama server?)`},
		{200, html, provider.ErrNotAPI, `the server at URL does not look like Ollama: POST /api/chat answered 200 OK: "<!DOCTYPE html>" (is OLLAMA_HOST the address of an Ollama server?)`},
		{404, `{"error":"model \"m\" not found, try pulling it first"}`, provider.ErrNotFound, `model "m" not found, try pulling it first`},
		{500, `{"error":"llama runner process has terminated"}`, provider.ErrServer, `llama runner process has terminated`},
		{500, `{"error":"model requires more system memory (21.4 GiB) than is available (7.6 GiB)"}`, provider.ErrServer,
			`model requires more system memory (21.4 GiB) than is available (7.6 GiB); use a smaller model or quantization, or a smaller --context`},
		{502, html, provider.ErrServer, `POST /api/chat answered 502 Bad Gateway: "<!DOCTYPE html> …"`},
		{401, "", provider.ErrAuth, `POST /api/chat answered 401 Unauthorized with an empty body`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		}))
		contact := &provider.Contact{}
		c := &Client{Host: srv.URL, Retry: provider.RetryPolicy{MaxAttempts: 1, Contact: contact}}
		_, err := c.Turn(context.Background(), &model.Request{Model: "m"}, nil)
		srv.Close()
		var pe *provider.Error
		if !errors.As(err, &pe) {
			t.Fatalf("%d %q: %v, want a *provider.Error", tc.status, tc.body, err)
		}
		if msg := strings.ReplaceAll(pe.Message, srv.URL, "URL"); pe.Kind != tc.kind || pe.Status != tc.status || msg != tc.msg {
			t.Errorf("%d %q: %s, HTTP %d, %q\nwant %s, %q", tc.status, tc.body, pe.Kind, pe.Status, msg, tc.kind, tc.msg)
		}
		if final := strings.Contains(tc.body, "more system memory"); pe.Retryable() == final && tc.kind == provider.ErrServer {
			t.Errorf("%d %q: retryable %v", tc.status, tc.body, pe.Retryable())
		}
		notAPI := tc.kind == provider.ErrNotAPI
		if provider.Unreached(err) != notAPI || contact.Answered() == notAPI {
			t.Errorf("%d %q: unreached %v, contact %v", tc.status, tc.body, provider.Unreached(err), contact.Answered())
		}
	}
}

// TestAPIKey: with an APIKey every request (a turn, the context probe, the
// model list) carries "Authorization: Bearer KEY"; without one, none.
func TestAPIKey(t *testing.T) {
	for _, key := range []string{"", "k-1"} {
		var got []string
		hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = append(got, r.URL.Path+" "+r.Header.Get("Authorization"))
			w.Header().Set("Content-Type", "application/json")
			switch r.URL.Path {
			case "/api/chat":
				io.WriteString(w, `{"model":"m","message":{"role":"assistant","content":"ok"},"done":true,"done_reason":"stop"}`+"\n")
			case "/api/show":
				io.WriteString(w, `{"model_info":{"general.architecture":"llama","llama.context_length":8192}}`)
			case "/api/tags":
				io.WriteString(w, `{"models":[]}`)
			}
		}))
		c := &Client{Host: hs.URL, APIKey: key, Retry: provider.RetryPolicy{MaxAttempts: 1}}
		ctx := context.Background()
		if _, err := c.Turn(ctx, &model.Request{Model: "m", Items: []model.Item{{Kind: model.KindUser, Text: "hi"}}}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := c.ContextLength(ctx, "m"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Models(ctx); err != nil {
			t.Fatal(err)
		}
		hs.Close()
		want := ""
		if key != "" {
			want = "Bearer " + key
		}
		if len(got) != 3 {
			t.Fatalf("key %q: requests %q", key, got)
		}
		for _, g := range got {
			if _, auth, _ := strings.Cut(g, " "); auth != want {
				t.Errorf("key %q: %s, want Authorization %q", key, g, want)
			}
		}
	}
}

// TestShownHostMasksPassword: an OLLAMA_HOST with a password (Ollama
// behind a proxy with basic authentication) is shown without it.
func TestShownHostMasksPassword(t *testing.T) {
	for in, want := range map[string]string{
		"http://u:hunter2@127.0.0.1:1": "http://u:xxxxx@127.0.0.1:1",
		"127.0.0.1:1":                  "http://127.0.0.1:1",
	} {
		if got := shownHost(in); got != want {
			t.Errorf("shownHost(%q) = %q, want %q", in, got, want)
		}
	}
}
