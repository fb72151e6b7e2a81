package harness

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/trussdev/truss/internal/hostfs"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/awsauth"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/surface"
)

// bedrockConfig is the Messages adapter's configuration of an endpoint
// through Amazon Bedrock: the region of the endpoint (--region,
// AWS_REGION, AWS_DEFAULT_REGION) or else of the AWS profile, and the
// credentials awsauth's chain finds (a Bedrock API key, the environment's
// keys, the shared files' static keys or credential_process). The
// simulated model gets its own account's keys and us-east-1 when no
// region is given. Every refusal is a *ConfigError naming what to set.
func bedrockConfig(e Endpoint) (anthropicprov.Config, error) {
	c := anthropicprov.Config{BaseURL: e.BaseURL, HTTP: e.HTTP, Retry: e.Retry, ServerTools: e.ServerTools,
		ThinkingBudget: int64(settings(e).ThinkingTokens), ContextManagement: e.ContextManagement}
	b := &anthropicprov.Bedrock{Region: e.Region}
	if e.Project != "" {
		return c, configErrorf("--project is for provider vertex, not bedrock (an AWS account is its credentials')")
	}
	if e.Sim {
		b.Region = cmpOr(b.Region, "us-east-1")
		b.Credentials = aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			// The simulated model's token is its account's secret key.
			return aws.Credentials{AccessKeyID: sim.BedrockAccessKeyID, SecretAccessKey: cmpOr(e.APIKey, sim.BedrockSecretAccessKey)}, nil
		})
		c.Bedrock = b
		return c, nil
	}
	home, _ := os.UserHomeDir()
	// A credential_process, and what it runs, is found in the session's
	// PATH, never in a directory its commands write (the workspace's
	// activated .venv/bin, an --add-dir root's bin).
	hostPath := cmpOr(e.HostPath, hostfs.UserPath())
	r, err := awsauth.Resolve(func(k string) string {
		if k == "PATH" {
			return hostPath
		}
		return os.Getenv(k)
	}, home)
	if err != nil {
		return c, configErrorf("provider bedrock: %v", err)
	}
	b.RegionFrom = e.RegionFrom
	if b.Region == "" && r.Region != "" {
		b.RegionFrom = "the AWS profile's region"
	}
	b.Region = cmpOr(b.Region, r.Region)
	if b.Region == "" {
		return c, configErrorf("provider bedrock needs a region: --region, AWS_REGION, AWS_DEFAULT_REGION, or region in the profile's section of the AWS config file")
	}
	if err := regionError("bedrock", b.Region, b.RegionFrom); err != nil {
		return c, err
	}
	b.Token, b.Credentials = r.BearerToken, r.Credentials
	b.ProfileHint = bedrockProfileHint(e.Model, b.Region)
	c.KeyHint = bedrockKeyHint(r.Source)
	c.Bedrock = b
	return c, nil
}

// bedrockIDSlip says when a Bedrock model id (lower case; a profile's, an
// ARN's are not checked) names a model the catalog knows in another form
// than Bedrock's id of it: "anthropic.claude-opus-4-6-v1:0" for
// anthropic.claude-opus-4-6-v1, an id without its date. The profiles find
// the model all the same; Bedrock would not. "" otherwise.
func bedrockIDSlip(lower string) string {
	if strings.Contains(lower, "arn:") {
		return ""
	}
	geo, base := "", lower
	if g, rest, ok := strings.Cut(lower, "."); ok && strings.HasPrefix(rest, "anthropic.") {
		geo, base = g+".", rest
	}
	if !strings.HasPrefix(base, "anthropic.") {
		return ""
	}
	prof := surface.DefaultProfiles().Lookup("anthropic", bedrockModel(base))
	if prof.Guess {
		return ""
	}
	id, ok := surface.PlatformIDOf("bedrock", prof.Pattern)
	if !ok || strings.EqualFold(id.ID, base) {
		return ""
	}
	return fmt.Sprintf("Bedrock's id of this model is %s, not %q: pass --model %s%s", id.ID, base, geo, id.ID)
}

