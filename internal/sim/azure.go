package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/lazyre"
)

// ---- Azure OpenAI's Responses API ----
//
// An Azure OpenAI resource serves OpenAI's Responses API (the same request
// body, the same stream) on its own routes, with its own credentials and
// error shapes:
//
//   - the v1 route, POST /openai/v1/responses, whose api-version is
//     optional ("v1" when absent, or "preview");
//   - the route of resources without the v1 API, POST
//     /openai/responses?api-version=DATE, which needs a dated version;
//   - the key in an api-key header, or an Entra ID token as
//     "Authorization: Bearer"; neither is a 401;
//   - the deployment named by the body's model: an unknown one is a 404
//     DeploymentNotFound;
//   - errors as {"error": {"code": "…", "message": "…"}}, a 429 with
//     Retry-After.

// azureDialect is the dialect name of the Azure routes' requests.
const azureDialect = "azure"

// azureDated matches a dated API version: 2025-04-01 or 2025-04-01-preview.
var azureDated = lazyre.Regexp{Expr: `^\d{4}-\d{2}-\d{2}(-preview)?$`}

// The messages Azure answers with.
const (
	azureDenied       = "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource."
	azureNoDeployment = "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."
)

func (s *Server) azureResponses(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	w.Header().Set("Apim-Request-Id", "apim_sim")
	w.Header().Set("X-Request-Id", "req_sim")
	version, versioned := r.URL.Query()["api-version"]
	v := ""
	if versioned {
		v = version[0]
	}
	switch {
	case strings.HasPrefix(r.URL.Path, "/openai/v1/"):
		if versioned && v != "v1" && v != "preview" {
			azureError(w, http.StatusBadRequest, "BadRequest", "API version not supported")
			return
		}
	case !versioned || v == "":
		// The dated route without a version is no route at all.
		azureError(w, http.StatusNotFound, "404", "Resource not found")
		return
	case !azureDated.Get().MatchString(v):
		azureError(w, http.StatusBadRequest, "BadRequest", "API version not supported")
		return
	}
	if !s.azureAuthorized(r) {
		azureError(w, http.StatusUnauthorized, "401", azureDenied)
		return
	}
	var req struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(body, &req) == nil && req.Model != "" && s.Deployments != nil && !slices.Contains(s.Deployments, req.Model) {
		azureError(w, http.StatusNotFound, "DeploymentNotFound", azureNoDeployment)
		return
	}
	s.respond(w, r, azureDialect, body, received)
}

// azureAuthorized checks the credential of an Azure request: an api-key
// header or a Bearer token must be there, and must be the server's key
// when it has one.
func (s *Server) azureAuthorized(r *http.Request) bool {
	key := r.Header.Get("Api-Key")
	bearer, isBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if key == "" && (!isBearer || bearer == "") {
		return false
	}
	return s.APIKey == "" || key == s.APIKey || bearer == s.APIKey
}

// azureError answers with Azure's error object.
func azureError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// azureFault answers an attempt's status fault as Azure does; a 429 says
// when to retry, as Azure's rate limits do.
func azureFault(w http.ResponseWriter, f *Fault) {
	msg := faultMessage(f)
	if f.Status == http.StatusTooManyRequests && f.Message == "" {
		msg = "Requests to the Responses_Create Operation under Azure OpenAI API version v1 have exceeded call rate limit of your current OpenAI S0 pricing tier."
		if f.RetryAfterMS > 0 {
			msg += fmt.Sprintf(" Please retry after %d seconds.", (f.RetryAfterMS+999)/1000)
		}
	}
	azureError(w, f.Status, fmt.Sprint(f.Status), msg)
}
