package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/trussdev/truss/internal/hostfs"
)

// UserFile is the user's configuration file's name, in UserDir.
const UserFile = "config.toml"

// User is the user's own configuration (UserPath): what a repository must
// never decide. A project's .truss/config.toml cannot set any of it,
// trusted or not (Parse refuses those keys).
type User struct {
	// Provider is the provider used when --provider is not given (a
	// built-in one or one of Providers), before the one the environment
	// names; a resumed session keeps its own.
	Provider string `toml:"provider"`
	// Model is the model used when neither --model nor TRUSS_MODEL names
	// one, on Provider (on any provider when Provider is not set), before
	// the provider's default.
	Model string `toml:"model"`
	// Approval is the default approval policy ("never", "on-request",
	// "untrusted"); a flag overrides it.
	Approval string `toml:"approval"`
	// ApprovalEdits is the default of whether a person is asked before
	// every file edit ("ask") or not ("accept", the default); a flag
	// overrides it. A run nobody can answer refuses to start with "ask"
	// (docs/approvals.md).
	ApprovalEdits string `toml:"approval_edits"`
	// ShellEnvironment adjusts which of Truss's environment variables
	// commands get, after Truss's own rule (docs/sandbox.md): Include
	// passes variables the rule withholds, Exclude withholds more. Each
	// entry is a name or a glob (path.Match: AWS_*, *_URL).
	ShellEnvironment struct {
		Include []string `toml:"include"`
		Exclude []string `toml:"exclude"`
	} `toml:"shell_environment"`
	// Sandbox adds paths no command may read (Hidden) and releases paths
	// of the default hidden credentials (Release); "~/" is the home
	// directory.
	Sandbox struct {
		Hidden  []string `toml:"hidden"`
		Release []string `toml:"release"`
	} `toml:"sandbox"`
	// Providers are the user's named providers ([providers.NAME]), which
	// --provider NAME uses: a server of one of Truss's API dialects at a
	// URL of the user's choosing. A key is never written here: EnvKey
	// names the variable that holds it.
	Providers map[string]Provider `toml:"providers"`
	// MCP holds what the user lets a project's MCP servers have.
	// TokenEnv lists the variables (names or globs) whose values a
	// project's [mcp.servers.NAME] bearer_token_env may send to its
	// server: a project's configuration names the URL, so without the
	// user's word it could send any of Truss's variables to any server.
	// A model provider's key is never sent, listed or not.
	MCP struct {
		TokenEnv []string `toml:"token_env"`
	} `toml:"mcp"`
}

