package gemini

import (
	"testing"

	"github.com/trussdev/truss/internal/provider/providertest"
)

// TestNotAPIService: an answer that is not the API names the API the
// platform serves (Vertex AI's, for vertex-gemini) and the NotAPIHint,
// not the ReachHint's network.
func TestNotAPIService(t *testing.T) {
	base, hits := providertest.ForeignServer(t, 404)
	err := providertest.OneTurn(New(Config{BaseURL: base, APIKey: "k", Retry: providertest.Retrying, Label: "vertex-gemini",
		ReachHint:  "check the network, --region, GOOGLE_CLOUD_LOCATION or GOOGLE_VERTEX_BASE_URL",
		NotAPIHint: "is GOOGLE_VERTEX_BASE_URL the address of Vertex AI?", Service: "Vertex AI's Gemini API"}), "gemini-2.5-pro")
	providertest.CheckNotAPI(t, err, hits, []string{"vertex-gemini: HTTP 404: the server at " + base + " does not look like Vertex AI's Gemini API: ",
		"(is GOOGLE_VERTEX_BASE_URL the address of Vertex AI?)"})
}