// bedrockProfileHint is what Bedrock's refusal of a model id on demand
// ("… with on-demand throughput isn't supported. Retry your request with
// the ID or ARN of an inference profile …") tells the user to pass: the
// model's cross-region inference profiles as an official page lists them
// (surface.PlatformIDs), the region's geography's first; else how to find
// them.
func bedrockProfileHint(model, region string) string {
	const lists = "aws bedrock list-inference-profiles lists them"
	prof := surface.DefaultProfiles().Lookup("anthropic", strings.ToLower(bedrockModel(model)))
	id, ok := surface.PlatformID{}, false
	if !prof.Guess {
		id, ok = surface.PlatformIDOf("bedrock", prof.Pattern)
	}
	if !ok || len(id.Profiles) == 0 {
		return "pass the id or ARN of an inference profile of the model: its id with a geography's prefix (us., eu., global., …); " + lists
	}
	first := id.Suggest(region)
	var others []string
	for _, g := range id.Profiles {
		if p := id.ProfileID(g); p != first {
			others = append(others, p)
		}
	}
	hint := "Bedrock serves this model through an inference profile: pass --model " + first
	if first == id.ID {
		// No profile of the region's geography or a global one.
		hint = "Bedrock serves this model through an inference profile: pass --model " + others[0]
		others = others[1:]
	}
	if len(others) > 0 {
		hint += " (or " + orList(others) + ")"
	}
	return hint + "; " + lists
}

// bedrockModel is the name the model profiles know for a Bedrock model id:
// "us.anthropic.claude-sonnet-4-5-20250929-v1:0" (an inference profile),
// "anthropic.claude-sonnet-4-5-20250929-v1:0" or an ARN ending in either
// is "claude-sonnet-4-5-20250929". Another id is itself.
func bedrockModel(id string) string {
	n := id[strings.LastIndexByte(id, '/')+1:]
	i := strings.Index(n, "anthropic.")
	if i < 0 {
		return id
	}
	n = n[i+len("anthropic."):]
	if j := strings.LastIndexByte(n, ':'); j >= 0 {
		n = n[:j]
	}
	if j := strings.LastIndex(n, "-v"); j >= 0 && j+2 < len(n) && strings.Trim(n[j+2:], "0123456789") == "" {
		n = n[:j]
	}
	return n
}

// platformIDWarning says when model is not in the form the cloud platform
// of the provider names it, with the same model's id there as an official
// page lists it (surface.PlatformIDs; never another model's): on Bedrock
// a Claude API id ("claude-opus-4-5"), on Vertex AI a Claude API id of a
// model whose Vertex AI id differs ("claude-sonnet-4-5", not
// "claude-sonnet-4-5@20250929"). "" otherwise, and for another provider.
func (p ProviderDef) platformIDWarning(model, region string) string {
	lower := strings.ToLower(model)
	if p.Dialect == "bedrock" {
		if msg := bedrockIDSlip(lower); msg != "" {
			return msg
		}
	}
	if !strings.HasPrefix(lower, "claude") || p.Dialect != "bedrock" && p.Dialect != "vertex" {
		return ""
	}
	prof := surface.DefaultProfiles().Lookup("anthropic", lower)
	id, known := surface.PlatformID{}, false
	if !prof.Guess {
		id, known = surface.PlatformIDOf(p.Dialect, prof.Pattern)
	}
	if p.Dialect == "vertex" {
		if !known || strings.EqualFold(id.ID, model) {
			return ""
		}
		return fmt.Sprintf("Vertex AI names this model %s, not %q: pass --model %s (truss models --provider %s lists the ids Truss knows)", id.ID, model, id.ID, p.Name)
	}
	if !known {
		return fmt.Sprintf("Bedrock names Claude models in its own form: %q is the Claude API's id; pass Bedrock's id of the same model or an inference profile's ARN (aws bedrock list-inference-profiles lists them)", model)
	}
	return fmt.Sprintf("Bedrock names Claude models in its own form: %q is the Claude API's id; pass Bedrock's, %s (its model id is %s), or an inference profile's ARN",
		model, id.Suggest(region), id.ID)
}

// bedrockKeyHint says, for a refusal of the credentials (401, 403), which
// of the chain's credentials were sent (awsauth.Resolved.Source): the
// chain takes the first it finds, so a stale one earlier in it hides the
// others.
func bedrockKeyHint(source string) string {
	switch source {
	case "":
		return ""
	case "AWS_BEARER_TOKEN_BEDROCK":
		return "the credential sent was the Bedrock API key in AWS_BEARER_TOKEN_BEDROCK, which comes before any AWS keys: check it, or unset it to use the keys"
	case "AWS_ACCESS_KEY_ID":
		return "the credentials sent were AWS_ACCESS_KEY_ID's (with AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN): check them"
	}
	return "the credentials sent were those of " + source + ": check them"
}
