package sim

import (
	"crypto/rand"
	"crypto/subtle"
	"io"
	"net/http"
	"strings"
)

// NewToken returns a random token for Server.Token: 128 bits from
// crypto/rand, in the form of an API key ("sim-" and 26 base32
// characters).
func NewToken() string { return "sim-" + rand.Text() }

// hasToken reports whether r carries the server's Token in one of the
// places a dialect's client sends its API key: x-api-key (Anthropic),
// "Authorization: Bearer" (OpenAI, Chat Completions, Ollama's cloud API,
// Vertex AI's access token, Azure's Entra ID token), x-goog-api-key or
// the key query parameter (Gemini), api-key (Azure). Each is compared in
// constant time.
func (s *Server) hasToken(r *http.Request) bool {
	want := []byte(s.Token)
	eq := func(got string) bool { return got != "" && subtle.ConstantTimeCompare([]byte(got), want) == 1 }
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return eq(r.Header.Get("X-Api-Key")) || eq(bearer) || eq(r.Header.Get("X-Goog-Api-Key")) ||
		eq(r.URL.Query().Get("key")) || eq(r.Header.Get("Api-Key"))
}

// credential returns the credential r carries in the places a dialect's
// client sends its key, or "" when it carries none.
func credential(r *http.Request) string {
	bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	for _, v := range []string{r.Header.Get("X-Api-Key"), bearer, r.Header.Get("X-Goog-Api-Key"), r.URL.Query().Get("key"), r.Header.Get("Api-Key")} {
		if v != "" {
			return v
		}
	}
	return ""
}

// unauthorized answers a request that lacks the server's Token with the
// authentication error of the dialect whose route pattern (as the
// server's mux names it; "" for a path it does not serve) the request
// was sent to, as the real service answers a missing or wrong key:
//
//   - Anthropic Messages and its model list: 401 authentication_error,
//     "x-api-key header is required" or "invalid x-api-key";
//   - OpenAI Responses, Chat Completions and their model list (and a
//     path the server does not serve): 401 invalid_request_error, "You
//     didn't provide an API key. …" or "Incorrect API key provided.",
//     code invalid_api_key;
//   - Azure OpenAI: 401 with Azure's error object, code "401";
//   - Gemini: 403 PERMISSION_DENIED without a key, 400 API_KEY_INVALID
//     with a wrong one (Google's API answers no 401 for an API key);
//   - Vertex AI: 401 UNAUTHENTICATED (inside a JSON array for a stream);
//   - Google's token endpoint: 401 invalid_client;
//   - Ollama: 401 {"error": "unauthorized"}, as ollama.com's API does.
func unauthorized(w http.ResponseWriter, r *http.Request, pattern string) {
	missing := credential(r) == ""
	_, route, _ := strings.Cut(pattern, " ")
	switch {
	case route == "/v1/messages" || (route == "/v1/models" && (r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "")):
		msg := "invalid x-api-key"
		if r.Header.Get("X-Api-Key") == "" {
			msg = "x-api-key header is required"
		}
		messagesError(w, http.StatusUnauthorized, "authentication_error", msg)
	case strings.HasPrefix(route, "/openai/"):
		w.Header().Set("Apim-Request-Id", "apim_sim")
		azureError(w, http.StatusUnauthorized, "401", azureDenied)
	case strings.HasPrefix(route, "/v1beta/models/"):
		if missing {
			geminiError(w, http.StatusForbidden, geminiNoKey, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "CONSUMER_INVALID", "domain": "googleapis.com"})
			return
		}
		geminiError(w, http.StatusBadRequest, geminiBadKey, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
			"metadata": map[string]any{"service": "generativelanguage.googleapis.com"}})
	case strings.Contains(route, "/publishers/google/"):
		geminiError(w, http.StatusUnauthorized, vertexUnauthenticated)
	case strings.HasPrefix(route, "/v1/projects/"):
		vertexError(w, http.StatusUnauthorized, vertexUnauthenticated, strings.HasSuffix(r.URL.Path, ":streamRawPredict"))
	case route == "/token":
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"invalid_client","error_description":"The OAuth client was not found."}`+"\n")
	case strings.HasPrefix(route, "/api/"):
		ollamaError(w, http.StatusUnauthorized, "unauthorized")
	default:
		w.Header().Set("X-Request-Id", "req_sim")
		if missing {
			chatError(w, http.StatusUnauthorized, "invalid_request_error", "", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username. You can obtain an API key from https://platform.openai.com/account/api-keys.")
			return
		}
		chatError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
	}
}
