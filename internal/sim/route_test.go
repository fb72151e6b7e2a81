package sim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestFirstUserText(t *testing.T) {
	for body, want := range map[string]string{
		`{"messages":[{"role":"system","content":"sys"},{"role":"user","content":"TASK one"}]}`:                  "TASK one",
		`{"messages":[{"role":"user","content":[{"type":"text","text":"TASK "},{"type":"text","text":"two"}]}]}`: "TASK two",
		`{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"TASK three"}]}]}`:     "TASK three",
		`{"input":"TASK four"}`: "TASK four",
		`{"input":[{"type":"function_call_output","call_id":"c","output":"x"}]}`: "",
		`not json`: "",
	} {
		if got := firstUserText([]byte(body)); got != want {
			t.Errorf("%s: got %q, want %q", body, got, want)
		}
	}
}

func TestRouteLongestKey(t *testing.T) {
	s, err := ParseScript([]byte(`{"steps":[{"say":"main"}],"agents":{"TASK":{"steps":[{"say":"short"}]},"TASK two":{"steps":[{"say":"long"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := strict(s)
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"TASK two, please"}]}`: "TASK two",
		`{"messages":[{"role":"user","content":"TASK one"}]}`:         "TASK",
		`{"messages":[{"role":"user","content":"other"}]}`:            "",
	} {
		if key, _ := srv.route([]byte(body)); key != want {
			t.Errorf("%s: routed to %q, want %q", body, key, want)
		}
	}
	if _, err := ParseScript([]byte(`{"steps":[],"agents":{"":{"steps":[]}}}`)); err == nil {
		t.Error("an empty agent key was accepted")
	}
	if _, err := ParseScript([]byte(`{"steps":[],"agents":{"A":{"steps":[{"actions":[{"kind":"spawn"}]}]}}}`)); err == nil {
		t.Error("a spawn without a task was accepted")
	}
}

// TestLatency: a script's latency passes before the model answers.
func TestLatency(t *testing.T) {
	s, err := ParseScript([]byte(`{"latency_ms":40,"steps":[{"say":"one"},{"say":"two"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(strict(s))
	defer srv.Close()
	body := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	post := func(ctx context.Context) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Anthropic-Version", "2023-06-01")
		return http.DefaultClient.Do(req)
	}
	t0 := time.Now()
	resp, err := post(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if d := time.Since(t0); resp.StatusCode != 200 || d < 40*time.Millisecond {
		t.Fatalf("status %d after %v, want 200 after at least 40ms", resp.StatusCode, d)
	}
}
