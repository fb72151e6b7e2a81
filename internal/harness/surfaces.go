package harness

import (
	openaiprov "github.com/trussdev/truss/internal/provider/openai"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/anthropic"
	"github.com/trussdev/truss/internal/surface/codex"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/surface/openai"
)

// registry lists the surfaces this build offers.
func registry() surface.Registry {
	return surface.Registry{
		generic.Name: func(surface.Profile) []surface.Binding {
			return append(generic.Bindings(), anthropic.MemoryFunction{})
		},
		anthropic.Name: anthropic.Bindings,
		openai.Name:    openai.Bindings,
		codex.Name:     codex.Bindings,
	}
}

// typedSurface returns, for a typed surface, the only API dialect that can
// carry its tools; typed is false for any other surface.
func typedSurface(name string) (dialect string, typed bool) {
	switch name {
	case anthropic.Name:
		return "anthropic", true
	case openai.Name, codex.Name:
		return openaiprov.Dialect, true
	}
	return "", false
}

// pickSurface resolves the surface option for a dialect and model;
// escalate declares the shell tools' escalation parameters.
func pickSurface(name, dialect, providerName, model string, escalate bool) (*surface.Set, surface.Profile, error) {
	prof := surface.DefaultProfiles().Lookup(dialect, bedrockModel(model))
	if d, typed := typedSurface(prof.Surface); typed && d != dialect {
		prof.Surface = generic.Name // a typed surface's tools exist only in its own API
	}
	reg := registry()
	if escalate {
		reg = escalating(reg) // the shell tools declare the escalation parameters
	}
	if name == "" {
		name = "auto"
	}
	chosen, err := reg.Choose(name, prof)
	if err != nil {
		return nil, prof, &ConfigError{Msg: err.Error()}
	}
	if d, typed := typedSurface(chosen); typed && d != dialect {
		api := map[string]string{"anthropic": "the Anthropic Messages API", openaiprov.Dialect: "OpenAI's Responses API"}[d]
		if providerName == "sim" {
			return nil, prof, configErrorf("the %s surface needs %s; the simulated model speaks it with --sim-dialect %s", chosen, api, d)
		}
		return nil, prof, configErrorf("the %s surface needs %s; provider %s takes --surface generic", chosen, api, providerName)
	}
	set, err := reg.Build(chosen, prof)
	return set, prof, err
}

// ToolCallSet is a surface with every tool version it has, so that one
// call of any of them can be made (truss tool call): the anthropic surface
// offers both editor versions.
func ToolCallSet(name string) (*surface.Set, error) {
	var set *surface.Set
	var err error
	switch name {
	case anthropic.Name:
		set, err = surface.NewSet(name, anthropic.NewEditor("text_editor_20250728"), anthropic.NewEditor("text_editor_20250124"), anthropic.Bash{}, anthropic.Memory{})
	case openai.Name:
		set, err = surface.NewSet(name, openai.ApplyPatch{}, openai.Shell{})
	case codex.Name:
		set, err = surface.NewSet(name, codex.ApplyPatch{}, codex.ShellCommand{})
	default:
		set, err = registry().Build(name, surface.Profile{})
	}
	if err != nil {
		return nil, &ConfigError{Msg: err.Error()}
	}
	return set, nil
}
