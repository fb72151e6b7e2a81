package sim_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestTokenRequired: with a Token, a request on any route that does not
// carry it (none, or another key, in any of the places a client sends its
// key) is answered with the dialect's own authentication error, is not
// recorded, and uses up neither a step nor a model list fault; the
// request that then carries it plays the script's first step.
func TestTokenRequired(t *testing.T) {
	sc, err := sim.ParseScript([]byte(`{"steps": [{"say": "first"}, {"say": "second"}],
		"model_faults": [{"kind": "status", "status": 500}]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := simtest.New(sc)
	srv.Token = sim.NewToken()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base, err := srv.Listen(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const (
		msgs    = `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
		chat    = `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`
		resp    = `{"model":"gpt-5.2","input":"hi"}`
		gem     = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
		vertex  = `{"anthropic_version":"vertex-2023-10-16","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
		ollama  = `{"model":"llama3","messages":[{"role":"user","content":"hi"}]}`
		bedrock = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`
	)
	anthropic := map[string]string{"Anthropic-Version": "2023-06-01"}
	type req struct {
		method, path, body string
		header             map[string]string
	}
	for _, tc := range []struct {
		name string
		req
		status int
		// want is a JSON path of the error body ("error.type") and its value.
		want [2]string
	}{
		{"messages without a key", req{"POST", "/v1/messages", msgs, anthropic}, 401, [2]string{"error.message", "x-api-key header is required"}},
		{"messages with another key", req{"POST", "/v1/messages", msgs, with(anthropic, "X-Api-Key", "sk-ant-guess")}, 401, [2]string{"error.type", "authentication_error"}},
		{"messages with the key as a bearer", req{"POST", "/v1/messages", msgs, with(anthropic, "Authorization", "Bearer sk-ant-guess")}, 401, [2]string{"error.type", "authentication_error"}},
		{"anthropic model list", req{"GET", "/v1/models", "", with(anthropic, "X-Api-Key", "x")}, 401, [2]string{"error.message", "invalid x-api-key"}},
		{"responses without a key", req{"POST", "/v1/responses", resp, nil}, 401, [2]string{"error.type", "invalid_request_error"}},
		{"responses with another key", req{"POST", "/v1/responses", resp, map[string]string{"Authorization": "Bearer sk-guess"}}, 401, [2]string{"error.code", "invalid_api_key"}},
		{"chat completions", req{"POST", "/v1/chat/completions", chat, map[string]string{"Authorization": "Bearer sk-guess"}}, 401, [2]string{"error.code", "invalid_api_key"}},
		{"openai model list", req{"GET", "/v1/models", "", nil}, 401, [2]string{"error.type", "invalid_request_error"}},
		{"azure", req{"POST", "/openai/v1/responses", resp, map[string]string{"Api-Key": "guess"}}, 401, [2]string{"error.code", "401"}},
		{"gemini without a key", req{"POST", "/v1beta/models/gemini-2.5-pro:generateContent", gem, nil}, 403, [2]string{"error.status", "PERMISSION_DENIED"}},
		{"gemini with another key", req{"POST", "/v1beta/models/gemini-2.5-pro:generateContent?key=guess", gem, nil}, 400, [2]string{"error.status", "INVALID_ARGUMENT"}},
		{"vertex", req{"POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5:rawPredict", vertex, map[string]string{"Authorization": "Bearer ya29.guess"}}, 401, [2]string{"error.status", "UNAUTHENTICATED"}},
		{"token endpoint", req{"POST", "/token", "grant_type=refresh_token&client_id=a&client_secret=b&refresh_token=c", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}, 401, [2]string{"error", "invalid_client"}},
		{"ollama chat", req{"POST", "/api/chat", ollama, nil}, 401, [2]string{"error", "unauthorized"}},
		{"ollama tags", req{"GET", "/api/tags", "", nil}, 401, [2]string{"error", "unauthorized"}},
		{"ollama version", req{"GET", "/api/version", "", nil}, 401, [2]string{"error", "unauthorized"}},
		{"a path not served", req{"GET", "/nothing", "", nil}, 401, [2]string{"error.type", "invalid_request_error"}},
		{"bedrock without a credential", req{"POST", "/model/anthropic.claude-sonnet-4-5-v1:0/invoke", bedrock, nil}, 403, [2]string{"message", "Missing Authentication Token"}},
		{"bedrock with another API key", req{"POST", "/model/anthropic.claude-sonnet-4-5-v1:0/invoke", bedrock, map[string]string{"Authorization": "Bearer ABSKguess"}}, 403, [2]string{"message", "Invalid API Key format: Must start with pre-defined prefix"}},
		{"bedrock signed with the account's published secret", req{"POST", "/model/anthropic.claude-sonnet-4-5-v1:0/invoke", bedrock, sigV4(t, base, "/model/anthropic.claude-sonnet-4-5-v1:0/invoke", bedrock)}, 403, [2]string{"message", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := do(t, base, tc.method, tc.path, tc.body, tc.header)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if got := field(t, body, tc.want[0]); got != tc.want[1] {
				t.Errorf("%s = %q, want %q in %s", tc.want[0], got, tc.want[1], body)
			}
		})
	}
	if n, m := len(srv.Requests()), len(srv.ModelRequests()); n != 0 || m != 0 {
		t.Fatalf("requests without the token were recorded: %d turns, %d model lists", n, m)
	}
	// The script is where it was: the first step, then the first list
	// attempt's fault.
	status, body := do(t, base, "POST", "/v1/messages", msgs, with(anthropic, "X-Api-Key", srv.Token))
	if status != 200 || !strings.Contains(body, `"first"`) {
		t.Fatalf("with the token: %d %s, want the first step", status, body)
	}
	if status, body := do(t, base, "GET", "/v1/models", "", map[string]string{"Authorization": "Bearer " + srv.Token}); status != 500 {
		t.Fatalf("the first model list with the token: %d %s, want the script's fault", status, body)
	}
	for _, h := range []map[string]string{{"Authorization": "Bearer " + srv.Token}, {"Api-Key": srv.Token}, {"X-Goog-Api-Key": srv.Token}} {
		if status, body := do(t, base, "GET", "/api/version", "", h); status != 200 {
			t.Errorf("with %v: %d %s", h, status, body)
		}
	}
	if status, body := do(t, base, "GET", "/api/version?key="+srv.Token, "", nil); status != 200 {
		t.Errorf("with the key parameter: %d %s", status, body)
	}
}

// sigV4 returns the headers of a Bedrock request signed with the
// simulated account's published key: what anyone could sign with, when
// the server's token is not the secret.
func sigV4(t *testing.T, base, path, body string) map[string]string {
	t.Helper()
	r, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: sim.BedrockAccessKeyID, SecretAccessKey: sim.BedrockSecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, r, hex.EncodeToString(sum[:]), "bedrock", "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	h := map[string]string{}
	for k := range r.Header {
		h[k] = r.Header.Get(k)
	}
	return h
}

func TestNewToken(t *testing.T) {
	a, b := sim.NewToken(), sim.NewToken()
	if a == b || len(a) < 30 || !strings.HasPrefix(a, "sim-") {
		t.Fatalf("tokens %q and %q", a, b)
	}
}

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

func do(t *testing.T, base, method, path, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" && header["Content-Type"] == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// field returns the string at a dotted path of a JSON object (or of the
// first element of an array, as Vertex sends a stream's error).
func field(t *testing.T, body, path string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	for _, k := range strings.Split(path, ".") {
		if a, ok := v.([]any); ok && len(a) > 0 {
			v = a[0]
		}
		m, _ := v.(map[string]any)
		v = m[k]
	}
	s, _ := v.(string)
	return s
}