// MCPTokenAllowed reports whether the user's configuration lets a
// project's MCP server be sent the variable name as its bearer token.
func (u *User) MCPTokenAllowed(name string) bool {
	if u == nil {
		return false
	}
	for _, g := range u.MCP.TokenEnv {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// Provider is a named provider of the user's configuration.
type Provider struct {
	// BaseURL is the API's base URL (http or https, no user or password
	// in it), as the dialect's adapter takes it: with /v1 for the OpenAI
	// dialects ("https://openrouter.ai/api/v1").
	BaseURL string `toml:"base_url"`
	// Wire is the API dialect it speaks, by the name the harness gives it
	// ("anthropic", "responses", "chat", "ollama"); the harness checks
	// that its build has it.
	Wire string `toml:"wire"`
	// EnvKey names the variable holding the API key ("" for a server
	// that takes none); the variable must be set when the provider is
	// used, and no command gets it.
	EnvKey string `toml:"env_key"`
	// Headers are more HTTP headers of every request, with their
	// values; a header that carries a credential (Authorization,
	// X-Api-Key, a name with KEY, TOKEN, SECRET or AUTH) belongs in
	// EnvHeaders.
	Headers map[string]string `toml:"headers"`
	// EnvHeaders are more headers whose values come from variables:
	// header name to variable name. No command gets those variables.
	EnvHeaders map[string]string `toml:"env_headers"`
	// Model is the model used when none is named.
	Model string `toml:"model"`
	// ContextWindow and MaxOutput, when set, are the context window and
	// the output limit in tokens of every model the provider serves, over
	// the model catalog's (a model it does not know gets 32,768 and
	// 4,096): what the server gives, which a gateway or a host may set
	// apart from the model's maker. They bear the names of truss models
	// --json's fields (Codex's model_context_window and
	// model_max_output_tokens); --context still comes first.
	ContextWindow *int `toml:"context_window"`
	MaxOutput     *int `toml:"max_output"`
}

// Limits are the provider's ContextWindow and MaxOutput, 0 for those not
// set.
func (p Provider) Limits() (contextWindow, maxOutput int) {
	if p.ContextWindow != nil {
		contextWindow = *p.ContextWindow
	}
	if p.MaxOutput != nil {
		maxOutput = *p.MaxOutput
	}
	return contextWindow, maxOutput
}

// UserDir is the directory of the user's configuration: $TRUSS_HOME, else
// $XDG_CONFIG_HOME/truss, else ~/.config/truss (where the ledger key is).
func UserDir() (string, error) {
	if h := os.Getenv("TRUSS_HOME"); h != "" {
		return h, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("no configuration directory: set TRUSS_HOME: %w", err)
	}
	return filepath.Join(d, "truss"), nil
}

// LoadUser reads the user's configuration at file; a missing file is the
// zero User. The file is read from no link and no FIFO; an unknown key or
// a bad value is an error naming the file.
func LoadUser(file string) (*User, error) {
	b, err := hostfs.ReadFile(file, MaxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &User{}, nil
	}
	if err != nil {
		return nil, err
	}
	return ParseUser(file, b)
}

// ParseUser parses the user's configuration b, read from file (which
// errors name).
func ParseUser(file string, b []byte) (*User, error) {
	var u User
	if err := keysInFile(b); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("%s: %s", file, tomlError(err))
	}
	switch u.Approval {
	case "", "never", "on-request", "untrusted":
	default:
		return nil, fmt.Errorf("%s: approval %q: use never, on-request or untrusted", file, u.Approval)
	}
	switch u.ApprovalEdits {
	case "", "ask", "accept":
	default:
		return nil, fmt.Errorf("%s: approval_edits %q: use ask (ask before every file edit, showing its diff) or accept (make edits without asking)", file, u.ApprovalEdits)
	}
	for _, g := range slices.Concat(u.ShellEnvironment.Include, u.ShellEnvironment.Exclude, u.MCP.TokenEnv) {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("%s: bad pattern %q (shell_environment or mcp.token_env): %w", file, g, err)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(u.Providers)) {
		if err := u.Providers[name].check(name); err != nil {
			return nil, fmt.Errorf("%s: providers.%s: %w", file, name, err)
		}
	}
	return &u, nil
}

// keysInFile refuses a named provider's setting that would hold a key
// (api_key, token, ...): only the name of its variable belongs in the
// file. It also says, in the file's terms, that a named provider's
// limits are whole numbers (the decoder would name Go's types).
func keysInFile(b []byte) error {
	var m map[string]any
	if toml.Unmarshal(b, &m) != nil {
		return nil // the strict decode reports it
	}
	if t, ok := m["provider"].(map[string]any); ok {
		// [provider.x]: a table where the default provider's name goes.
		names := slices.Sorted(maps.Keys(t))
		if len(names) > 0 {
			return fmt.Errorf("[provider.%s]: provider is the name of the provider used by default (provider = \"NAME\"); a provider of your own is [providers.%s] (did you mean providers.%s?)", names[0], names[0], names[0])
		}
		return fmt.Errorf("provider is the name of the provider used by default (provider = \"NAME\"), not a table")
	}
	ps, _ := m["providers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p, _ := ps[name].(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(p)) {
			// A misspelt setting (envkey) is the decoder's unknown
			// setting, with the name it meant, not a pasted key.
			if k != "env_key" && credentialName(k) && nearSetting([]string{"providers", name, k}) == "" {
				return fmt.Errorf("providers.%s.%s: a key's value does not belong in a file; set env_key to the name of the variable that holds it", name, k)
			}
			if _, isInt := p[k].(int64); (k == "context_window" || k == "max_output") && !isInt {
				return fmt.Errorf("providers.%s.%s must be a whole number of tokens (such as 200000), not %q", name, k, fmt.Sprint(p[k]))
			}
		}
	}
	// Elsewhere, a credential's setting that holds a string is a key
	// pasted where no setting takes one ([gemini] api_key = "AIza…"):
	// said as such, not as an unknown setting.
	if where := keyValue(m, ""); where != "" {
		return fmt.Errorf("%s: a key's value does not belong in a file: a built-in provider reads its key from its variable (truss run --help names them); a provider of [providers.NAME] from the variable its env_key names", where)
	}
	return nil
}

