package harness

import "testing"

// TestRegionError: a region not in its platform's form is refused before
// any request, with where it was set and, when plain, what it meant; the
// platforms' own forms pass.
func TestRegionError(t *testing.T) {
	for _, tc := range []struct{ platform, region, from, want string }{
		{"bedrock", "us-east-1", "", ""},
		{"bedrock", "us-gov-west-1", "", ""},
		{"bedrock", "ap-southeast-2", "", ""},
		{"bedrock", "useast1", "--region", `provider bedrock: "useast1" is not a region's name (us-east-1, us-west-2, eu-west-1, ap-northeast-1, …): check --region; did you mean us-east-1?`},
		{"bedrock", "us-east", "AWS_REGION", `provider bedrock: "us-east" is not a region's name (us-east-1, us-west-2, eu-west-1, ap-northeast-1, …): check AWS_REGION; did you mean us-east-1?`},
		{"bedrock", "virginia", "", `provider bedrock: "virginia" is not a region's name (us-east-1, us-west-2, eu-west-1, ap-northeast-1, …): check --region, AWS_REGION or AWS_DEFAULT_REGION`},
		{"vertex", "us-east5", "", ""},
		{"vertex", "northamerica-northeast1", "", ""},
		{"vertex", "global", "", ""},
		{"vertex", "us-east-5", "--region", `provider vertex: "us-east-5" is not a region's name (us-east5, us-central1, europe-west1, asia-southeast1, global, …): check --region; did you mean us-east5?`},
		{"vertex-gemini", "useast5", "GOOGLE_CLOUD_LOCATION", `provider vertex-gemini: "useast5" is not a region's name (us-east5, us-central1, europe-west1, asia-southeast1, global, …): check GOOGLE_CLOUD_LOCATION; did you mean us-east5?`},
		{"vertex", "us-east", "", `provider vertex: "us-east" is not a region's name (us-east5, us-central1, europe-west1, asia-southeast1, global, …): check --region, CLOUD_ML_REGION or GOOGLE_CLOUD_LOCATION`},
	} {
		got := errText(regionError(tc.platform, tc.region, tc.from))
		if got != tc.want {
			t.Errorf("%s %q:\n%q\nwant %q", tc.platform, tc.region, got, tc.want)
		}
	}
}
