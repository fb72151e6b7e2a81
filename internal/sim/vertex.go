package sim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// ---- Anthropic's models on Google Vertex AI ----
//
// POST /v1/projects/{project}/locations/{location}/publishers/anthropic/
// models/{model}:streamRawPredict (and :rawPredict) take the Messages
// API's body without "model" (it is in the URL), with "anthropic_version":
// "vertex-2023-10-16"; the betas stay in the anthropic-beta header. The
// request carries a Google OAuth 2 access token as a Bearer token; the
// stream is the Messages API's server-sent events. Errors of the platform
// (credentials, the project's permission, an unknown model, the quota) are
// Google's {"error": {"code", "message", "status"}}, a streaming request's
// quota error inside a JSON array as Vertex sends it; errors of the body
// are the Messages API's own.
//
// POST /token is a Google OAuth 2 token endpoint for the tests'
// application-default credentials: a refresh token's grant (an
// authorized_user file, as gcloud writes it) or a JWT bearer grant (a
// service account's key) is answered with an access token the Vertex
// routes then accept.

// VertexVersion is the anthropic_version Vertex AI requires in the body.
const VertexVersion = "vertex-2023-10-16"

// vertexDialect is the dialect name of the Vertex routes' requests.
const vertexDialect = "vertex"

// The messages Google answers with.
const (
	vertexUnauthenticated = "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project."
	vertexQuota           = "Quota exceeded for aiplatform.googleapis.com/online_prediction_requests_per_base_model with base model: anthropic-claude. Please submit a quota increase request. https://cloud.google.com/vertex-ai/docs/generative-ai/quotas-genai."
)

// vertexStatus is Google's status name of an HTTP status.
func vertexStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

