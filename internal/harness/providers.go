package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/trussdev/truss/internal/suggest"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	anthropicprov "github.com/trussdev/truss/internal/provider/anthropic"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/gemini"
	"github.com/trussdev/truss/internal/provider/ollama"
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/surface"
)

// Endpoint is what a dialect's constructor needs: where the API is, the
// key, the session's retry policy and model settings.
type Endpoint struct {
	BaseURL string
	APIKey  string
	Model   string
	Retry   provider.RetryPolicy
	// HTTP is the client of the adapter (nil: its default): a named
	// provider's adds its headers.
	HTTP *http.Client
	// Settings are the session's model settings; a constructor may fill in
	// what the server reports (Ollama's context length, when ProbeContext).
	Settings     *provider.Settings
	ServerTools  []string
	Stateful     bool
	ProbeContext bool
	// ContextManagement is the Anthropic request's context_management
	// (Options.ContextEditing); nil for none.
	ContextManagement json.RawMessage
	// Token is a bearer token that replaces the key (an Entra ID token
	// for Azure), APIVersion the API version a versioned API is asked
	// for; both from the provider's TokenEnv and VersionEnv (APIVersion
	// from Options.APIVersion first).
	Token, APIVersion string
	// Region and Project are a cloud platform's location and project
	// (Vertex AI's), from Options.Region and Options.Project or the
	// provider's RegionEnv and ProjectEnv.
	Region, Project string
	// Sim is set for the simulated model: a platform's adapter takes
	// credentials of its own, none of the user's.
	Sim bool
	// HostPath is the PATH of the programs a credential chain runs on
	// the host (an AWS profile's credential_process): the session's,
	// without the directories its commands write; "" is
	// hostfs.UserPath().
	HostPath string
	// Label is the provider's name, which every error of the adapter
	// starts with ("bedrock", a named provider's NAME; "" for the
	// dialect's own); ReachHint and KeyHint say what the user checks
	// when the server cannot be reached or is not the API, and when it
	// refuses the credentials ("" for the adapter's own words). They
	// come from the provider's row (ProviderDef.hints).
	Label, ReachHint, KeyHint string
	// NotAPIHint says what to check when a server answers that is not
	// the API ("" for ReachHint, else the adapter's own words): the
	// server answered, so the network is not in question.
	NotAPIHint string
	// VersionFrom names where APIVersion was set: "--api-version" or
	// the provider's VersionEnv ("" for neither).
	VersionFrom string
	// RegionFrom names where Region was set: "--region", or the
	// variable of the provider's RegionEnv that is set ("" for neither).
	RegionFrom string
	// ThinkingOff is --thinking 0, which a Gemini 2.5 Flash model is
	// told (a thinkingBudget of 0: it thinks by default).
	ThinkingOff bool
	// Place, when set, is told where a cloud platform's requests go once
	// its constructor has resolved it (setPlace): the session's header
	// shows it.
	Place *string
}

// setPlace tells e.Place where a cloud platform's requests go: "project
// P, REGION" on Vertex AI, "REGION" on Bedrock. The simulated model's
// made-up place is not said.
func setPlace(e Endpoint, region, project string) {
	if e.Place == nil || e.Sim {
		return
	}
	*e.Place = region
	if project != "" {
		*e.Place = "project " + project + ", " + region
	}
}

// Dialect is one API dialect an adapter speaks.
type Dialect struct {
	// Name is the dialect's name, as surface profiles and the simulated
	// model know it: "anthropic", "responses", "chat", "ollama".
	Name string
	// SimPath is what follows the simulated model's base URL for this
	// dialect ("/v1" for the OpenAI dialects).
	SimPath string
	// Wire is the dialect whose requests, items, surfaces and model
	// profiles this one shares when it differs only in routes and
	// credentials ("responses" for Azure's); "" for none.
	Wire string
	// New returns the adapter on an endpoint.
	New func(ctx context.Context, e Endpoint) provider.Provider
	// Check, when set, reports an endpoint New cannot use, before any
	// work (a malformed Azure endpoint).
	Check func(e Endpoint) error
	// Platform is set for a cloud platform's route whose credentials are
	// the platform's (Vertex AI's application-default credentials), not
	// a key: it is no wire of a named provider.
	Platform bool
}

// wire returns the dialect whose requests, items, surfaces and profiles
// the dialect named name speaks: its Wire, else itself.
func wire(name string) string {
	if d, ok := dialect(name); ok && d.Wire != "" {
		return d.Wire
	}
	return name
}

// Dialects returns the API dialects of this build.
func Dialects() []Dialect { return slices.Clone(dialects) }

var dialects = []Dialect{
	{Name: "anthropic", New: func(_ context.Context, e Endpoint) provider.Provider {
		return anthropicprov.New(anthropicprov.Config{BaseURL: e.BaseURL, APIKey: e.APIKey, HTTP: e.HTTP, Retry: e.Retry, ServerTools: e.ServerTools,
			ThinkingBudget: int64(settings(e).ThinkingTokens), ContextManagement: e.ContextManagement,
			Label: e.Label, ReachHint: e.ReachHint, KeyHint: e.KeyHint})
	}},
	{Name: openaiprov.Dialect, SimPath: "/v1", New: func(_ context.Context, e Endpoint) provider.Provider {
		s := settings(e)
		return openaiprov.New(openaiprov.Config{BaseURL: e.BaseURL, APIKey: e.APIKey, HTTP: e.HTTP, Retry: e.Retry, Stateful: e.Stateful,
			ReasoningEffort: s.ReasoningEffort, ReasoningSummary: s.ReasoningSummary, CacheKey: s.CacheKey,
			Label: e.Label, ReachHint: e.ReachHint, KeyHint: e.KeyHint})
	}},
	{Name: "chat", SimPath: "/v1", New: func(_ context.Context, e Endpoint) provider.Provider {
		return chatcompat.New(chatConfig(e))
	}},
	{Name: "ollama", New: func(ctx context.Context, e Endpoint) provider.Provider {
		// Without a context from the options or the profile, the server is
		// asked what the model supports (at most surface.MaxNumCtx), so
		// that the first request is not cut to Ollama's small default.
		c := &ollama.Client{Host: e.BaseURL, APIKey: e.APIKey, HTTP: e.HTTP, Retry: e.Retry, Label: e.Label, ReachHint: e.ReachHint, KeyHint: e.KeyHint}
		s := settings(e)
		if s.ContextTokens == 0 && e.ProbeContext {
			if n, err := c.ContextLength(ctx, e.Model); err == nil {
				s.ContextTokens = min(n, surface.MaxNumCtx)
			}
		}
		c.NumCtx = s.ContextTokens
		return c
	}},
	{Name: gemini.Dialect, New: func(_ context.Context, e Endpoint) provider.Provider {
		s := settings(e)
		return gemini.New(gemini.Config{BaseURL: e.BaseURL, APIKey: e.APIKey, HTTP: e.HTTP, Retry: e.Retry,
			ThinkingTokens: s.ThinkingTokens, Effort: geminiEffort(e), Label: e.Label, ReachHint: e.ReachHint, KeyHint: e.KeyHint, NotAPIHint: e.NotAPIHint})
	}},
	{Name: "vertex", Wire: "anthropic", Platform: true, New: func(ctx context.Context, e Endpoint) provider.Provider {
		c, err := vertexConfig(ctx, e)
		if err != nil {
			return failing{name: "anthropic", err: err}
		}
		c.Label, c.ReachHint, c.KeyHint = e.Label, e.ReachHint, e.KeyHint
		setPlace(e, c.Vertex.Region, c.Vertex.Project)
		return anthropicprov.New(c)
	}, Check: func(e Endpoint) error {
		_, err := vertexConfig(context.Background(), e)
		return err
	}},
	{Name: "vertex-gemini", Wire: gemini.Dialect, Platform: true, New: func(ctx context.Context, e Endpoint) provider.Provider {
		c, err := vertexGeminiConfig(ctx, e)
		if err != nil {
			return failing{name: gemini.Dialect, err: err}
		}
		// The Gemini adapter's own words would name the Gemini API's.
		c.Label, c.ReachHint, c.KeyHint = cmpOr(e.Label, "vertex-gemini"), e.ReachHint, e.KeyHint
		c.NotAPIHint, c.Service = e.NotAPIHint, "Vertex AI's Gemini API"
		return gemini.New(c)
	}, Check: func(e Endpoint) error {
		_, err := vertexGeminiConfig(context.Background(), e)
		return err
	}},
	{Name: "bedrock", Wire: "anthropic", Platform: true, New: func(_ context.Context, e Endpoint) provider.Provider {
		c, err := bedrockConfig(e)
		if err != nil {
			return failing{name: "anthropic", err: err}
		}
		c.Label, c.ReachHint, c.KeyHint = e.Label, e.ReachHint, cmpOr(e.KeyHint, c.KeyHint)
		setPlace(e, c.Bedrock.Region, "")
		return anthropicprov.New(c)
	}, Check: func(e Endpoint) error {
		_, err := bedrockConfig(e)
		return err
	}},
	{Name: "azure", Wire: openaiprov.Dialect, New: func(_ context.Context, e Endpoint) provider.Provider {
		c, err := openaiprov.NewAzure(azureConfig(e))
		if err != nil {
			return failing{name: openaiprov.Dialect, err: &ConfigError{Msg: err.Error()}}
		}
		return c
	}, Check: func(e Endpoint) error {
		_, err := openaiprov.NewAzure(azureConfig(e))
		if err != nil {
			return &ConfigError{Msg: err.Error()}
		}
		return nil
	}},
}

