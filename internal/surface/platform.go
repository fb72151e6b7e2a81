package surface

import (
	"strings"
)

// PlatformID is the id a cloud platform gives one of the catalog's
// models, as an official page lists it: Bedrock's base model id and the
// geographies of its cross-region inference profiles, Vertex AI's model
// id.
type PlatformID struct {
	// Platform is the provider that takes the id: "bedrock", "vertex".
	Platform string `json:"platform"`
	// Pattern is the catalog row the id is of (its Claude API id).
	Pattern string `json:"pattern"`
	// ID is the platform's id: "anthropic.claude-opus-4-5-20251101-v1:0",
	// "claude-opus-4-5@20251101".
	ID string `json:"id"`
	// Profiles are the prefixes of Bedrock's cross-region inference
	// profiles for the model ("global", "us", "eu", "jp", "apac"), in the
	// page's order: the profile's id is the prefix, a dot and ID.
	Profiles []string `json:"profiles,omitempty"`
	// Title names the platform in messages ("Bedrock", "Vertex AI"), and
	// Lists says where it lists its ids.
	Title string `json:"-"`
	Lists string `json:"-"`
	// Source is the official page the id was read on, Checked the date.
	Source  string `json:"source"`
	Checked string `json:"checked"`
}

// ProfileID is the id of the inference profile of geo ("us"): geo, a dot
// and the model id.
func (p PlatformID) ProfileID(geo string) string { return geo + "." + p.ID }

// The official pages the platforms' ids were read on, and when.
const (
	bedrockIDs = "https://platform.claude.com/docs/en/build-with-claude/claude-on-amazon-bedrock-legacy"
	// vertexIDs lists the ids with @DATE; vertexNewIDs the 4.6 models',
	// which have none.
	vertexIDs    = "https://docs.claude.com/zh-CN/api/claude-on-vertex-ai"
	vertexNewIDs = "https://platform.claude.com/docs/ru/build-with-claude/claude-on-vertex-ai"
	// bedrockMoreIDs is the Bedrock page's fuller table (its Portuguese
	// copy), which also lists Claude Haiku 4.5, Opus 4.1 and Opus 4;
	// vertexGoogleIDs is Google's own page of the Vertex AI ids (its
	// German copy), which also lists Claude Opus 4.5.
	bedrockMoreIDs  = "https://platform.claude.com/docs/pt-BR/build-with-claude/claude-on-amazon-bedrock"
	vertexGoogleIDs = "https://docs.cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude?hl=de"
	platformRead    = "2026-12-07"
)

// PlatformIDs returns the ids the platform ("bedrock", "vertex") gives
// the catalog's models, newest models first: only those an official page
// listed. A model the platform runs but no page read confirmed has none.
func PlatformIDs(platform string) []PlatformID {
	bedrockFrom := func(src, pattern, id string, geos ...string) PlatformID {
		return PlatformID{Platform: "bedrock", Pattern: pattern, ID: id, Profiles: geos, Source: src, Checked: platformRead,
			Title: "Bedrock", Lists: "aws bedrock list-inference-profiles lists them"}
	}
	bedrock := func(pattern, id string, geos ...string) PlatformID {
		return bedrockFrom(bedrockIDs, pattern, id, geos...)
	}
	vertex := func(pattern, id, src string) PlatformID {
		return PlatformID{Platform: "vertex", Pattern: pattern, ID: id, Source: src, Checked: platformRead,
			Title: "Vertex AI", Lists: "Vertex AI's Model Garden lists them"}
	}
	all := []PlatformID{
		bedrock("claude-opus-4-6", "anthropic.claude-opus-4-6-v1", "global", "us", "eu", "jp", "apac"),
		bedrock("claude-sonnet-4-6", "anthropic.claude-sonnet-4-6", "global", "us", "eu", "jp"),
		bedrock("claude-opus-4-5", "anthropic.claude-opus-4-5-20251101-v1:0", "global", "us", "eu"),
		bedrockFrom(bedrockMoreIDs, "claude-haiku-4-5", "anthropic.claude-haiku-4-5-20251001-v1:0", "global", "us", "eu"),
		bedrock("claude-sonnet-4-5", "anthropic.claude-sonnet-4-5-20250929-v1:0", "global", "us", "eu", "jp"),
		bedrockFrom(bedrockMoreIDs, "claude-opus-4-1", "anthropic.claude-opus-4-1-20250805-v1:0", "us"),
		bedrockFrom(bedrockMoreIDs, "claude-opus-4", "anthropic.claude-opus-4-20250514-v1:0", "us"),
		bedrock("claude-sonnet-4", "anthropic.claude-sonnet-4-20250514-v1:0", "global", "us", "eu", "apac"),
		bedrock("claude-3-7-sonnet", "anthropic.claude-3-7-sonnet-20250219-v1:0", "us", "eu", "apac"),

		vertex("claude-opus-4-6", "claude-opus-4-6", vertexNewIDs),
		vertex("claude-sonnet-4-6", "claude-sonnet-4-6", vertexNewIDs),
		vertex("claude-opus-4-5", "claude-opus-4-5@20251101", vertexGoogleIDs),
		vertex("claude-sonnet-4-5", "claude-sonnet-4-5@20250929", vertexIDs),
		vertex("claude-haiku-4-5", "claude-haiku-4-5@20251001", vertexIDs),
		vertex("claude-opus-4-1", "claude-opus-4-1@20250805", vertexIDs),
		vertex("claude-opus-4", "claude-opus-4@20250514", vertexIDs),
		vertex("claude-sonnet-4", "claude-sonnet-4@20250514", vertexIDs),
		vertex("claude-3-7-sonnet", "claude-3-7-sonnet@20250219", vertexIDs),
	}
	var out []PlatformID
	for _, p := range all {
		if p.Platform == platform {
			out = append(out, p)
		}
	}
	return out
}

// PlatformIDOf returns the platform's id of the catalog row pattern
// ("claude-opus-4-5"); false when no official page gave one.
func PlatformIDOf(platform, pattern string) (PlatformID, bool) {
	for _, p := range PlatformIDs(platform) {
		// The Claude API's -0 aliases are the same models.
		if p.Pattern == strings.TrimSuffix(pattern, "-0") {
			return p, true
		}
	}
	return PlatformID{}, false
}

// bedrockGeos are the geographies of a Bedrock region's cross-region
// inference profiles, the closest first ("jp", then "apac" for Tokyo);
// none for a region of none the table knows.
func bedrockGeos(region string) []string {
	switch {
	case strings.HasPrefix(region, "us-"):
		return []string{"us"}
	case strings.HasPrefix(region, "eu-"):
		return []string{"eu"}
	case region == "ap-northeast-1", region == "ap-northeast-3":
		return []string{"jp", "apac"}
	case strings.HasPrefix(region, "ap-"):
		return []string{"apac"}
	}
	return nil
}

// Suggest is the id to pass for the model in region: Bedrock's inference
// profile of the region's geography, else its global one, else the
// model id; Vertex AI's id.
func (p PlatformID) Suggest(region string) string {
	for _, g := range append(bedrockGeos(region), "global") {
		for _, have := range p.Profiles {
			if have == g {
				return p.ProfileID(g)
			}
		}
	}
	return p.ID
}