// keyValue is the dotted name of the first setting of m, outside
// [providers], whose name says it holds a credential and whose value is a
// string; "" for none. A setting that names a variable (…_env, env_…)
// holds none.
func keyValue(m map[string]any, prefix string) string {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if prefix == "" && k == "providers" {
			continue
		}
		switch v := m[k].(type) {
		case map[string]any:
			if w := keyValue(v, prefix+k+"."); w != "" {
				return w
			}
		case string:
			l := strings.ToLower(k)
			if credentialName(k) && !strings.HasSuffix(l, "_env") && !strings.HasPrefix(l, "env_") {
				return prefix + k
			}
		}
	}
	return ""
}

// looksLikeKey reports whether an env_key that is a valid variable name
// is more likely a key pasted in its place: a known key prefix, or upper-
// and lower-case letters with digits, as keys have and variables' names
// do not.
func looksLikeKey(s string) bool {
	for _, p := range []string{"sk_", "gsk_", "xai_", "AIza", "ghp_", "github_pat_", "pplx_", "csk_"} {
		if strings.HasPrefix(s, p) && len(s) > len(p)+6 {
			return true
		}
	}
	upper := strings.ContainsFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	lower := strings.ContainsFunc(s, func(r rune) bool { return 'a' <= r && r <= 'z' })
	digit := strings.ContainsFunc(s, func(r rune) bool { return '0' <= r && r <= '9' })
	return upper && lower && digit
}