// azureConfig is an endpoint's Azure OpenAI configuration: the endpoint
// its base URL, the key or the Entra ID token, the API version.
func azureConfig(e Endpoint) openaiprov.AzureConfig {
	s := settings(e)
	return openaiprov.AzureConfig{Endpoint: e.BaseURL, APIKey: e.APIKey, Token: e.Token, APIVersion: e.APIVersion, VersionFrom: e.VersionFrom,
		Config: openaiprov.Config{HTTP: e.HTTP, Retry: e.Retry, Stateful: e.Stateful,
			ReasoningEffort: s.ReasoningEffort, ReasoningSummary: s.ReasoningSummary, CacheKey: s.CacheKey,
			Label: e.Label, ReachHint: e.ReachHint, KeyHint: e.KeyHint, NotAPIHint: e.NotAPIHint}}
}

// failing is an adapter that could not be made: every turn fails with
// why.
type failing struct {
	name string
	err  error
}

func (f failing) Name() string { return f.name }

func (f failing) Turn(context.Context, *model.Request, func(model.Delta)) (*model.Response, error) {
	return nil, f.err
}

// keySent is the variable whose credential the requests carry: the
// token's, which replaces the key, else the first of the key's variables
// that is set ("" for none), which a refused key's hint names.
func (p ProviderDef) keySent(getenv func(string) string) string {
	for _, v := range append([]string{p.TokenEnv, p.KeyEnv}, p.AltKeyEnv...) {
		if v != "" && getenv(v) != "" {
			return v
		}
	}
	return ""
}

// regionFrom names where a region was set: "--region" when flag is,
// else the first of vars that is set ("" for none).
func regionFrom(flag string, vars []string) string {
	if flag != "" {
		return "--region"
	}
	for _, v := range vars {
		if os.Getenv(v) != "" {
			return v
		}
	}
	return ""
}

// geminiEffort is the effort the Gemini adapter is given: "none" for
// --thinking 0 (its way to turn thinking off), else the session's.
func geminiEffort(e Endpoint) string {
	if e.ThinkingOff {
		return "none"
	}
	return settings(e).ReasoningEffort
}

func settings(e Endpoint) *provider.Settings {
	if e.Settings == nil {
		return &provider.Settings{}
	}
	return e.Settings
}

// dialect returns the dialect named name.
func dialect(name string) (Dialect, bool) {
	for _, d := range dialects {
		if d.Name == name {
			return d, true
		}
	}
	return Dialect{}, false
}

// DialectNames lists the dialects: "anthropic, responses, chat, ollama, gemini, vertex, vertex-gemini, bedrock or azure".
func DialectNames() string {
	var names []string
	for _, d := range dialects {
		names = append(names, d.Name)
	}
	return orList(names)
}

// ProviderDef defines one provider: how it is named, which dialect it
// speaks, which environment variables configure it, and how it is made.
// The table of them (Providers) produces the wiring, the help text and the
// error texts.
type ProviderDef struct {
	// Name is the provider's name (--provider); Aliases other names of it.
	Name    string
	Aliases []string
	// Dialect is the API dialect it speaks ("" for the simulated model,
	// which speaks the one asked for).
	Dialect string
	// Title says what it is, for the help: "OpenAI's Responses API".
	Title string
	// Note is said in parentheses after it in the help, when no key is
	// needed ("vLLM, LM Studio, ...").
	Note string
	// KeyEnv names the API key's variable; KeyRequired makes it required.
	// AltKeyEnv are more variables the key is read from, in order, when
	// KeyEnv is not set (Gemini's GOOGLE_API_KEY).
	KeyEnv      string
	AltKeyEnv   []string
	KeyRequired bool
	// TokenEnv names a bearer token's variable that, when set, is used
	// instead of the key (one of the two is then required); VersionEnv
	// names the API version's variable (--api-version comes first).
	TokenEnv, VersionEnv string
	// RegionEnv and ProjectEnv name the variables a cloud platform's
	// region and project are read from, the first set of each, when
	// --region and --project do not give them; a provider without them
	// takes neither flag.
	RegionEnv, ProjectEnv []string
	// BaseURLEnv names the base URL's variable; BaseURLRequired makes it
	// required, BaseURLHint says what it is in the error when it is
	// missing, DefaultBaseURL is used when it is not set.
	BaseURLEnv      string
	BaseURLRequired bool
	BaseURLHint     string
	DefaultBaseURL  string
	// Detect is the variable whose presence selects this provider when
	// none is named, DetectNote what the variable configures (for the
	// error that none is set). The table's order is the detection order.
	Detect, DetectNote string
	// ReachHint says what to check when the server cannot be reached or
	// is not the API, where the adapter's own words do not name the
	// provider's variables ("" keeps them); NotAPIHint, when set, what
	// to check when the server answers but is not the API, where
	// ReachHint speaks of the network.
	ReachHint, NotAPIHint string
	// DefaultModel is used when no model is named ("" requires one).
	// ModelIs says what --model names when it is not a model's name
	// ("the deployment": Azure's).
	DefaultModel, ModelIs string
	// Env are the variables the provider's configuration and credentials
	// live in: names or path.Match globs ("ANTHROPIC_*"). No command Truss
	// starts gets them (WithheldEnv).
	Env []string
	// CredentialFiles are the provider's credential files and directories
	// below the home directory ("~/.aws"), hidden from every command
	// (CredentialFiles).
	CredentialFiles []string
	// Headers are more headers of every request; EnvHeaders more whose
	// values are variables' (header name to variable name). A named
	// provider of the user's configuration has them.
	Headers, EnvHeaders map[string]string
	// Named is set for a provider of the user's configuration
	// ([providers.NAME]); ConfigFile is the file it was read from.
	Named      bool
	ConfigFile string
	// ContextWindow and MaxOutput, when set, are the context window and
	// output limit of every model of the provider, over the catalog's row
	// and the guess (a named provider's context_window and max_output).
	ContextWindow, MaxOutput int
	// AnyMaker is set for a provider that serves whatever models its
	// server has, of any maker (a server the user chooses: an
	// OpenAI-compatible server, Ollama, a named provider), not only its
	// wire's maker's: the model catalog's rows of no wire (open weights
	// at a host's price) are its (truss models).
	AnyMaker bool
}

// Wire is the API wire the provider speaks, whose requests, surfaces and
// model profiles its sessions use: its dialect's Wire, else its dialect
// ("anthropic" for bedrock, "responses" for azure); the simulated
// model's is "sim".
func (p ProviderDef) Wire() string {
	if p.Dialect == "" {
		return p.Name
	}
	return wire(p.Dialect)
}

// Runs reports whether the provider's sessions can run the model
// catalog's row e and are charged by it: a row of the provider's wire
// (Claude's rows on bedrock and vertex, GPT's on azure), or a row of no
// wire (open weights at a host's price) on a provider that serves any
// maker's models (AnyMaker). A row the session's lookup never reaches on
// the wire (one of another dialect's, one behind an earlier row of the
// same pattern) is not run: Catalog leaves those out.
func (p ProviderDef) Runs(e surface.Entry) bool {
	w := p.Wire()
	if e.Provider != "" && e.Provider != w {
		return false
	}
	return e.Wire == w || e.Wire == "" && p.AnyMaker
}

