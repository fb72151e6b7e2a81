package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/oauth2"

	"github.com/trussdev/truss/internal/provider"
)

// TestPlatformModels: Bedrock's runtime and Vertex AI's Messages routes
// list no models; the error matches provider.ErrNotSupported, says where
// the ids Truss knows are listed, and does not say "not supported" again.
func TestPlatformModels(t *testing.T) {
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "t"})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bedrock", Config{Bedrock: &Bedrock{Region: "us-east-1", Token: "t"}}, "bedrock: Amazon Bedrock's runtime has no model list (truss models --provider bedrock lists the ids Truss knows"},
		{"vertex", Config{Vertex: &Vertex{Region: "us-east5", Project: "p", Token: token}}, "vertex: Vertex AI's Messages routes have no model list (truss models --provider vertex lists the ids Truss knows)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg).Models(context.Background())
			if !errors.Is(err, provider.ErrNotSupported) || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "not supported") {
				t.Errorf("error %v", err)
			}
		})
	}
}
