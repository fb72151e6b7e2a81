package harness

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
)

// TestSessionModels lists the simulated model's models through a session
// in two dialects, in the picker's order; a session without a model, an
// adapter that cannot list and a closed session say so.
func TestSessionModels(t *testing.T) {
	for _, c := range []struct {
		dialect, script, want string
	}{
		{"chat", `{"steps": [{"say": "hi"}], "models": [
		  {"id": "b-undated"}, {"id": "old", "created": "2024-01-01T00:00:00Z"}, {"id": "a-undated"},
		  {"id": "new", "created": "2025-12-01T00:00:00Z"}, {"id": "claude-only", "apis": ["anthropic"]}]}`,
			"new old a-undated b-undated"},
		{"anthropic", `{"steps": [{"say": "hi"}]}`, "sim-claude"},
		{"ollama", `{"steps": [{"say": "hi"}]}`, "sim-coder:latest"},
	} {
		t.Run(c.dialect, func(t *testing.T) {
			o := fixture(t, c.script)
			o.SimDialect = c.dialect
			o.Validation.Off = true
			ctx := context.Background()
			s, err := Open(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ms, err := s.Models(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, m := range ms {
				ids = append(ids, m.ID)
			}
			if got := strings.Join(ids, " "); got != c.want {
				t.Errorf("models %s, want %s", got, c.want)
			}
			s.Close()
			if _, err := s.Models(ctx); !errors.Is(err, ErrClosed) {
				t.Errorf("after Close: %v", err)
			}
		})
	}
	if _, err := (&Session{}).Models(context.Background()); !errors.Is(err, provider.ErrNotSupported) {
		t.Errorf("no model: %v", err)
	}
	if _, err := (&Session{prov: turnOnly{}}).Models(context.Background()); !errors.Is(err, provider.ErrNotSupported) || !strings.Contains(err.Error(), "the fake adapter cannot list models") {
		t.Errorf("an adapter that cannot list: %v", err)
	}
}

// TestModelsErrorIsTheAdapters: a failed model list is the adapter's
// error as it is, naming the provider and what was asked, with no
// internal prefix.
func TestModelsErrorIsTheAdapters(t *testing.T) {
	want := &provider.Error{Provider: "vertex-gemini", Kind: provider.ErrAuth, Status: 403, Message: "GET /v1beta1/publishers/google/models: PERMISSION_DENIED"}
	_, err := (&Session{prov: failingLister{err: want}}).Models(context.Background())
	var pe *provider.Error
	if !errors.As(err, &pe) || pe != want || err.Error() != "vertex-gemini: HTTP 403: GET /v1beta1/publishers/google/models: PERMISSION_DENIED" {
		t.Errorf("error %q, want the adapter's", err)
	}
}

// failingLister is an adapter whose model list fails with err.
type failingLister struct {
	turnOnly
	err error
}

func (f failingLister) Models(context.Context) ([]provider.ModelInfo, error) { return nil, f.err }

// turnOnly is an adapter without a model list.
type turnOnly struct{}

func (turnOnly) Name() string { return "fake" }
func (turnOnly) Turn(context.Context, *model.Request, func(model.Delta)) (*model.Response, error) {
	return nil, errors.New("no turns")
}

func TestPickerOrder(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2025, 1, d, 0, 0, 0, 0, time.UTC) }
	ms := []provider.ModelInfo{
		{ID: "z"}, {ID: "a", Created: day(1)}, {ID: ""}, {ID: "b", Created: day(3)}, {ID: "a", Created: day(9)},
		{ID: "c", Created: day(3)}, {ID: "y"},
	}
	var ids []string
	for _, m := range pickerOrder(ms) {
		ids = append(ids, m.ID)
	}
	if got := strings.Join(ids, " "); got != "b c a y z" {
		t.Errorf("order %s", got)
	}
	many := make([]provider.ModelInfo, provider.MaxModels+5)
	for i := range many {
		many[i].ID = string(rune('a'+i%26)) + strings.Repeat("x", i/26)
	}
	if n := len(pickerOrder(many)); n != provider.MaxModels {
		t.Errorf("%d models kept", n)
	}
}

// noList is an adapter whose server has no model list, as Bedrock's and
// Vertex AI's runtimes.
type noList struct{ turnOnly }

func (noList) Models(context.Context) ([]provider.ModelInfo, error) {
	return nil, provider.Unsupported("no model list", nil)
}

// TestPlatformModels: a cloud platform's session lists the catalog's ids
// of the platform when its runtime has no model list (Bedrock's profile of
// the region first, then the base id); another provider's says it cannot.
func TestPlatformModels(t *testing.T) {
	for _, tc := range []struct {
		provider, region string
		want             []string // the first ids
		err              bool
	}{
		{"bedrock", "eu-west-1", []string{"eu.anthropic.claude-opus-4-6-v1", "anthropic.claude-opus-4-6-v1"}, false},
		{"vertex", "us-east5", []string{"claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-5@20251101"}, false},
		{"vertex-gemini", "us-central1", []string{"gemini-"}, false},
		{"chat", "", nil, true},
	} {
		s := &Session{opts: Options{Provider: tc.provider, Region: tc.region}, prov: noList{}}
		ms, err := s.Models(context.Background())
		if tc.err {
			if !errors.Is(err, provider.ErrNotSupported) {
				t.Errorf("%s: %v", tc.provider, err)
			}
			continue
		}
		if err != nil || len(ms) < len(tc.want) {
			t.Fatalf("%s: %v, %v", tc.provider, ms, err)
		}
		for i, w := range tc.want {
			if !strings.HasPrefix(ms[i].ID, w) {
				t.Errorf("%s: model %d is %q, want %q", tc.provider, i, ms[i].ID, w)
			}
		}
	}
}
