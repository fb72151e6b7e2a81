package bench

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Arm is one configuration under test: a provider, a model, a tool surface
// and settings. Everything else — system prompt, budgets, sandbox, task
// text — is the same for every arm of a benchmark.
type Arm struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Surface is the tool surface ("generic", "anthropic", "openai",
	// "codex", "auto"); "" means auto.
	Surface string `json:"surface,omitempty"`
	// Settings are further settings of the arm (reasoning effort, …),
	// recorded with each run.
	Settings map[string]string `json:"settings,omitempty"`
}

var armName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// surfaceNames are the values an arm's surface takes.
var surfaceNames = []string{"auto", "generic", "anthropic", "openai", "codex"}

// ParseArm reads NAME=PROVIDER:MODEL[:SURFACE]. The name is letters,
// digits, '.', '_' and '-' (it names files). The last field after the
// model is the surface, which must name one, except a version number
// (Bedrock's ids end in ":0"): a model that holds ':' otherwise (an
// Ollama tag) is followed by its surface ("ollama:llama3.1:latest:auto").
func ParseArm(s string) (Arm, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok {
		return Arm{}, fmt.Errorf("arm %q: want NAME=PROVIDER:MODEL[:SURFACE]", s)
	}
	if !armName.MatchString(name) {
		return Arm{}, fmt.Errorf("arm %q: the name must be letters, digits, '.', '_' and '-'", s)
	}
	prov, rest, ok := strings.Cut(spec, ":")
	if !ok || prov == "" || rest == "" {
		return Arm{}, fmt.Errorf("arm %q: want NAME=PROVIDER:MODEL[:SURFACE]", s)
	}
	a := Arm{Name: name, Provider: prov, Model: rest}
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		switch last := rest[i+1:]; {
		case last == "":
			return Arm{}, fmt.Errorf("arm %q: empty surface", s)
		case slices.Contains(surfaceNames, last):
			a.Model, a.Surface = rest[:i], last
		case strings.Trim(last, "0123456789") == "":
			// a version number: the model's own
		default:
			return Arm{}, fmt.Errorf("arm %q: unknown surface %q; choose one of %s (a model whose id holds ':' is followed by its surface: %s:auto)",
				s, last, strings.Join(surfaceNames, ", "), s[strings.IndexByte(s, '=')+1:])
		}
	}
	if a.Model == "" {
		return Arm{}, fmt.Errorf("arm %q: want NAME=PROVIDER:MODEL[:SURFACE]", s)
	}
	return a, nil
}

// CrossArms makes an arm of each model (PROVIDER:MODEL) with each surface,
// named MODEL.SURFACE (characters a name cannot hold become '_').
func CrossArms(models, surfaces []string) ([]Arm, error) {
	if len(surfaces) == 0 {
		surfaces = []string{"auto"}
	}
	var arms []Arm
	seen := map[string]bool{}
	for _, m := range models {
		prov, model, ok := strings.Cut(m, ":")
		if !ok || prov == "" || model == "" {
			return nil, fmt.Errorf("model %q: want PROVIDER:MODEL", m)
		}
		for _, s := range surfaces {
			if s == "" {
				return nil, fmt.Errorf("an empty surface in the list")
			}
			name := sanitize(model + "." + s)
			if seen[name] {
				return nil, fmt.Errorf("two arms named %s", name)
			}
			seen[name] = true
			arms = append(arms, Arm{Name: name, Provider: prov, Model: model, Surface: s})
		}
	}
	return arms, nil
}

// String is the arm as --arm takes it.
func (a Arm) String() string {
	s := a.Name + "=" + a.Provider + ":" + a.Model
	if a.Surface != "" {
		s += ":" + a.Surface
	}
	return s
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
}
