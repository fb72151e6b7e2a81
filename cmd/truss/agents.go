package main

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
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/subagent"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/ui"
)

// spawnFlags configure sub-agents.
type spawnFlags struct {
	noSpawn   bool
	maxDepth  int
	maxAgents int
	agentTurn int
}

func (s *spawnFlags) register(fs interface {
	IntVar(*int, string, int, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.BoolVar(&s.noSpawn, "no-spawn", false, "offer no spawn tool (no sub-agents)")
	fs.IntVar(&s.maxDepth, "agent-depth", 2, "how deep sub-agents may nest (1: the agent's children may not spawn)")
	fs.IntVar(&s.maxAgents, "max-agents", 4, "how many sub-agents one agent runs at once")
	fs.IntVar(&s.agentTurn, "agent-max-turns", 30, "a sub-agent's turn limit unless its call or its definition sets one")
}

// spawnSetup is what wiring sub-agents needs from the session.
type spawnSetup struct {
	prov      provider.Provider
	set       *surface.Set
	tl        *tools
	model     string
	provName  string
	dialect   string
	prof      surface.Profile
	session   string
	maxResult int
}

// offer adds the spawn tool to set, offering the agents the project's
// configuration defines (only a trusted configuration has any); it returns
// the definitions (nil, with no error, when spawn is off).
func (f *spawnFlags) offer(set *surface.Set, cfg *config.Config) ([]*subagent.Definition, error) {
	if f.noSpawn || f.maxDepth <= 0 {
		return nil, nil
	}
	defs, err := definitions(cfg)
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

// definitions parses the agent definitions of a loaded configuration (the
// bytes its trust decision was made on); two agents with one name are an
// error.
func definitions(cfg *config.Config) ([]*subagent.Definition, error) {
	files := make([]subagent.Source, len(cfg.Agents))
	for i, f := range cfg.Agents {
		files[i] = subagent.Source{Path: f.Path, Data: f.Data}
	}
	return subagent.ParseDefinitions(files)
}

// addSpawn loads the workspace's agent definitions, offers the spawn tool
// and routes it to a spawner. It must be called after every other tool is
// in the set, since a child's tools are a subset of them. The returned
// hooks take the ledger and the printer once the session has them.
func (f *spawnFlags) addSpawn(s spawnSetup) (*childRecords, error) {
	if s.session == "" {
		s.session = "session"
	}
	rec := &childRecords{top: s, dirs: map[string]string{}}
	defs, err := f.offer(s.set, s.tl.cfg)
	if err != nil || defs == nil {
		return rec, err
	}
	cfg := subagent.Config{
		Provider: s.prov, Tools: s.set, Model: s.model,
		Prices: func(m string) surface.Prices {
			if m == s.model {
				return s.prof.Prices
			}
			return surface.DefaultProfiles().Lookup(s.dialect, m).Prices
		},
		MaxTokens: s.prof.MaxOutput, MaxResultChars: s.maxResult, Agents: defs,
		Limits:    subagent.Limits{MaxDepth: f.maxDepth, MaxParallel: f.maxAgents, Budget: agent.Budget{MaxTurns: f.agentTurn}},
		Workspace: s.tl.ws.Dir(), WorkDir: filepath.Join(s.tl.tmp, "agents"), Session: s.session,
		NewEnv: func(ctx context.Context, run *subagent.Run) (*subagent.Env, error) { return s.tl.childEnv(run.Dir) },
		Record: rec.start,
		Observe: func(run *subagent.Run) agent.Observer {
			if rec.printer == nil {
				return nil
			}
			return rec.printer.Child(strings.TrimPrefix(run.Session, s.session+"."))
		},
	}
	s.tl.mux.Handle(tool.OpSpawn, subagent.New(cfg))
	return rec, nil
}

// childRecords gives each sub-agent a ledger of its own, in the agents
// directory of its parent's ledger, and shows its progress.
type childRecords struct {
	top spawnSetup
	// signer signs the children's ledgers (nil: no ledgers); printer shows
	// their progress (nil: quiet). Both are set before the run starts.
	signer  note.Signer
	printer *ui.Printer

	mu   sync.Mutex
	dirs map[string]string // session → ledger directory
}

// setLedger makes the children's ledgers live below the top agent's.
func (c *childRecords) setLedger(lw *ledger.Writer, signer note.Signer) {
	c.signer = signer
	c.dirs[c.top.session] = lw.Dir()
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
	for _, d := range toolDecls(c.top.set) {
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
	r, err := ledger.NewRecorder(lw, ledger.Start{Truss: version, Provider: c.top.provName, Model: run.Model, Surface: c.top.set.Surface,
		Tools: decls, Sandbox: c.top.tl.enforced(), Workspace: run.Dir, Config: cfgMap,
		Parent: &ledger.Link{Session: run.Parent, CallID: run.CallID}})
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