// Catalog returns the rows of the model catalog (surface.Catalog) the
// provider's sessions can run (Runs), in the catalog's order, without
// the rows a session's lookup never reaches on its wire.
func (p ProviderDef) Catalog() []surface.Entry {
	w := p.Wire()
	var out []surface.Entry
	var seen []string // the patterns a lookup on the wire meets first
	for _, e := range surface.Catalog() {
		if e.Provider != "" && e.Provider != w {
			continue
		}
		shadowed := slices.Contains(seen, e.Pattern)
		seen = append(seen, e.Pattern)
		if !shadowed && p.Runs(e) {
			out = append(out, e)
		}
	}
	return out
}

// Profile is the model profile a session of the provider gets for model:
// the catalog's row its lookup finds on the provider's wire (Bedrock's
// ids read as the Claude API's), else a guess (Profile.Guess).
func (p ProviderDef) Profile(model string) surface.Profile {
	return p.withLimits(surface.DefaultProfiles().Lookup(p.Wire(), bedrockModel(model)))
}

// withLimits is prof with the provider's own limits (ContextWindow,
// MaxOutput) over its own: on an ollama wire the window is also the
// num_ctx asked for, and an output limit is never more than the window.
func (p ProviderDef) withLimits(prof surface.Profile) surface.Profile {
	if p.MaxOutput > 0 {
		prof.MaxOutput = p.MaxOutput
	}
	if p.ContextWindow > 0 {
		prof.ContextWindow = p.ContextWindow
		prof.MaxOutput = min(prof.MaxOutput, prof.ContextWindow)
		if p.Wire() == "ollama" {
			prof.NumCtx = p.ContextWindow
		}
	}
	return prof
}

// limitsText says the context and the output limit a session of the
// provider works with, and where each comes from when not from the
// model's row or the guess: "a context of 200000 (context_window of
// [providers.router]) and an output limit of 64000 tokens (max_output of
// [providers.router])". contextFlag is --context's (0: not given).
func (p ProviderDef) limitsText(prof surface.Profile, contextFlag int) string {
	window, output := fmt.Sprint(prof.ContextWindow), fmt.Sprintf("%d tokens", prof.MaxOutput)
	switch {
	case contextFlag > 0:
		window = fmt.Sprintf("%d (--context)", contextFlag)
	case p.ContextWindow > 0:
		window += fmt.Sprintf(" (context_window of [providers.%s])", p.Name)
	}
	if p.MaxOutput > 0 {
		output += fmt.Sprintf(" (max_output of [providers.%s])", p.Name)
	}
	s := fmt.Sprintf("a context of %s and an output limit of %s", window, output)
	if prof.Guess && contextFlag == 0 && p.ContextWindow == 0 && p.MaxOutput == 0 &&
		(p.Wire() == "anthropic" || strings.HasPrefix(strings.ToLower(prof.Pattern), "claude")) {
		// Lookup's guess for a Claude and for any model on an anthropic
		// wire (docs/providers.md).
		s += claudeGuessText
	}
	return s
}

// claudeGuessText says whose limits a guess for a Claude model has.
const claudeGuessText = " (Claude Sonnet 4.5's, as for any Claude or model on an anthropic wire the catalog does not know)"

// catalogRow is the model catalog's row the provider's sessions find for
// model (Profile), or false for a guess.
func (p ProviderDef) catalogRow(model string) (surface.Entry, bool) {
	prof := p.Profile(model)
	if prof.Guess {
		return surface.Entry{}, false
	}
	w := p.Wire()
	for _, e := range surface.Catalog() {
		if e.Pattern == prof.Pattern && (e.Provider == "" || e.Provider == w) {
			return e, true
		}
	}
	return surface.Entry{}, false
}

// elsewhere says, for a model the provider's sessions do not run from the
// model catalog (a guess, or another wire's row: gpt-5.2 on gemini), the
// providers of the table that do, as in truss models: "a model of
// provider vertex, anthropic or bedrock, not of vertex-gemini (pass
// --provider vertex)", the one of the same platform first. When the
// model came from a variable (from: "TRUSS_MODEL") and the provider was
// chosen, the advice is about the model: "(it came from TRUSS_MODEL: pass
// --model, or unset TRUSS_MODEL)". In an interactive session (the model
// chosen with /model), the advice is to start a session with --provider.
// "" when the model is the provider's,
// or no provider's, or the provider serves any maker's models.
func (p ProviderDef) elsewhere(model, from string, interactive bool) string {
	if p.Name == "sim" || p.AnyMaker || p.Named {
		return ""
	}
	if e, ok := p.catalogRow(model); ok && p.Runs(e) {
		return ""
	}
	var others []string
	for _, q := range providers {
		if q.Name == p.Name || q.Name == "sim" || q.AnyMaker {
			continue
		}
		if e, ok := q.catalogRow(model); ok && q.Runs(e) {
			others = append(others, q.Name)
		}
	}
	if len(others) == 0 {
		return ""
	}
	platform := func(n string) string { return strings.SplitN(n, "-", 2)[0] }
	slices.SortStableFunc(others, func(a, b string) int {
		return boolCmp(platform(b) == platform(p.Name), platform(a) == platform(p.Name))
	})
	if from != "" {
		return fmt.Sprintf("a model of provider %s, not of %s (it came from %s: pass --model, or unset %s)", orList(others), p.Name, from, from)
	}
	if interactive {
		// No flag is passed inside a session.
		return fmt.Sprintf("a model of provider %s, not of %s (start a session with --provider %s to use it there)", orList(others), p.Name, others[0])
	}
	return fmt.Sprintf("a model of provider %s, not of %s (pass --provider %s)", orList(others), p.Name, others[0])
}

// caseWarning says when model has capitals and its lower-case form is a
// model of the provider's catalog ("GPT-5.2"): the catalog's lookup
// ignores case, and the APIs do not (their ids are lower-case). "" for
// any other model, and for providers whose names are the user's (a
// server of any maker's models, a named provider, Azure's deployments).
func (p ProviderDef) caseWarning(model string) string {
	lower := strings.ToLower(model)
	if model == lower || p.AnyMaker || p.Named || p.ModelIs != "" || p.Name == "sim" {
		return ""
	}
	if e, ok := p.catalogRow(lower); !ok || !p.Runs(e) {
		return ""
	}
	return fmt.Sprintf("model ids are case-sensitive, and the model's id is lower-case: pass --model %s, not %q", lower, model)
}

// regionMismatch says when a Bedrock model id's cross-region inference
// profile (us., eu., apac., jp., au.) is of another geography than the
// region the requests go to (us.anthropic.… in eu-west-1): Bedrock refuses
// it there. "" otherwise, and for another provider.
func (p ProviderDef) regionMismatch(model, region string) string {
	if p.Dialect != "bedrock" || region == "" || !regionForm("bedrock", region) {
		return "" // a malformed region is refused on its own (regionError)
	}
	geo, _, ok := strings.Cut(model, ".")
	if !ok || strings.Contains(geo, ":") {
		return ""
	}
	prefix := map[string]string{"us": "us-", "eu": "eu-", "apac": "ap-", "jp": "ap-northeast-", "au": "ap-southeast-", "ca": "ca-"}[geo]
	if prefix == "" || strings.HasPrefix(region, prefix) || geo == "us" && strings.HasPrefix(region, "us-gov-") {
		return ""
	}
	return fmt.Sprintf("%q is a %s. cross-region inference profile, and the region is %s: pass a model id of its geography (%s) or one without a prefix, or another --region", model, geo, region, map[bool]string{true: "eu.anthropic.…", false: "its prefix"}[strings.HasPrefix(region, "eu-")])
}

