package chatcompat

import (
	"errors"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestForeignJSON: a router's JSON 404 is not the API (one error, no
// retry, the base URL's setting named); an error body in another shape
// than OpenAI's says its message and status, not a decoding error.
func TestForeignJSON(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		kind   provider.ErrorKind
		hits   int32
		want   []string
	}{
		{"FastAPI's 404", 404, providertest.Router404s["fastapi"], provider.ErrNotAPI, 1,
			[]string{"chat: HTTP 404: the server at ", "does not look like an OpenAI-compatible API", `"{\"detail\":\"Not Found\"}"`, "OPENAI_BASE_URL"}},
		{"llama.cpp's 404", 404, providertest.Router404s["llama.cpp"], provider.ErrNotAPI, 1, []string{"does not look like", "OPENAI_BASE_URL"}},
		{"a string error's 404", 404, providertest.Router404s["string"], provider.ErrNotAPI, 1, []string{"does not look like", "OPENAI_BASE_URL"}},
		{"vLLM's model 404 is the API's", 404, `{"object":"error","message":"The model ` + "`m`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			provider.ErrNotFound, 1, []string{"chat: HTTP 404: The model `m` does not exist."}},
		{"OpenAI's model 404 is the API's", 404, `{"error":{"message":"The model m does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
			provider.ErrNotFound, 1, []string{"chat: HTTP 404: The model m does not exist"}},
		{"a string error", 400, `{"error":"Model 'm' not found. Available models: a, b"}`, provider.ErrBadRequest, 1,
			[]string{"chat: HTTP 400: Model 'm' not found. Available models: a, b"}},
		{"TGI's 422", 422, `{"error":"Input validation error: inputs too long","error_type":"validation"}`, provider.ErrBadRequest, 1,
			[]string{"chat: HTTP 422: Input validation error: inputs too long"}},
		{"vLLM's 400", 400, `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}`,
			provider.ErrBadRequest, 1, []string{`chat: HTTP 400: "auto" tool choice requires --enable-auto-tool-choice`}},
		{"FastAPI's 422", 422, `{"detail":[{"loc":["body","messages"],"msg":"field required","type":"value_error.missing"}]}`, provider.ErrBadRequest, 1,
			[]string{"chat: HTTP 422: field required"}},
		{"a 500 in another shape is retried", 500, `{"message":"upstream failed"}`, provider.ErrServer, 4, []string{"chat: HTTP 500: upstream failed"}},
		{"LM Studio's 200 error", 200, `{"error":"Unexpected endpoint or method. (POST /chat/completions)"}`, provider.ErrNotAPI, 1,
			[]string{"chat: HTTP 200: the server at ", "Unexpected endpoint or method", "OPENAI_BASE_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, hits := providertest.JSONServer(t, tt.status, tt.body)
			err := providertest.OneTurn(New(Config{BaseURL: base + "/v1", APIKey: "k", Retry: providertest.Retrying}), "m")
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Fatalf("error %v, want a %s", err, tt.kind)
			}
			if n := hits.Load(); n != tt.hits {
				t.Errorf("%d requests, want %d", n, tt.hits)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not hold %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "unmarshal") {
				t.Errorf("error %q is a decoding error", err)
			}
		})
	}
}
