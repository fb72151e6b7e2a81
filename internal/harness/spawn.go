package harness

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/config"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/subagent"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
)

// offerSpawn adds the spawn tool to set, offering the agents the project's
// configuration defines (only a trusted configuration has any); it returns
// the definitions (nil, with no error, when spawn is off).
func offerSpawn(o SpawnOptions, set *surface.Set, cfg *config.Config) ([]*subagent.Definition, error) {
	if o.Off {
		return nil, nil
	}
	files := make([]subagent.Source, len(cfg.Agents))
	for i, f := range cfg.Agents {
		files[i] = subagent.Source{Path: f.Path, Data: f.Data}
	}
	defs, err := subagent.ParseDefinitions(files)
	if err != nil {
		return nil, err
	}
	var infos []generic.AgentInfo
	for _, d := range defs {
		infos = append(infos, generic.AgentInfo{Name: d.Name, Description: d.Description})
	}
	if defs == nil {
		defs = []*subagent.Definition{} // spawn is on, with no agents defined
	}
	return defs, set.Add(generic.Spawn{Agents: infos})
}

// addSpawn offers the spawn tool and routes it to a spawner. It must be
// called after every other tool is in the set, since a child's tools are a
// subset of them.
func (s *Session) addSpawn() error {
	defs, err := offerSpawn(s.opts.Spawn, s.set, s.w.cfg)
	if err != nil || defs == nil {
		return err
	}
	top := cmpOr(s.sessionID, "session")
	s.children = &childRecords{s: s, top: top, dirs: map[string]string{}}
	o := s.opts.Spawn
	cfg := subagent.Config{
		Provider: s.prov, Tools: s.set, Model: s.opts.Model,
		Prices: func(m string) surface.Prices {
			if m == s.opts.Model {
				return s.prof.Prices
			}
			return surface.DefaultProfiles().Lookup(s.dialect, bedrockModel(m)).Prices
		},
		// Every child's prompt is built on the session's base, the
		// user's instructions with it.
		System:    func(dir string) string { return agent.SystemPrompt(dir, cmpOr(s.base, agent.DefaultSystem)) },
		MaxTokens: s.prof.MaxOutput, MaxResultChars: s.opts.MaxResultChars, Agents: defs,
		Limits:    subagent.Limits{MaxDepth: o.MaxDepth, MaxParallel: o.MaxParallel, Budget: agent.Budget{MaxTurns: o.MaxTurns}},
		Workspace: s.w.ws.Dir(), WorkDir: filepath.Join(s.w.priv, "agents"), GitPath: s.w.hostPath, Session: top,
		NewEnv: func(ctx context.Context, run *subagent.Run) (*subagent.Env, error) {
			return s.w.childEnv(run.Dir, s.compose)
		},
		Record: s.children.start,
	}
	cfg.Observe = func(run *subagent.Run) agent.Observer {
		obs := agent.Observers{s.changeCounter()}
		if s.opts.ObserveChild != nil {
			obs = append(obs, s.opts.ObserveChild(strings.TrimPrefix(run.Session, top+".")))
		}
		return obs
	}
	s.w.mux.Handle(tool.OpSpawn, subagent.New(cfg))
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// childRecords gives each sub-agent a ledger of its own, in the agents
// directory of its parent's ledger.
type childRecords struct {
	s   *Session
	top string
	// signer signs the children's ledgers (nil: no ledgers); set before
	// the first Run.
	signer note.Signer

	mu   sync.Mutex
	dirs map[string]string // session → ledger directory
}

// setLedger makes the children's ledgers live below the top agent's.
func (c *childRecords) setLedger(dir string, signer note.Signer) {
	c.signer = signer
	c.dirs[c.top] = dir
}

// start begins a sub-agent's ledger in agents/NAME of its parent's; no
// record (nil) when the session writes no ledger.
func (c *childRecords) start(run *subagent.Run) (subagent.Recording, error) {
	if c.signer == nil {
		return nil, nil
	}
	c.mu.Lock()
	parentDir, ok := c.dirs[run.Parent]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no ledger for parent session %s", run.Parent)
	}
	rel := "agents/" + run.Name
	dir := filepath.Join(parentDir, filepath.FromSlash(rel))
	lw, err := ledger.Create(dir, run.Session, c.signer)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.dirs[run.Session] = dir
	c.mu.Unlock()
	var decls []ledger.ToolDecl
	for _, d := range toolDecls(c.s.set) {
		for _, n := range run.Tools {
			if d.Name == n {
				decls = append(decls, d)
			}
		}
	}
	cfgMap := map[string]string{"depth": fmt.Sprint(run.Depth), "max_turns": fmt.Sprint(run.Budget.MaxTurns), "isolated": fmt.Sprint(run.Isolated)}
	if run.Agent != nil {
		cfgMap["agent"] = run.Agent.Name
	}
	if run.Budget.MaxTokens > 0 {
		cfgMap["max_tokens"] = fmt.Sprint(run.Budget.MaxTokens)
	}
	if run.Budget.MaxCost > 0 {
		cfgMap["max_cost_usd"] = fmt.Sprint(run.Budget.MaxCost)
	}
	if run.Budget.MaxWall > 0 {
		cfgMap["max_wall"] = run.Budget.MaxWall.String()
	}
	r, err := ledger.NewRecorder(lw, ledger.Start{Truss: c.s.opts.Version, Provider: c.s.opts.Provider, Model: run.Model, Surface: c.s.set.Surface,
		Tools: decls, Sandbox: c.s.w.enforced(), Workspace: run.Dir, Config: cfgMap,
		Parent: &ledger.Link{Session: run.Parent, CallID: run.CallID}, Environment: c.s.w.envFacts()})
	if err != nil {
		lw.Close()
		return nil, err
	}
	return &childRecording{Recorder: r, lw: lw, rel: rel}, nil
}

// childRecording is one sub-agent's ledger.
type childRecording struct {
	*ledger.Recorder
	lw  *ledger.Writer
	rel string
}

// Finish closes the child's ledger and returns the link to its last
// checkpoint.
func (c *childRecording) Finish(*agent.Outcome) (*tool.LedgerLink, error) {
	err := c.Recorder.Close()
	size, root, signed, serr := c.lw.Seal()
	if err == nil {
		err = serr
	}
	if cerr := c.lw.Close(); err == nil {
		err = cerr
	}
	if serr != nil {
		return nil, err
	}
	sum := sha256.Sum256(signed)
	return &tool.LedgerLink{Dir: c.rel, Size: int64(size), Root: base64.StdEncoding.EncodeToString(root), Checkpoint: hex.EncodeToString(sum[:])}, err
}

// toolDecls lists a tool set's declarations as the ledger records them.
func toolDecls(set *surface.Set) []ledger.ToolDecl {
	var out []ledger.ToolDecl
	for _, s := range set.Specs() {
		out = append(out, ledger.ToolDecl{Name: s.Name, Kind: string(s.Kind), Type: s.Type})
	}
	return out
}