// boolCmp orders false before true.
func boolCmp(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// hints are what the provider's errors tell the user to check: where the
// server's address is set (for a named provider, its base_url in its
// file; "" for the adapter's own words, which name the built-in
// provider's variables) and where the key is (its variables; for the
// built-in ollama, which sends none, how a server that wants one is
// named).
func (p ProviderDef) hints() (reach, key string) {
	if p.Named {
		where := fmt.Sprintf("[providers.%s] in %s", p.Name, cmpOr(p.ConfigFile, config.UserFile))
		reach = "check base_url of " + where
		if p.KeyEnv == "" {
			return reach, "if the server wants a key, set env_key of " + where + " to the variable that holds it"
		}
		return reach, fmt.Sprintf("check %s (env_key of %s)", p.KeyEnv, where)
	}
	var vars []string
	for _, v := range append([]string{p.KeyEnv}, append(p.AltKeyEnv, p.TokenEnv)...) {
		if v != "" {
			vars = append(vars, v)
		}
	}
	if len(vars) > 0 {
		key = "check " + orList(vars)
	}
	if p.Name == "ollama" {
		// The built-in provider sends no key: a server that wants one
		// (ollama.com's API, a proxy in front of a server) is a named
		// provider's.
		key = "the ollama provider sends no key: a server that needs one is a provider of your configuration (~/.config/truss/config.toml): [providers.NAME] with wire = \"ollama\", base_url and env_key (the variable that holds the key), used with --provider NAME"
	}
	return p.ReachHint, key
}

// Providers returns the table of the providers of this build, in the
// order their variables are detected.
func Providers() []ProviderDef { return slices.Clone(providers) }

var providers = []ProviderDef{
	{Name: "chat", Aliases: []string{"openai-compatible"}, Dialect: "chat", Title: "an OpenAI-compatible server", AnyMaker: true,
		Note: "vLLM, LM Studio, llama.cpp, Ollama /v1", KeyEnv: "OPENAI_API_KEY",
		BaseURLEnv: "OPENAI_BASE_URL", BaseURLRequired: true, BaseURLHint: "the server's /v1 URL (for example http://127.0.0.1:8000/v1)",
		Detect: "OPENAI_BASE_URL", DetectNote: "an OpenAI-compatible server", Env: []string{"OPENAI_*"}},
	{Name: "openai", Dialect: openaiprov.Dialect, Title: "OpenAI's Responses API", KeyEnv: "OPENAI_API_KEY", KeyRequired: true,
		BaseURLEnv: "OPENAI_BASE_URL", Detect: "OPENAI_API_KEY", DetectNote: "OpenAI", DefaultModel: "gpt-5.2", Env: []string{"OPENAI_*"}},
	{Name: "ollama", Dialect: "ollama", Title: "Ollama's native API", AnyMaker: true, BaseURLEnv: "OLLAMA_HOST", DefaultBaseURL: ollama.DefaultHost,
		Detect: "OLLAMA_HOST", DetectNote: "Ollama", Env: []string{"OLLAMA_*"}},
	{Name: "anthropic", Dialect: "anthropic", Title: "Anthropic's Messages API", KeyEnv: "ANTHROPIC_API_KEY", KeyRequired: true,
		BaseURLEnv: "ANTHROPIC_BASE_URL", Detect: "ANTHROPIC_API_KEY", DetectNote: "Anthropic; ANTHROPIC_BASE_URL optional", DefaultModel: "claude-sonnet-4-5", Env: []string{"ANTHROPIC_*"}},
	{Name: "gemini", Dialect: gemini.Dialect, Title: "Google's Gemini API", KeyEnv: "GEMINI_API_KEY", AltKeyEnv: []string{"GOOGLE_API_KEY"}, KeyRequired: true,
		BaseURLEnv: "GOOGLE_GEMINI_BASE_URL", DefaultBaseURL: gemini.DefaultBaseURL, Detect: "GEMINI_API_KEY", DetectNote: "Google's Gemini API",
		ReachHint:    "check the network or GOOGLE_GEMINI_BASE_URL",
		NotAPIHint:   "is GOOGLE_GEMINI_BASE_URL the address of the Gemini API?",
		DefaultModel: "gemini-2.5-pro", Env: []string{"GEMINI_*", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"}},
	{Name: "vertex", Dialect: "vertex", Title: "Anthropic's models on Google Vertex AI",
		Note:       "Google application-default credentials; --region, CLOUD_ML_REGION or GOOGLE_CLOUD_LOCATION; --project or ANTHROPIC_VERTEX_PROJECT_ID",
		BaseURLEnv: "ANTHROPIC_VERTEX_BASE_URL", RegionEnv: []string{"CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION"},
		ProjectEnv: []string{"ANTHROPIC_VERTEX_PROJECT_ID", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"},
		Detect:     "ANTHROPIC_VERTEX_PROJECT_ID", DetectNote: "Anthropic's models on Vertex AI", DefaultModel: "claude-sonnet-4-5@20250929",
		Env:             []string{"ANTHROPIC_*", "CLOUD_ML_REGION", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "CLOUDSDK_*"},
		CredentialFiles: []string{"~/.config/gcloud"}},
	{Name: "vertex-gemini", Dialect: "vertex-gemini", Title: "Google's Gemini models on Vertex AI",
		Note:       "Google application-default credentials; --region, GOOGLE_CLOUD_LOCATION or CLOUD_ML_REGION; --project or GOOGLE_CLOUD_PROJECT",
		BaseURLEnv: "GOOGLE_VERTEX_BASE_URL", RegionEnv: []string{"GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"},
		ProjectEnv: []string{"GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"}, DefaultModel: "gemini-2.5-pro",
		ReachHint:       "check the network, --region, GOOGLE_CLOUD_LOCATION or GOOGLE_VERTEX_BASE_URL",
		NotAPIHint:      "is GOOGLE_VERTEX_BASE_URL the address of Vertex AI?",
		Env:             []string{"GOOGLE_*", "GCLOUD_PROJECT", "CLOUD_ML_REGION", "CLOUDSDK_*"},
		CredentialFiles: []string{"~/.config/gcloud"}},
	{Name: "bedrock", Dialect: "bedrock", Title: "Anthropic's models on Amazon Bedrock",
		Note:       "AWS_BEARER_TOKEN_BEDROCK, AWS_ACCESS_KEY_ID or an AWS profile (static keys or credential_process); --region or AWS_REGION",
		BaseURLEnv: "ANTHROPIC_BEDROCK_BASE_URL", RegionEnv: []string{"AWS_REGION", "AWS_DEFAULT_REGION"},
		DefaultModel: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
		Env:          []string{"AWS_*", "ANTHROPIC_BEDROCK_BASE_URL"}, CredentialFiles: []string{"~/.aws"}},
	{Name: "azure", Dialect: "azure", Title: "Azure OpenAI's Responses API", Note: "AZURE_OPENAI_API_KEY or an Entra ID token in AZURE_OPENAI_AD_TOKEN; --model names the deployment",
		KeyEnv: "AZURE_OPENAI_API_KEY", TokenEnv: "AZURE_OPENAI_AD_TOKEN", VersionEnv: "AZURE_OPENAI_API_VERSION",
		BaseURLEnv: "AZURE_OPENAI_ENDPOINT", BaseURLRequired: true, BaseURLHint: "the resource's address (https://RESOURCE.openai.azure.com)",
		ReachHint: "check the network or AZURE_OPENAI_ENDPOINT", NotAPIHint: "is AZURE_OPENAI_ENDPOINT the address of an Azure OpenAI resource?", ModelIs: "the deployment",
		Detect: "AZURE_OPENAI_ENDPOINT", DetectNote: "Azure OpenAI", Env: []string{"AZURE_*"}, CredentialFiles: []string{"~/.azure"}},
	{Name: "sim", Title: "the simulated model in-process, playing --script (no key, no network)"},
}

// simDialectFor is the dialect the simulated model speaks when
// --sim-dialect is not given: the one a typed surface asked for needs
// (openai and codex: responses), else its model's (sim-gpt*: responses,
// as the catalog gives those the openai and codex surfaces; sim-gemini*:
// gemini), else anthropic.
func simDialectFor(surfaceName, model string) string {
	if d, typed := typedSurface(surfaceName); typed {
		return d
	}
	switch {
	case strings.HasPrefix(model, "sim-gpt"):
		return openaiprov.Dialect
	case strings.HasPrefix(model, "sim-gemini"):
		return gemini.Dialect
	}
	return "anthropic"
}

// simModel is the simulated model's default name for a dialect (its
// wire's).
func simModel(dialect string) string {
	if dialect == "bedrock" {
		return "anthropic.sim-claude-v1:0" // Bedrock's form, which the profiles map
	}
	switch wire(dialect) {
	case "anthropic":
		return "sim-claude"
	case openaiprov.Dialect:
		return "sim-gpt"
	case gemini.Dialect:
		return "sim-gemini"
	}
	return "sim-coder"
}

// lookupProvider returns the provider named name (or one of its aliases).
func lookupProvider(name string) (ProviderDef, bool) {
	for _, p := range providers {
		if p.Name == name {
			return p, true
		}
		for _, a := range p.Aliases {
			if a == name {
				return p, true
			}
		}
	}
	return ProviderDef{}, false
}

// ProviderHelp is the help text of the providers and their variables, one
// line each.
func ProviderHelp() string {
	var sb strings.Builder
	for _, p := range providers {
		line := p.Title
		switch {
		case len(p.RegionEnv) > 0:
			line += " (" + p.Note + ")"
		case p.KeyEnv != "" && p.KeyRequired:
			line += " with " + p.KeyEnv
			if p.BaseURLEnv != "" {
				line += " (" + p.BaseURLEnv + " optional)"
			}
		case p.BaseURLEnv != "":
			line += " at " + p.BaseURLEnv
			if p.DefaultBaseURL != "" {
				line += " (default " + p.DefaultBaseURL + ")"
			} else if p.Note != "" {
				line += " (" + p.Note + ")"
			}
		}
		fmt.Fprintf(&sb, "  --provider %-10s %s\n", p.Name, line)
	}
	fmt.Fprintf(&sb, "  --provider %-10s %s\n", "NAME", "a provider of the user's configuration: [providers.NAME] in "+config.UserFile+" (docs/providers.md)")
	return sb.String()
}

// detectProvider returns the provider the environment configures.
func detectProvider(getenv func(string) string) (string, error) {
	var vars, modelless, chosen []string
	for _, p := range providers {
		if p.Detect == "" {
			if p.Name != "sim" {
				chosen = append(chosen, p.Name)
			}
			continue
		}
		if v := getenv(p.Detect); v != "" && !(p.Name == "chat" && openAIsOwn(v)) {
			return p.Name, nil
		}
		names := append([]string{p.Detect}, p.AltKeyEnv...)
		vars = append(vars, fmt.Sprintf("%s (%s)", strings.Join(names, " or "), p.DetectNote))
		if p.DefaultModel == "" {
			modelless = append(modelless, p.Name)
		}
	}
	// A provider's other key variable (Gemini's GOOGLE_API_KEY) selects
	// it when no provider's own variable does: Google's key of other
	// uses does not outrank another provider's.
	for _, p := range providers {
		for _, alt := range p.AltKeyEnv {
			if p.Detect != "" && getenv(alt) != "" {
				return p.Name, nil
			}
		}
	}
	msg := fmt.Sprintf("no model provider configured: set %s (%s take a model too: TRUSS_MODEL or --model); or pass --provider (%s are chosen only by it); `truss demo` needs none",
		orList(vars), andList(modelless), andList(chosen))
	// Credentials of a provider chosen only by --provider: say which.
	for _, v := range []string{"AWS_BEARER_TOKEN_BEDROCK", "AWS_PROFILE", "AWS_ACCESS_KEY_ID"} {
		if getenv(v) != "" {
			msg += fmt.Sprintf("; %s is set: for Amazon Bedrock pass --provider bedrock", v)
			break
		}
	}
	return "", configErrorf("%s", msg)
}

// andList joins names as "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// chatConfig is the Chat Completions adapter's configuration of an
// endpoint: at OpenAI's own API the output limit goes as
// max_completion_tokens, which its reasoning models take and max_tokens
// they refuse.
func chatConfig(e Endpoint) chatcompat.Config {
	return chatcompat.Config{BaseURL: e.BaseURL, APIKey: e.APIKey, HTTP: e.HTTP, Retry: e.Retry, ReasoningEffort: settings(e).ReasoningEffort,
		MaxCompletionTokens: openAIsOwn(e.BaseURL), Label: e.Label, ReachHint: e.ReachHint, KeyHint: e.KeyHint}
}

// chatAtOpenAINote is the note of a session on a chat wire at OpenAI's own
// API (base): --provider openai speaks the Responses API, with the typed
// tools OpenAI's models are trained on. "" otherwise.
func (p ProviderDef) chatAtOpenAINote(base string) string {
	if p.Wire() != "chat" || !openAIsOwn(base) {
		return ""
	}
	return fmt.Sprintf("note: %s is OpenAI's own API, spoken here as Chat Completions with the generic tools; --provider openai speaks its Responses API, with the typed tools (shell, apply_patch) OpenAI's models are trained on", base)
}

// openAIsOwn reports whether base is OpenAI's own API's address
// (https://api.openai.com/v1, which other tools export as
// OPENAI_BASE_URL): detected, it is the openai provider's, whose
// Responses API and typed tools OpenAI's models take, not chat's.
func openAIsOwn(base string) bool {
	u, err := url.Parse(strings.TrimSpace(base))
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// WithheldEnv are the variables of every provider of the table (names
// and path.Match globs), which no command Truss starts gets: a shell's
// WithholdEnv.
func WithheldEnv() []string {
	var out []string
	for _, p := range providers {
		for _, e := range p.Env {
			if !slices.Contains(out, e) {
				out = append(out, e)
			}
		}
	}
	return out
}

// CredentialFiles are the credential files and directories of every
// provider of the table below home, hidden from every command.
func CredentialFiles(home string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for _, p := range providers {
		for _, f := range p.CredentialFiles {
			if abs := config.ExpandHome(f, home); !slices.Contains(out, abs) {
				out = append(out, abs)
			}
		}
	}
	return out
}

// ProviderList are the names of the providers (not their aliases), in
// the table's order.
func ProviderList() []string {
	names := make([]string, 0, len(providers))
	for _, p := range providers {
		names = append(names, p.Name)
	}
	return names
}

// IsProvider reports whether name names a provider: one of the table
// (or an alias) or of the user's configuration (LoadUser's, in Truss's
// directory).
func IsProvider(name string) bool {
	if _, ok := lookupProvider(name); ok {
		return true
	}
	_, err := (&Session{}).providerDef(name)
	return err == nil
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// ProviderNames lists the providers: "chat, openai, ollama, anthropic, gemini, vertex, vertex-gemini, bedrock, azure or sim".
func ProviderNames() string { return orList(ProviderList()) }

// NoModel is the error of a provider that needs a model and was given
// none: it says what --model names when that is not a model's name, and,
// for a provider of the user's configuration, the setting that gives it.
func (p ProviderDef) NoModel() error {
	if p.Named {
		what := "the model"
		if p.Dialect == "azure" {
			what = "the deployment"
		}
		return configErrorf("no model given for provider %s: add model = \"…\" (%s its requests name) to [providers.%s] in %s, or pass --model or set TRUSS_MODEL", p.Name, what, p.Name, cmpOr(p.ConfigFile, config.UserFile))
	}
	if p.ModelIs != "" {
		return configErrorf("no model given for provider %s: pass --model with the name of %s (on %s, --model names %s, not the model), or set TRUSS_MODEL", p.Name, p.ModelIs, p.Name, p.ModelIs)
	}
	return configErrorf("no model given for provider %s: pass --model or set TRUSS_MODEL", p.Name)
}

// firstEnv is the value of the first of names that is set.
func firstEnv(names []string) string {
	for _, n := range names {
		if v := os.Getenv(n); v != "" {
			return v
		}
	}
	return ""
}

// checkFlags refuses the platform options a provider does not take
// (--region, --project, --api-version), naming those that do.
func (p ProviderDef) checkFlags(o *Options) error {
	takes := func(f func(ProviderDef) bool) string {
		var names []string
		for _, q := range providers {
			if f(q) {
				names = append(names, q.Name)
			}
		}
		return orList(names)
	}
	regional := func(q ProviderDef) bool { return len(q.RegionEnv) > 0 }
	projected := func(q ProviderDef) bool { return len(q.ProjectEnv) > 0 }
	versioned := func(q ProviderDef) bool { return q.VersionEnv != "" }
	// The simulated model takes them for the dialect it speaks.
	refuses := func(f func(ProviderDef) bool) bool {
		return !f(p) && !(p.Name == "sim" && slices.ContainsFunc(providers, func(q ProviderDef) bool { return f(q) && q.Dialect == o.SimDialect }))
	}
	switch {
	case o.Region != "" && refuses(regional):
		return configErrorf("--region and --project are for provider %s, not %s (--project only for %s)", takes(regional), p.Name, takes(projected))
	case o.Project != "" && refuses(projected):
		return configErrorf("--project is for provider %s, not %s", takes(projected), p.Name)
	case o.APIVersion != "" && refuses(versioned):
		return configErrorf("--api-version is for provider %s, not %s", takes(versioned), p.Name)
	}
	return nil
}

// endpoint reads a provider's variables: its base URL and key, checked.
func (p ProviderDef) endpoint(getenv func(string) string) (base, key string, err error) {
	if p.BaseURLEnv != "" {
		base = getenv(p.BaseURLEnv)
	}
	if base == "" && p.BaseURLRequired {
		return "", "", configErrorf("provider %s needs %s, %s", p.Name, p.BaseURLEnv, p.BaseURLHint)
	}
	if p.BaseURLEnv != "" && strings.Contains(base, "?") {
		// The adapters append their routes to the base URL: after a
		// query they would be part of it. Its value is not said: a key
		// may be in it.
		where := ""
		if p.KeyEnv != "" {
			where = " (a key goes in " + orList(append([]string{p.KeyEnv}, p.AltKeyEnv...)) + ")"
		}
		if p.Dialect == "azure" {
			// The portal's target URI of a deployment, whose query is
			// an api-version: the resource's address and the
			// deployment are said (never the query).
			if p.VersionEnv != "" {
				where = fmt.Sprintf(" (a key goes in %s, an api-version in %s or --api-version)", p.KeyEnv, p.VersionEnv)
			}
			if fix := openaiprov.EndpointFix(base); fix != "" {
				return "", "", configErrorf("%s has a query (?…), which a base URL cannot carry%s%s", p.BaseURLEnv, where, fix)
			}
		}
		return "", "", configErrorf("%s has a query (?…), which a base URL cannot carry%s: set it to the address alone", p.BaseURLEnv, where)
	}
	if p.Dialect == "ollama" && !p.Named {
		base = ollama.HostURL(base)
	} else if base == "" {
		base = p.DefaultBaseURL
	}
	if p.KeyEnv != "" {
		key = getenv(p.KeyEnv)
	}
	for _, v := range p.AltKeyEnv {
		if key == "" {
			key = getenv(v)
		}
	}
	if key == "" && p.KeyRequired {
		return "", "", configErrorf("provider %s needs %s", p.Name, orList(append([]string{p.KeyEnv}, p.AltKeyEnv...)))
	}
	if key == "" && p.TokenEnv != "" && getenv(p.TokenEnv) == "" {
		return "", "", configErrorf("provider %s needs %s, or a token in %s", p.Name, p.KeyEnv, p.TokenEnv)
	}
	return base, key, nil
}

// header is the provider's extra headers, with the values of EnvHeaders
// read; a variable of EnvHeaders that is not set is an error.
func (p ProviderDef) header(getenv func(string) string) (http.Header, error) {
	h := http.Header{}
	for k, v := range p.Headers {
		h.Set(k, v)
	}
	for _, k := range slices.Sorted(maps.Keys(p.EnvHeaders)) {
		v := getenv(p.EnvHeaders[k])
		if v == "" {
			return nil, configErrorf("provider %s needs %s (the %s header)", p.Name, p.EnvHeaders[k], k)
		}
		h.Set(k, v)
	}
	return h, nil
}

// cloudSecretEnv are the variables of a cloud platform's credentials
// whose values an error must not show.
var cloudSecretEnv = []string{"AWS_BEARER_TOKEN_BEDROCK", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}

// secrets are the credentials e's requests carry, which an error that
// quotes a server's answer shows masked (provider.RetryPolicy.Secrets):
// the key, the token, the values of the headers read from the
// environment, a base URL's password, a cloud platform's keys.
func (p ProviderDef) secrets(e Endpoint, getenv func(string) string) []string {
	s := []string{e.APIKey, e.Token}
	for _, k := range slices.Sorted(maps.Keys(p.EnvHeaders)) {
		s = append(s, getenv(p.EnvHeaders[k]))
	}
	if u, err := url.Parse(e.BaseURL); err == nil && u.User != nil {
		pw, _ := u.User.Password()
		s = append(s, pw)
	}
	if p.Dialect == "bedrock" {
		for _, k := range cloudSecretEnv {
			s = append(s, getenv(k))
		}
	}
	return slices.DeleteFunc(s, func(v string) bool { return v == "" })
}

// namedProvider makes the definition of a provider of the user's
// configuration, read from file (which errors name, as the file's own
// errors do: "FILE: providers.NAME: …"). A wire is one of config.Wires, or
// openai-compatible (chat's other name); openai and a cloud platform's
// route are refused with what to use instead.
func namedProvider(name, file string, c config.Provider) (ProviderDef, error) {
	w := c.Wire
	if w == "openai-compatible" {
		w = "chat"
	}
	if d, ok := dialect(w); !ok || d.Platform {
		why := fmt.Sprintf("wire %q is not one of %s", c.Wire, orList(Wires()))
		switch {
		case w == "":
			why = "wire is missing: the API the server speaks (" + orList(Wires()) + ")"
		case w == "openai":
			why += ": use responses for OpenAI's Responses API, chat for a Chat Completions server"
		case ok && d.Platform:
			why += fmt.Sprintf(": %s is a cloud platform's route with the platform's credentials; use --provider %s", w, w)
		default:
			if near := suggest.Nearest(c.Wire, Wires()); near != "" {
				why += "; did you mean " + near + "?"
			}
		}
		return ProviderDef{}, configErrorf("%s: providers.%s: %s", file, name, why)
	}
	window, output := c.Limits()
	return ProviderDef{Name: name, Dialect: w, Title: "the user's provider at " + c.BaseURL, KeyEnv: c.EnvKey, KeyRequired: c.EnvKey != "",
		DefaultBaseURL: c.BaseURL, DefaultModel: c.Model, Env: c.Vars(), Headers: c.Headers, EnvHeaders: c.EnvHeaders, Named: true, AnyMaker: true, ConfigFile: file,
		ContextWindow: window, MaxOutput: output}, nil
}

// Wires are the dialects a named provider's wire may be: those that are
// no cloud platform's route.
func Wires() []string {
	var out []string
	for _, d := range dialects {
		if !d.Platform {
			out = append(out, d.Name)
		}
	}
	return out
}

// providerDef returns the provider named name: the table's, else the
// user's configuration's (read now when the session has not yet).
func (s *Session) providerDef(name string) (ProviderDef, error) {
	if s.user == nil {
		if err := s.loadUser(); err != nil {
			return ProviderDef{}, err
		}
	}
	if s.user != nil {
		for _, n := range slices.Sorted(maps.Keys(s.user.Providers)) {
			if _, ok := lookupProvider(n); ok {
				return ProviderDef{}, configErrorf("%s: providers.%s: %s is a built-in provider; give yours another name", s.userFile(), n, n)
			}
		}
	}
	if def, ok := lookupProvider(name); ok {
		return def, nil
	}
	if s.user != nil {
		if c, ok := s.user.Providers[name]; ok {
			return namedProvider(name, s.userFile(), c)
		}
	}
	names := ProviderList()
	if s.user != nil {
		names = append(names, slices.Sorted(maps.Keys(s.user.Providers))...)
	}
	if file, ok := config.ProjectProvider(cmpOr(s.opts.Root, "."), name); ok {
		return ProviderDef{}, configErrorf("unknown provider %q: choose %s; %s defines [providers.%s], but a project's configuration cannot define providers (no repository may choose where your keys go): define it in the user's configuration, %s",
			name, orList(names), file, name, s.userFile())
	}
	if near := suggest.Nearest(name, names); near != "" {
		return ProviderDef{}, configErrorf("unknown provider %q: choose %s; did you mean %s?", name, orList(names), near)
	}
	return ProviderDef{}, configErrorf("unknown provider %q: choose %s", name, orList(names))
}

// modelHint is what a 404 about the model tells the user to check: where
// the model came from (source, as Session.modelSource: "--model",
// "TRUSS_MODEL", "session ID", "model in config.toml", "" for the
// provider's default or model setting), and where the models are listed ("" for Azure, whose --model
// names a deployment and whose adapter says so).
func (p ProviderDef) modelHint(source string) string {
	if p.ModelIs != "" {
		return ""
	}
	var where string
	switch {
	case source == "--model":
		where = "check --model"
	case source == "TRUSS_MODEL":
		where = "check TRUSS_MODEL (or pass --model)"
	case strings.HasPrefix(source, "session "):
		where = "the model is " + source + "'s: pass --model"
	case source == "model in "+config.UserFile:
		where = "check model in " + config.UserFile + " (or pass --model)"
	case p.Named:
		where = fmt.Sprintf("check model in [providers.%s] of %s (or pass --model)", p.Name, cmpOr(p.ConfigFile, config.UserFile))
	default:
		where = fmt.Sprintf("the model is %s's default: pass --model", p.Name)
	}
	switch {
	case p.Named:
		return where + " (an interactive session's /model lists the server's models)"
	case p.Dialect == "ollama":
		return where + " (ollama list shows the models pulled)"
	}
	return where + " (truss models lists the models Truss knows)"
}

// nearestModel is the model of the provider's catalog rows a mistyped
// model most likely meant (nearest: a letter left out, added or changed),
// in the platform's own form on Bedrock and Vertex AI (a Claude API id
// near is given as the platform's id of that model, on Bedrock its
// inference profile for region, as platformIDWarning gives it, and a
// profile's id is compared with the profiles'); "" for none, and for a
// provider that serves any maker's models (whose catalog rows are a few
// of many: gpt-4o is no typo of gpt-4.1).
func (p ProviderDef) nearestModel(model, region string) string {
	if p.AnyMaker || p.Named || p.Name == "sim" {
		return ""
	}
	var names []string
	for _, e := range p.Catalog() {
		if n := strings.TrimSuffix(e.Pattern, "*"); !isGlobPattern(n) && n != "" {
			names = append(names, n)
		}
	}
	for _, id := range surface.PlatformIDs(p.Dialect) {
		names = append(names, id.ID)
		for _, g := range id.Profiles {
			names = append(names, id.ProfileID(g))
		}
	}
	if slices.Contains(names, model) {
		return ""
	}
	near := suggest.Nearest(model, names)
	if p.Dialect == "bedrock" || p.Dialect == "vertex" {
		if id, ok := surface.PlatformIDOf(p.Dialect, near); ok {
			if p.Dialect == "vertex" {
				return id.ID
			}
			return id.Suggest(region)
		}
	}
	return near
}

// isGlobPattern reports whether a catalog pattern has a wildcard.
func isGlobPattern(s string) bool { return strings.ContainsAny(s, "*?[") }

// Nearest is the one of names a mistyped name most likely meant (as a
// mistyped --provider is met with), "" for none.
func Nearest(name string, names []string) string { return suggest.Nearest(name, names) }

// userFile is the user's configuration file (in Truss's directory), for
// messages.
func (s *Session) userFile() string {
	dir, err := s.keyDir()
	if err != nil {
		return config.UserFile
	}
	return filepath.Join(dir, config.UserFile)
}

// LookupProvider returns the provider named name: one of the table (a
// name or an alias) or of the user's configuration in Truss's directory
// ([providers.NAME]). An unknown name, or a user's configuration that
// cannot be read, is a *ConfigError naming the choices.
func LookupProvider(name string) (ProviderDef, error) {
	return (&Session{}).providerDef(name)
}

// DemoScript names the bundled demo fix as a simulated model's script;
// DemoInteractiveScript names the bundled interactive demo's script.
const (
	DemoScript            = "demo"
	DemoInteractiveScript = "demo-interactive"
)

// newProvider builds the session's adapter. The simulated model is started
// on a loopback port for the life of ctx.
func (s *Session) newProvider(ctx context.Context, retry provider.RetryPolicy) (provider.Provider, error) {
	o := &s.opts
	e := Endpoint{Model: o.Model, Retry: retry, Settings: &s.settings, ServerTools: o.ServerTools, Stateful: o.Stateful, ProbeContext: true, Place: &s.place}
	if s.w != nil {
		e.HostPath = s.w.hostPath
	}
	if o.ContextEditing {
		_, memory := s.set.Lookup("memory")
		e.ContextManagement = compact.DefaultContextEditing(int(s.contextLimit()), memory).ContextManagement()
	}
	def, err := s.providerDef(o.Provider)
	if err != nil {
		return nil, err
	}
	if def.Name != "sim" {
		if err := s.thinkingFits(def); err != nil {
			return nil, err
		}
		if err := s.thinkingFlags(def); err != nil {
			return nil, err
		}
		e.ThinkingOff = o.ThinkingTokens != nil && *o.ThinkingTokens == 0
		d, _ := dialect(def.Dialect)
		e.Label = def.Name
		e.ReachHint, e.KeyHint = def.hints()
		if !def.Named {
			e.NotAPIHint = def.NotAPIHint
		}
		if v := def.keySent(os.Getenv); v != "" && !def.Named {
			e.KeyHint = "check " + v
		}
		if e.BaseURL, e.APIKey, err = def.endpoint(os.Getenv); err != nil {
			return nil, err
		}
		if note := def.chatAtOpenAINote(e.BaseURL); note != "" {
			s.warn(note)
		}
		if def.TokenEnv != "" {
			e.Token = os.Getenv(def.TokenEnv)
		}
		if def.VersionEnv != "" {
			e.APIVersion = cmpOr(o.APIVersion, os.Getenv(def.VersionEnv))
			switch {
			case o.APIVersion != "":
				e.VersionFrom = "--api-version"
			case e.APIVersion != "":
				e.VersionFrom = def.VersionEnv
			}
		}
		e.Region, e.Project = cmpOr(o.Region, firstEnv(def.RegionEnv)), cmpOr(o.Project, firstEnv(def.ProjectEnv))
		e.RegionFrom = regionFrom(o.Region, def.RegionEnv)
		h, err := def.header(os.Getenv)
		if err != nil {
			return nil, err
		}
		// The credentials the requests carry and the credential chains
		// hold are recorded for this provider's errors to mask.
		e.Retry.Sent = &provider.Sent{}
		e.HTTP = s.predial.Client(h, sdkHeaderTimeout(def.Dialect, h), e.Retry.Sent)
		e.Retry.Secrets = def.secrets(e, os.Getenv)
		e.Retry.ModelHint = def.modelHint(s.modelSource)
		if d.Check != nil {
			if err := d.Check(e); err != nil {
				return nil, err
			}
		}
		return d.New(ctx, e), nil
	}
	sc := o.SimScript
	if sc == nil {
		script := examples.DemoScript
		switch o.Script {
		case DemoScript:
		case DemoInteractiveScript:
			script = examples.DemoInteractiveScript
		default:
			b, err := os.ReadFile(o.Script)
			if err != nil {
				return nil, configErrorf("--script: %v", err)
			}
			script = b
		}
		if sc, err = sim.ParseScript(script); err != nil {
			if o.Script != DemoScript && o.Script != DemoInteractiveScript {
				return nil, configErrorf("--script %s: %v", o.Script, err)
			}
			return nil, configErrorf("%v", err)
		}
	}
	// The server lives as long as the session, on a loopback port that a
	// sandboxed command with the network on can reach: it answers only
	// requests that carry this process's random token, which the adapter
	// sends as its API key.
	srv := sim.New(sc)
	srv.Token = sim.NewToken()
	srv.Root = o.SimRoot
	srv.Spec = simSpec()
	base, err := srv.Listen(s.life) // for the life of the session
	if err != nil {
		return nil, err
	}
	d, _ := dialect(o.SimDialect)
	e.BaseURL, e.APIKey, e.Sim = base+d.SimPath, srv.Token, true
	e.Region, e.Project, e.APIVersion = o.Region, o.Project, o.APIVersion
	return d.New(ctx, e), nil
}

// thinkingFits refuses a thinking budget that is not below the model's
// output limit on an anthropic wire: the API takes budget_tokens only
// below max_tokens, and max_tokens only up to the model's limit, so no
// request could carry it.
func (s *Session) thinkingFits(def ProviderDef) error {
	n, limit := s.settings.ThinkingTokens, s.prof.MaxOutput
	if wire(def.Dialect) != "anthropic" || n == 0 || limit <= 0 || n < limit {
		return nil
	}
	return configErrorf("--thinking %d is not below the output limit of %s (%d tokens), which holds the thinking and the answer: pass a budget below it, such as %d", n, s.opts.Model, limit, limit/2)
}

// thinkingFlags refuses to turn off the thinking of a model that cannot
// (Gemini 2.5 Pro), and warns, once, of a thinking flag the provider's
// API has no use for, or that another flag overrides: it would otherwise
// be dropped without a word.
func (s *Session) thinkingFlags(def ProviderDef) error {
	o := &s.opts
	thinking, effort := o.ThinkingTokens != nil, o.ReasoningEffort != ""
	w := wire(def.Dialect)
	if w == gemini.Dialect && strings.Contains(o.Model, "gemini-2.5-pro") && (thinking && *o.ThinkingTokens == 0 || !thinking && o.ReasoningEffort == "none") {
		flag := "--thinking 0"
		if !thinking {
			flag = "--reasoning-effort none"
		}
		return configErrorf("%s: %s cannot turn its thinking off (its thinkingBudget is 128 to 32768 tokens): pass --thinking 128 for the least, or use gemini-2.5-flash, which can", flag, o.Model)
	}
	if w == gemini.Dialect && thinking && *o.ThinkingTokens != 0 && !gemini.IsGemini3(o.Model) {
		if lo, hi, ok := geminiBudgetRange(o.Model); ok && (*o.ThinkingTokens < lo || *o.ThinkingTokens > hi) {
			return configErrorf("--thinking %d: %s's thinkingBudget is %d to %d tokens (Google's thinking guide): pass a budget in that range, such as %d", *o.ThinkingTokens, o.Model, lo, hi, min(max(*o.ThinkingTokens, lo), hi))
		}
	}
	if o.ReasoningEffort == "none" && (w == openaiprov.Dialect || w == "chat") && !def.AnyMaker && !def.Named {
		if prof := def.Profile(o.Model); !prof.Guess && prof.Reasoning != "" {
			least := ""
			switch prof.Pattern {
			case "o3", "o4-mini*":
				least = "low"
			case "gpt-5", "gpt-5*", "gpt-5-codex*":
				least = "minimal"
			}
			if least != "" {
				return configErrorf("--reasoning-effort none: %s cannot turn its reasoning off (OpenAI's models before gpt-5.1 do not take none): pass --reasoning-effort %s for the least, or use gpt-5.1 or later, which can", o.Model, least)
			}
		}
	}
	if effort && o.ReasoningEffort != "none" && (w == openaiprov.Dialect || w == "chat") {
		if prof := def.Profile(o.Model); !prof.Guess && prof.Reasoning == "" && !def.AnyMaker && !def.Named {
			return configErrorf("--reasoning-effort %s: %s does not reason (Truss's model catalog, truss models), and OpenAI refuses the setting for it: drop the flag, or use a reasoning model", o.ReasoningEffort, o.Model)
		}
	}
	var unused []string
	switch w {
	case "anthropic":
		if effort {
			unused = append(unused, "--reasoning-effort is not used by provider "+def.Name+": its models' extended thinking is set by --thinking TOKENS")
		}
	case openaiprov.Dialect, "chat":
		if thinking {
			unused = append(unused, "--thinking is not used by provider "+def.Name+": its models' reasoning is set by --reasoning-effort")
		}
	case "ollama":
		if thinking || effort {
			unused = append(unused, "--thinking and --reasoning-effort are not used by provider "+def.Name+": Ollama's models think as they do by default")
		}
	case gemini.Dialect:
		if thinking && effort {
			if gemini.IsGemini3(o.Model) {
				unused = append(unused, "--thinking is not used with --reasoning-effort on "+o.Model+": the effort names its thinkingLevel")
			} else {
				unused = append(unused, "--reasoning-effort is not used with --thinking on "+o.Model+": the budget is sent")
			}
		}
	}
	if len(o.ServerTools) > 0 && w != "anthropic" {
		unused = append(unused, "--server-tool is not used by provider "+def.Name+": server tools ("+strings.Join(anthropicprov.ServerTools(), ", ")+") are tools of Anthropic's Messages API (--provider anthropic, vertex or bedrock)")
	}
	if o.Stateful && w != openaiprov.Dialect {
		unused = append(unused, "--stateful is not used by provider "+def.Name+": it chains the turns of OpenAI's Responses API (--provider openai or azure), which its server keeps")
	}
	for _, u := range unused {
		s.warn("warning: " + u)
	}
	return nil
}

// ServerToolNames are the names --server-tool takes: the Messages API's
// provider-executed tools the adapter enables.
func ServerToolNames() []string { return anthropicprov.ServerTools() }

// geminiBudgetRange is the range of thinkingBudget a Gemini 2.5 model
// takes besides 0 (off, where it can) and -1 (dynamic), as Google's
// thinking guide gives it (ai.google.dev/gemini-api/docs/thinking): 2.5
// Pro 128 to 32,768, 2.5 Flash 0 to 24,576, 2.5 Flash-Lite 512 to 24,576,
// each below the models' output limit of 65,536. False for another model.
func geminiBudgetRange(modelName string) (lo, hi int, ok bool) {
	switch m := strings.ToLower(modelName); {
	case strings.Contains(m, "gemini-2.5-pro"):
		return 128, 32768, true
	case strings.Contains(m, "gemini-2.5-flash-lite"):
		return 512, 24576, true
	case strings.Contains(m, "gemini-2.5-flash"):
		return 0, 24576, true
	}
	return 0, 0, false
}

// startPredial starts connecting to the server the session's provider
// will send its first request to, when its adapter sends through
// Endpoint.HTTP to its base URL; it returns nil otherwise (the simulated
// model, a cloud platform's adapter, a provider whose settings are
// incomplete: newProvider reports those).
func (s *Session) startPredial() *provider.Predial {
	def, err := s.providerDef(s.opts.Provider)
	if err != nil || def.Name == "sim" {
		return nil
	}
	base, _, err := def.endpoint(os.Getenv)
	if err != nil {
		return nil
	}
	switch def.Dialect {
	case "anthropic":
		base = cmpOr(base, anthropicprov.DefaultBaseURL)
	case openaiprov.Dialect:
		base = cmpOr(base, openaiprov.DefaultBaseURL)
	case "chat", "ollama":
	default:
		return nil
	}
	return provider.StartPredial(s.life, base)
}

// anthropicHeaderTimeout is the response-header timeout of the Anthropic
// SDK's own default client (its requestconfig.DefaultHTTPClient).
const anthropicHeaderTimeout = 10 * time.Minute

// sdkHeaderTimeout is the response-header timeout of the client the
// adapter of dialect would have used without a pre-dial: the Anthropic
// SDK's default client has one, a client with headers (HeaderClient) and
// the other SDKs' defaults have none.
func sdkHeaderTimeout(dialect string, h http.Header) time.Duration {
	if dialect == "anthropic" && len(h) == 0 {
		return anthropicHeaderTimeout
	}
	return 0
}

// declarer is an adapter that can show its wire form of tool declarations.
type declarer interface {
	DeclareTools([]model.ToolSpec) (json.RawMessage, error)
}

// withheldEnv are the variables no command gets: every provider's of the
// table (WithheldEnv) and of the user's configuration (its key's and its
// headers' variables).
func withheldEnv(u *config.User) []string {
	out := WithheldEnv()
	if u == nil {
		return out
	}
	for _, name := range slices.Sorted(maps.Keys(u.Providers)) {
		for _, v := range u.Providers[name].Vars() {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

// userWithheldEnv is withheldEnv of the user's configuration in Truss's
// directory (the table's alone when there is none or it cannot be read:
// the session that reads it reports that).
func userWithheldEnv() []string {
	s := &Session{}
	_ = s.loadUser()
	return withheldEnv(s.user)
}

// didYouMean is "; did you mean MODEL?" for a model of the provider's
// catalog that a mistyped model most likely meant (nearestModel), else "".
func (p ProviderDef) didYouMean(model, region string) string {
	if near := p.nearestModel(model, region); near != "" {
		return "; did you mean " + near + "?"
	}
	return ""
}
