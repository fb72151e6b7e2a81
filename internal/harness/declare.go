package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/mcp/client"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/surface/generic"
)

// Declaration is the exact tool declarations a session's requests would
// carry, in the provider's wire form.
type Declaration struct {
	Provider, Model, Surface string
	ProfileGuess             bool
	// ContextWindow and MaxOutput are the limits a session works with:
	// the model's row's, the guess's or the provider's own, --context
	// over the window.
	ContextWindow, MaxOutput int
	// Tools is the wire form, key order included.
	Tools json.RawMessage
}

// Declare returns the tool declarations a session with these options
// would send: the surface's tools, the MCP servers' tools (each server
// waited for until it started or failed) and spawn. It starts no model and opens no workspace.
// It warns (Options.OnWarning) of what a session would: a model the
// catalog does not know or knows elsewhere, a platform id's form, a flag
// the provider has no use for.
func Declare(ctx context.Context, opts Options) (*Declaration, error) {
	s := &Session{opts: opts}
	if s.opts.Provider == "sim" && s.opts.Script == "" && s.opts.SimScript == nil {
		// The declarations are the dialect's; no step is played.
		s.opts.SimScript = &sim.Script{}
	}
	if err := s.resolve(); err != nil {
		return nil, err
	}
	o := &s.opts
	set, prof, err := pickSurface(o.Surface, s.dialect, o.Provider, o.Model, s.offersEscalation())
	if err != nil {
		return nil, err
	}
	// What a session would warn of, said as a session says it.
	if def, err := s.providerDef(o.Provider); err == nil {
		prof = def.withLimits(prof)
		s.catalogWarning(def, def.elsewhere(o.Model, s.modelFrom, o.Interactive), prof, set.Surface)
		s.platformWarnings(def)
		if def.Name != "sim" {
			if err := s.thinkingFlags(def); err != nil {
				return nil, err
			}
		}
	}
	cfg, err := config.Load(cmp.Or(o.Root, "."))
	if err != nil {
		return nil, err
	}
	if msg := cfg.Trust.Warning(); msg != "" {
		s.warn(msg)
	}
	cfgs, err := MCPConfigs(cfg, o.MCP)
	if err != nil {
		return nil, err
	}
	if len(cfgs) > 0 {
		// The project's servers run confined, as in a session.
		path, done, err := s.confineAlone(cmp.Or(o.Root, "."), cfg, cfgs, o.MCP)
		if err != nil {
			return nil, err
		}
		defer done()
		mgr := client.Start(ctx, cfgs, client.Options{Client: "truss", Version: o.Version, Dialect: s.dialect, Log: &warnWriter{warn: s.warn}, Path: path})
		defer mgr.Close()
		mgr.Wait(ctx, -1)
		for _, srv := range mgr.Servers() {
			if st, _ := srv.State(); st != client.Ready {
				continue
			}
			for _, b := range mgr.Bindings(srv) {
				if err := set.Add(b); err != nil {
					return nil, err
				}
			}
		}
	}
	// The validate tool, where a session would offer it (the project's
	// checks are known), in the place a session adds it.
	if _, ok := checksOf(cmp.Or(o.Root, "."), cfg, o.Validation); ok && o.Serve == "" {
		if err := set.Add(generic.Validate{}); err != nil {
			return nil, err
		}
	}
	if _, err := offerSpawn(o.Spawn, set, cfg); err != nil {
		return nil, err
	}
	d, ok := dialect(s.dialect)
	if !ok {
		return nil, configErrorf("provider %s is not in this build", o.Provider)
	}
	dec, ok := d.New(ctx, Endpoint{BaseURL: "http://127.0.0.1/v1", ServerTools: o.ServerTools}).(declarer)
	if !ok {
		return nil, fmt.Errorf("the %s adapter cannot show its tool declarations", d.Name)
	}
	raw, err := dec.DeclareTools(set.Specs())
	if err != nil {
		return nil, err
	}
	return &Declaration{Provider: o.Provider, Model: o.Model, Surface: set.Surface, ProfileGuess: prof.Guess,
		ContextWindow: cmp.Or(o.ContextTokens, prof.ContextWindow), MaxOutput: prof.MaxOutput, Tools: raw}, nil
}

// Check resolves the provider, the model and the surface of opts as Open
// does, without opening anything, so that a mistake is reported before
// any work.
func Check(opts Options) error {
	s := &Session{opts: opts}
	if err := s.resolve(); err != nil {
		return err
	}
	_, _, err := pickSurface(s.opts.Surface, s.dialect, s.opts.Provider, s.opts.Model, false)
	return err
}
