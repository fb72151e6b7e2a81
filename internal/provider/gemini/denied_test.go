package gemini

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestDeniedHint: a PERMISSION_DENIED refusal gets DeniedHint (Vertex AI's
// route) instead of KeyHint; without one, KeyHint as before.
func TestDeniedHint(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(403)
		w.Write([]byte(`{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-pro' (or it may not exist).","status":"PERMISSION_DENIED"}}`))
	}))
	defer srv.Close()
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	hint := provider.VertexDeniedHint("p1", "us-central1")
	for _, tc := range []struct {
		denied, want, no string
	}{
		{hint, "(or it may not exist).; " + hint, "KEYHINT"},
		{"", "(or it may not exist).; KEYHINT", "roles/aiplatform.user"},
	} {
		err := providertest.OneTurn(New(Config{BaseURL: srv.URL, Path: "/v1beta1/projects/p1/locations/us-central1/publishers/google/models/%s", Token: token,
			Retry: provider.RetryPolicy{MaxAttempts: 1}, Label: "vertex-gemini", KeyHint: "KEYHINT", DeniedHint: tc.denied}), "gemini-2.5-pro")
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.no) {
			t.Errorf("DeniedHint %q: %v", tc.denied, err)
		}
	}
}