// vertexError answers with Google's error object; inArray wraps it in a
// JSON array, as Vertex answers a streaming request.
func vertexError(w http.ResponseWriter, code int, msg string, inArray bool) {
	var v any = map[string]any{"error": map[string]any{"code": code, "message": msg, "status": vertexStatus(code)}}
	if inArray {
		v = []any{v}
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// vertexFault answers an attempt's status fault as Vertex does: a 429 is
// the platform's quota error (in an array, as for a stream), any other
// status the Messages API's error passed through.
func vertexFault(w http.ResponseWriter, f *Fault) {
	if f.Status == http.StatusTooManyRequests {
		msg := vertexQuota
		if f.Message != "" {
			msg = f.Message
		}
		vertexError(w, f.Status, msg, true)
		return
	}
	messagesError(w, f.Status, messagesErrorType(f.Status), faultMessage(f))
}

// vertexResource names a publisher model as Google's messages do.
func vertexResource(r *http.Request, model string) string {
	return fmt.Sprintf("projects/%s/locations/%s/publishers/anthropic/models/%s", r.PathValue("project"), r.PathValue("location"), model)
}

// vertexPredict answers POST …/publishers/anthropic/models/{model}.
func (s *Server) vertexPredict(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	modelID, method, _ := strings.Cut(r.PathValue("model"), ":")
	stream := method == "streamRawPredict"
	if !stream && method != "rawPredict" {
		vertexError(w, 404, fmt.Sprintf("Method %q of publisher model %s is not found.", method, vertexResource(r, modelID)), false)
		return
	}
	if !s.vertexAuthorized(r) {
		vertexError(w, 401, vertexUnauthenticated, stream)
		return
	}
	if s.VertexProject != "" && r.PathValue("project") != s.VertexProject {
		vertexError(w, 403, fmt.Sprintf("Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/%s' (or it may not exist).", vertexResource(r, modelID)), stream)
		return
	}
	if s.VertexModels != nil && !slices.Contains(s.VertexModels, modelID) {
		vertexError(w, 404, fmt.Sprintf("Publisher Model `%s` not found.", vertexResource(r, modelID)), stream)
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		vertexError(w, 400, "Invalid JSON payload received. "+err.Error(), stream)
		return
	}
	if _, ok := m["model"]; ok {
		messagesError(w, 400, "invalid_request_error", "model: Extra inputs are not permitted")
		return
	}
	var version string
	if json.Unmarshal(m["anthropic_version"], &version) != nil || version != VertexVersion {
		messagesError(w, 400, "invalid_request_error", "anthropic_version: Input should be '"+VertexVersion+"'")
		return
	}
	var streamed bool
	json.Unmarshal(m["stream"], &streamed)
	if streamed != stream {
		messagesError(w, 400, "invalid_request_error", fmt.Sprintf("stream: %s takes stream %v", method, stream))
		return
	}
	// The API's request: what the model and the checks read.
	delete(m, "anthropic_version")
	m["model"], _ = json.Marshal(modelID)
	api, _ := json.Marshal(m)
	r2 := r.Clone(r.Context())
	r2.Header.Set("Anthropic-Version", "2023-06-01")
	s.messagesOn(vertexDialect, w, r2, api, received)
}

// vertexAuthorized checks a Vertex request's Bearer token: one the token
// endpoint issued or the server's APIKey; any token when the server has
// no APIKey.
func (s *Server) vertexAuthorized(r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	if s.APIKey == "" || tok == s.APIKey {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issued[tok]
}

// oauthError answers with an OAuth 2 token endpoint's error.
func oauthError(w http.ResponseWriter, code, desc string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// token answers POST /token: Google's OAuth 2 token endpoint for a refresh
// token's grant (client_id, client_secret and refresh_token) or a JWT
// bearer grant (an RS256 assertion whose claims name the issuer, the
// scope, this endpoint as audience and an expiry after the issue time).
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, "invalid_request", "The request body is not a form.")
		return
	}
	f := r.PostForm
	switch f.Get("grant_type") {
	case "refresh_token":
		if f.Get("client_id") == "" || f.Get("client_secret") == "" || f.Get("refresh_token") == "" {
			oauthError(w, "invalid_request", "Missing required parameter: client_id, client_secret or refresh_token.")
			return
		}
	case "urn:ietf:params:oauth:grant-type:jwt-bearer":
		if msg := checkAssertion(f.Get("assertion"), r); msg != "" {
			oauthError(w, "invalid_grant", msg)
			return
		}
	default:
		oauthError(w, "unsupported_grant_type", "Invalid grant_type: "+f.Get("grant_type"))
		return
	}
	s.mu.Lock()
	if s.issued == nil {
		s.issued = map[string]bool{}
	}
	tok := fmt.Sprintf("ya29.sim-%d", len(s.issued)+1)
	s.issued[tok] = true
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer",
		"scope": "https://www.googleapis.com/auth/cloud-platform"})
}

// checkAssertion checks a JWT bearer grant's assertion: three base64url
// parts, an RS256 header, claims with iss, scope, aud (this endpoint's
// URL), iat and exp within the hour after it. The signature is not
// verified (the tests' keys are throwaway); its presence is.
func checkAssertion(a string, r *http.Request) string {
	parts := strings.Split(a, ".")
	if len(parts) != 3 || parts[2] == "" {
		return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe."
	}
	var head struct {
		Alg string `json:"alg"`
		Typ string `json:"typ"`
	}
	var claims struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Iat   int64  `json:"iat"`
		Exp   int64  `json:"exp"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	if err1 != nil || err2 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil {
		return "Invalid JWT Signature."
	}
	if head.Alg != "RS256" {
		return "Invalid JWT: the algorithm must be RS256."
	}
	if claims.Iss == "" || claims.Scope == "" {
		return "Invalid JWT: the issuer and the scope are required."
	}
	self := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path}
	if claims.Aud != self.String() {
		return fmt.Sprintf("Invalid JWT: the audience %q is not this endpoint (%s).", claims.Aud, self.String())
	}
	now := time.Now().Unix()
	if claims.Exp <= claims.Iat || claims.Exp-claims.Iat > 3600 || claims.Exp < now || claims.Iat > now+300 {
		return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
	}
	return ""
}
