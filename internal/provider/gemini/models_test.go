package gemini

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/trussdev/truss/internal/provider"
)

// TestModels: the Gemini API's model list is read page by page, sending
// what Google's SDK sends for the first page (path, pageSize, the key),
// and gives the models that generate content by the name a request takes,
// with their input limit; a refused key, a server that is not the API and
// Vertex AI's route say so.
func TestModels(t *testing.T) {
	var _ provider.ModelLister = (*Client)(nil)
	pages := map[string]string{
		"": `{"models": [
			{"name": "models/gemini-2.5-pro", "displayName": "Gemini 2.5 Pro", "inputTokenLimit": 1048576, "supportedGenerationMethods": ["generateContent", "countTokens"]},
			{"name": "models/text-embedding-004", "displayName": "Text Embedding 004", "inputTokenLimit": 2048, "supportedGenerationMethods": ["embedContent"]}],
			"nextPageToken": "p2"}`,
		"p2": `{"models": [{"name": "models/gemini-2.5-flash", "displayName": "Gemini 2.5 Flash", "inputTokenLimit": 1048576, "supportedGenerationMethods": ["generateContent"]}]}`,
	}
	var mu sync.Mutex
	var asked []string
	targets := func() []string {
		mu.Lock()
		defer mu.Unlock()
		t := asked
		asked = nil
		return t
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery+" key="+r.Header.Get("x-goog-api-key"))
		mu.Unlock()
		switch {
		case r.URL.Path == "/html/v1beta/models":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<html><body>404 Not Found</body></html>")
		case r.Header.Get("x-goog-api-key") != "k":
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, pages[r.URL.Query().Get("pageToken")])
		}
	}))
	defer srv.Close()

	got, err := New(Config{BaseURL: srv.URL, APIKey: "k"}).Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []provider.ModelInfo{{ID: "gemini-2.5-pro", DisplayName: "Gemini 2.5 Pro", ContextWindow: 1048576},
		{ID: "gemini-2.5-flash", DisplayName: "Gemini 2.5 Flash", ContextWindow: 1048576}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("models %+v, want %+v", got, want)
	}
	wantTargets := []string{"GET /v1beta/models?pageSize=1000 key=k", "GET /v1beta/models?pageSize=1000&pageToken=p2 key=k"}
	if got := targets(); !reflect.DeepEqual(got, wantTargets) {
		t.Errorf("requests %q, want %q", got, wantTargets)
	}

	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL, APIVersion: APIVersion}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Models.List(context.Background(), &genai.ListModelsConfig{PageSize: 1000}); err != nil {
		t.Fatal(err)
	}
	if got := targets(); len(got) != 1 || got[0] != wantTargets[0] {
		t.Errorf("the SDK asked %q; this client %q", got, wantTargets[0])
	}

	for _, tc := range []struct {
		name string
		cfg  Config
		kind provider.ErrorKind
		want []string
		not  bool // the error matches provider.ErrNotSupported
	}{
		{name: "refused key", cfg: Config{BaseURL: srv.URL, APIKey: "wrong", Label: "corp", KeyHint: "check CORP_KEY"},
			kind: provider.ErrAuth, want: []string{"corp: ", "GET /v1beta/models", "API key not valid", "check CORP_KEY"}},
		{name: "not the API", cfg: Config{BaseURL: srv.URL + "/html", APIKey: "k", Label: "corp", ReachHint: "check base_url"},
			kind: provider.ErrNotAPI, want: []string{"corp: ", "does not look like the Gemini API", "check base_url"}},
		{name: "vertex", cfg: Config{BaseURL: srv.URL, Path: "/v1beta1/projects/p/locations/l/publishers/google/models/%s", Label: "vertex-gemini"},
			want: []string{"vertex-gemini: ", "truss models"}, not: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg).Models(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			var pe *provider.Error
			if tc.kind != "" && (!errors.As(err, &pe) || pe.Kind != tc.kind) {
				t.Errorf("%v: not a %s error", err, tc.kind)
			}
			if errors.Is(err, provider.ErrNotSupported) != tc.not {
				t.Errorf("%v: matches ErrNotSupported: %v", err, !tc.not)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}