// credentialName reports whether a setting's or a header's name says it
// carries a credential.
func credentialName(n string) bool {
	l := strings.ToLower(n)
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "auth", "bearer", "cookie", "credential"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// check validates a named provider.
func (p Provider) check(name string) error {
	if !validName(name) {
		return fmt.Errorf("a provider's name is letters, digits, - and _, starting with a letter or digit")
	}
	if p.BaseURL == "" {
		return fmt.Errorf("base_url is missing: the API's URL (for example https://openrouter.ai/api/v1)")
	}
	u, err := url.Parse(p.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("base_url %q is not an http or https URL", p.BaseURL)
	}
	if u.User != nil {
		return fmt.Errorf("base_url holds a user or password: a key's value does not belong in a file; set env_key")
	}
	if p.EnvKey != "" && (!validVar(p.EnvKey) || looksLikeKey(p.EnvKey)) {
		// Not echoed: it is most likely the key itself.
		return fmt.Errorf("env_key does not hold a variable's name (it looks like a key): set it to the name of the variable that holds the key (for example OPENROUTER_API_KEY), never the key; then set that variable")
	}
	for _, h := range slices.Sorted(maps.Keys(p.Headers)) {
		if !validHeader(h) || strings.ContainsAny(p.Headers[h], "\r\n\x00") {
			return fmt.Errorf("headers: %q is not a header", h)
		}
		if credentialName(h) || strings.EqualFold(h, "Authorization") {
			return fmt.Errorf("headers: %s carries a credential, whose value does not belong in a file: name its variable in env_headers", h)
		}
	}
	for _, h := range slices.Sorted(maps.Keys(p.EnvHeaders)) {
		if !validHeader(h) {
			return fmt.Errorf("env_headers: %q is not a header", h)
		}
		if !validVar(p.EnvHeaders[h]) {
			return fmt.Errorf("env_headers: %s: %q is not a variable's name", h, p.EnvHeaders[h])
		}
	}
	for _, l := range []struct {
		name string
		v    *int
	}{{"context_window", p.ContextWindow}, {"max_output", p.MaxOutput}} {
		if l.v != nil && *l.v <= 0 {
			return fmt.Errorf("%s must be a number of tokens above 0, not %d", l.name, *l.v)
		}
	}
	if w, o := p.Limits(); w > 0 && o > w {
		return fmt.Errorf("max_output (%d) is more than context_window (%d): a model cannot write more than its context holds", o, w)
	}
	return nil
}

// validName reports whether s is a provider's name.
func validName(s string) bool {
	for i, r := range s {
		ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || i > 0 && (r == '-' || r == '_')
		if !ok {
			return false
		}
	}
	return s != ""
}

// validVar reports whether s is an environment variable's name.
func validVar(s string) bool {
	for i, r := range s {
		ok := 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r == '_' || i > 0 && '0' <= r && r <= '9'
		if !ok {
			return false
		}
	}
	return s != ""
}

// validHeader reports whether s is an HTTP header's name (an RFC 9110
// token).
func validHeader(s string) bool {
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return s != ""
}

// Vars are the variables a named provider reads: its key's and its
// headers', each once.
func (p Provider) Vars() []string {
	var out []string
	for _, v := range append([]string{p.EnvKey}, slices.Sorted(maps.Values(p.EnvHeaders))...) {
		if v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// tomlError is err with its line and column, or the unknown key, when
// the decoder says them.
func tomlError(err error) string {
	var missing *toml.StrictMissingError
	if errors.As(err, &missing) && len(missing.Errors) > 0 {
		key := missing.Errors[0].Key()
		if near := nearSetting(key); near != "" {
			return fmt.Sprintf("unknown setting %q; did you mean %s?", strings.Join(key, "."), near)
		}
		return fmt.Sprintf("unknown setting %q", strings.Join(key, "."))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		return fmt.Sprintf("line %d, column %d: %s", row, col, de.Error())
	}
	return err.Error()
}

// ExpandHome returns p with a leading "~/" made the home directory.
func ExpandHome(p, home string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok && home != "" {
		return filepath.Join(home, rest)
	}
	return p
}

// ProjectProvider reports whether the project's configuration at root
// defines [providers.NAME], which a project cannot (it is refused when the
// workspace is read): the file's path, so that an unknown provider's error
// can say why the project's is not one.
func ProjectProvider(root, name string) (string, bool) {
	files, err := ReadFiles(root)
	if err != nil {
		return "", false
	}
	var m map[string]any
	if toml.Unmarshal(files[Path], &m) != nil {
		return "", false
	}
	ps, _ := m["providers"].(map[string]any)
	if _, ok := ps[name]; !ok {
		return "", false
	}
	return filepath.Join(root, Path), true
}

// userOnly are the settings of User: a project's configuration naming one
// is refused with a message saying where it belongs.
func userOnly(b []byte) error {
	var m map[string]any
	if toml.Unmarshal(b, &m) != nil {
		return nil // the strict decode reports it
	}
	var keys []string
	for _, k := range []string{"provider", "model", "approval", "approval_edits", "shell_environment"} {
		if _, ok := m[k]; ok {
			keys = append(keys, k)
		}
	}
	if sb, ok := m["sandbox"].(map[string]any); ok {
		for _, k := range []string{"hidden", "release"} {
			if _, ok := sb[k]; ok {
				keys = append(keys, "sandbox."+k)
			}
		}
	}
	if mcp, ok := m["mcp"].(map[string]any); ok {
		if _, ok := mcp["token_env"]; ok {
			keys = append(keys, "mcp.token_env")
		}
	}
	if len(keys) == 0 {
		return nil
	}
	return fmt.Errorf("%s belong%s in the user's configuration (%s in Truss's directory, ~/.config/truss or $TRUSS_HOME), which no repository can write: a project cannot set %s",
		strings.Join(keys, ", "), map[bool]string{true: "s", false: ""}[len(keys) == 1], UserFile, map[bool]string{true: "it", false: "them"}[len(keys) == 1])
}
