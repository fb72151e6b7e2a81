package harness

import (
	"strings"
	"testing"
)

// TestBedrockKeyHint: a refusal of the credentials says which of the
// chain's were sent (a stale Bedrock API key hides the keys after it),
// and a missing region names every variable read.
func TestBedrockKeyHint(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"a Bedrock API key before keys", map[string]string{"AWS_BEARER_TOKEN_BEDROCK": "ABSKstale", "AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"},
			"the credential sent was the Bedrock API key in AWS_BEARER_TOKEN_BEDROCK, which comes before any AWS keys: check it, or unset it to use the keys"},
		{"the environment's keys", map[string]string{"AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"},
			"the credentials sent were AWS_ACCESS_KEY_ID's (with AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN): check them"},
		{"no region", map[string]string{"AWS_ACCESS_KEY_ID": "AKIAFAKE", "AWS_SECRET_ACCESS_KEY": "s"},
			"provider bedrock needs a region: --region, AWS_REGION, AWS_DEFAULT_REGION, or region in the profile's section of the AWS config file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			for _, v := range bedrockVars {
				t.Setenv(v, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := bedrockConfig(Endpoint{Region: tc.env["AWS_REGION"]})
			got := c.KeyHint
			if err != nil {
				got = err.Error()
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBedrockProfileHint: a model Bedrock serves only through an
// inference profile is met with its profiles' ids, the region's
// geography's first; a model the table does not know with how to find
// them.
func TestBedrockProfileHint(t *testing.T) {
	for _, tc := range []struct{ model, region, want string }{
		{"anthropic.claude-sonnet-4-5-20250929-v1:0", "us-east-1",
			"Bedrock serves this model through an inference profile: pass --model us.anthropic.claude-sonnet-4-5-20250929-v1:0 (or global.anthropic.claude-sonnet-4-5-20250929-v1:0, eu.anthropic.claude-sonnet-4-5-20250929-v1:0 or jp.anthropic.claude-sonnet-4-5-20250929-v1:0); aws bedrock list-inference-profiles lists them"},
		{"anthropic.claude-opus-4-1-20250805-v1:0", "eu-west-1",
			"Bedrock serves this model through an inference profile: pass --model us.anthropic.claude-opus-4-1-20250805-v1:0; aws bedrock list-inference-profiles lists them"},
		{"anthropic.claude-new-9-v1:0", "us-east-1",
			"pass the id or ARN of an inference profile of the model: its id with a geography's prefix (us., eu., global., …); aws bedrock list-inference-profiles lists them"},
	} {
		if got := bedrockProfileHint(tc.model, tc.region); got != tc.want {
			t.Errorf("%s in %s:\n%q\nwant %q", tc.model, tc.region, got, tc.want)
		}
	}
}
