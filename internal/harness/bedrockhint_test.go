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
