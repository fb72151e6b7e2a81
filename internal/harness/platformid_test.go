package harness

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/surface"
)

// TestPlatformIDs: every platform id of the catalog reads as its own row
// on its provider, and has its page and date.
func TestPlatformIDs(t *testing.T) {
	for _, platform := range []string{"bedrock", "vertex"} {
		def, _ := lookupProvider(platform)
		ids := surface.PlatformIDs(platform)
		if len(ids) == 0 {
			t.Fatalf("%s: no ids", platform)
		}
		for _, id := range ids {
			if id.Source == "" || id.Checked == "" {
				t.Errorf("%s: no source or date", id.ID)
			}
			if got := def.Profile(id.ID); got.Guess || got.Pattern != id.Pattern {
				t.Errorf("%s on %s is the row %q (guess %v), want %q", id.ID, platform, got.Pattern, got.Guess, id.Pattern)
			}
			for _, g := range id.Profiles {
				if got := def.Profile(id.ProfileID(g)); got.Pattern != id.Pattern {
					t.Errorf("%s on %s is the row %q, want %q", id.ProfileID(g), platform, got.Pattern, id.Pattern)
				}
			}
		}
	}
}

// TestPlatformIDWarning: a Claude API id on Bedrock, or on Vertex AI where
// its id differs, is warned about with the same model's id there, never
// another model's; an id the platform takes is not.
func TestPlatformIDWarning(t *testing.T) {
	bedrock, _ := lookupProvider("bedrock")
	vertex, _ := lookupProvider("vertex")
	anthropic, _ := lookupProvider("anthropic")
	for _, tc := range []struct {
		name          string
		def           ProviderDef
		model, region string
		want          []string // "" : no warning
		not           string
	}{
		{"bedrock, Opus 4.5 in us-east-1", bedrock, "claude-opus-4-5", "us-east-1",
			[]string{`"claude-opus-4-5" is the Claude API's id; pass Bedrock's, us.anthropic.claude-opus-4-5-20251101-v1:0 (its model id is anthropic.claude-opus-4-5-20251101-v1:0)`}, "sonnet"},
		{"bedrock, a dated id in eu-west-1", bedrock, "claude-sonnet-4-5-20250929", "eu-west-1",
			[]string{"pass Bedrock's, eu.anthropic.claude-sonnet-4-5-20250929-v1:0"}, "opus"},
		{"bedrock, Tokyo", bedrock, "claude-sonnet-4-6", "ap-northeast-1", []string{"pass Bedrock's, jp.anthropic.claude-sonnet-4-6 "}, ""},
		{"bedrock, no profile of the geography", bedrock, "claude-opus-4-5", "ap-southeast-2", []string{"pass Bedrock's, global.anthropic.claude-opus-4-5-20251101-v1:0 "}, ""},
		{"bedrock, Haiku 4.5 in us-east-1", bedrock, "claude-haiku-4-5", "us-east-1",
			[]string{"pass Bedrock's, us.anthropic.claude-haiku-4-5-20251001-v1:0 (its model id is anthropic.claude-haiku-4-5-20251001-v1:0)"}, "sonnet"},
		{"bedrock, Opus 4.1, only in the us profile", bedrock, "claude-opus-4-1", "us-west-2", []string{"pass Bedrock's, us.anthropic.claude-opus-4-1-20250805-v1:0 "}, ""},
		{"bedrock, Opus 4's -0 alias", bedrock, "claude-opus-4-0", "us-east-1", []string{"pass Bedrock's, us.anthropic.claude-opus-4-20250514-v1:0 "}, ""},
		{"bedrock, an id no page gave", bedrock, "claude-opus-4-7", "us-east-1",
			[]string{"pass Bedrock's id of the same model or an inference profile's ARN (aws bedrock list-inference-profiles lists them)"}, "sonnet"},
		{"bedrock, its own id", bedrock, "us.anthropic.claude-opus-4-5-20251101-v1:0", "us-east-1", nil, ""},
		{"bedrock, its own base id", bedrock, "anthropic.claude-opus-4-6-v1", "us-east-1", nil, ""},
		{"bedrock, a :0 Bedrock does not take", bedrock, "anthropic.claude-opus-4-6-v1:0", "us-east-1",
			[]string{`Bedrock's id of this model is anthropic.claude-opus-4-6-v1, not "anthropic.claude-opus-4-6-v1:0": pass --model anthropic.claude-opus-4-6-v1`}, ""},
		{"bedrock, a profile's id without its date", bedrock, "us.anthropic.claude-sonnet-4-5-v1:0", "us-east-1",
			[]string{`pass --model us.anthropic.claude-sonnet-4-5-20250929-v1:0`}, "opus"},
		{"vertex, the Claude API's id", vertex, "claude-sonnet-4-5", "us-east5",
			[]string{`Vertex AI names this model claude-sonnet-4-5@20250929, not "claude-sonnet-4-5": pass --model claude-sonnet-4-5@20250929`}, ""},
		{"vertex, Haiku's dated API id", vertex, "claude-haiku-4-5-20251001", "", []string{"pass --model claude-haiku-4-5@20251001"}, "sonnet"},
		{"vertex, its own id", vertex, "claude-sonnet-4-5@20250929", "", nil, ""},
		{"vertex, an id without a date", vertex, "claude-opus-4-6", "", nil, ""},
		{"vertex, Opus 4.5's API id", vertex, "claude-opus-4-5", "", []string{"pass --model claude-opus-4-5@20251101"}, ""},
		{"vertex, an id no page gave", vertex, "claude-opus-4-7", "", nil, ""},
		{"anthropic", anthropic, "claude-opus-4-5", "", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.def.platformIDWarning(tc.model, tc.region)
			if (got == "") != (len(tc.want) == 0) {
				t.Fatalf("warning %q, want one: %v", got, len(tc.want) > 0)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("warning %q does not hold %q", got, w)
				}
			}
			if tc.not != "" && strings.Contains(strings.ToLower(got), tc.not) {
				t.Errorf("warning %q names another model (%s)", got, tc.not)
			}
		})
	}
}
