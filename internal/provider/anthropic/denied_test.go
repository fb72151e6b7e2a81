package anthropic

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestVertexPermissionDenied: Vertex AI's PERMISSION_DENIED says what the
// project's account may lack (role, API, model, project, region), not the
// key hint; UNAUTHENTICATED keeps the key hint.
func TestVertexPermissionDenied(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	for _, tc := range []struct {
		status            int
		gstatus, want, no string
	}{
		{403, "PERMISSION_DENIED", "vertex: HTTP 403: PERMISSION_DENIED: Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929' (or it may not exist).; the credentials were accepted but may not call the model there: their account needs the Vertex AI User role (roles/aiplatform.user) in project p1", "KEYHINT"},
		{401, "UNAUTHENTICATED", "; KEYHINT", "roles/aiplatform.user"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			w.Write([]byte(`[{"error":{"code":` + map[int]string{403: "403", 401: "401"}[tc.status] + `,"message":"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929' (or it may not exist).","status":"` + tc.gstatus + `"}}]`))
		}))
		err := providertest.OneTurn(New(Config{BaseURL: srv.URL, Retry: provider.RetryPolicy{MaxAttempts: 1}, Label: "vertex", KeyHint: "KEYHINT",
			Vertex: &Vertex{Region: "us-east5", Project: "p1", Token: token}}), "claude-sonnet-4-5@20250929")
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.no) {
			t.Errorf("%s: %v\nwant %q", tc.gstatus, err, tc.want)
		}
	}
}
