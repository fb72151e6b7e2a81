package harness

import (
	"fmt"
	"strings"
)

// regionError refuses a region that is not in its platform's form, before
// any request would go to a host of that name (which would fail as an
// unknown host): an AWS region is geography-direction-number (us-east-1,
// eu-west-3, us-gov-west-1), a Google Cloud one area-direction and a number
// (us-east5, europe-west1, northamerica-northeast1) or global. The error
// says where the region was set (from: "--region", a variable, "" for
// --region or the platform's variables) and, when the mistake is plain (a
// dash left out or put in, the number missing), the region it meant.
func regionError(platform, region, from string) error {
	if region == "" || regionForm(platform, region) {
		return nil
	}
	examples, where := "us-east-1, us-west-2, eu-west-1, ap-northeast-1", "--region, AWS_REGION or AWS_DEFAULT_REGION"
	if platform != "bedrock" {
		examples, where = "us-east5, us-central1, europe-west1, asia-southeast1, global", "--region, CLOUD_ML_REGION or GOOGLE_CLOUD_LOCATION"
	}
	if from != "" {
		where = from
	}
	msg := fmt.Sprintf("%q is not a region's name (%s, …): check %s", region, examples, where)
	if near := nearRegion(platform, region); near != "" {
		msg += "; did you mean " + near + "?"
	}
	return configErrorf("provider %s: %s", platform, msg)
}

// regionForm reports whether region has the platform's form.
func regionForm(platform, region string) bool {
	parts := strings.Split(region, "-")
	letters := func(s string) bool { return s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyz") == "" }
	digits := func(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
	if platform == "bedrock" {
		// geo[-gov|-iso…]-direction-N
		if len(parts) < 3 || len(parts) > 4 || !digits(parts[len(parts)-1]) {
			return false
		}
		for _, p := range parts[:len(parts)-1] {
			if !letters(p) {
				return false
			}
		}
		return len(parts[0]) == 2
	}
	if region == "global" {
		return true
	}
	if len(parts) != 2 || !letters(parts[0]) {
		return false
	}
	d := strings.TrimRight(parts[1], "0123456789")
	return letters(d) && digits(parts[1][len(d):])
}

// nearRegion is the region a malformed one plainly meant: "useast1" and
// "us-east" are us-east-1 on AWS, "us-east-5" and "useast5" us-east5 on
// Google Cloud; "" when it is not plain.
func nearRegion(platform, region string) string {
	letters := strings.TrimRight(region, "0123456789")
	num := region[len(letters):]
	letters = strings.TrimSuffix(letters, "-")
	if strings.Count(letters, "-") == 0 && len(letters) > 2 {
		// A dash left out after a two-letter geography ("useast").
		letters = letters[:2] + "-" + letters[2:]
	}
	if strings.Count(letters, "-") != 1 {
		return ""
	}
	var guess string
	switch {
	case platform == "bedrock" && num == "":
		guess = letters + "-1"
	case platform == "bedrock":
		guess = letters + "-" + num
	case num != "":
		guess = letters + num
	}
	if guess == "" || guess == region || !regionForm(platform, guess) {
		return ""
	}
	// The direction a region's name has, so that a word is no guess
	// ("virginia" is not vi-rginia-1).
	_, dir, _ := strings.Cut(letters, "-")
	switch dir {
	case "east", "west", "north", "south", "central", "northeast", "northwest", "southeast", "southwest":
		return guess
	}
	return ""
}
