package trusscli

import "github.com/trussdev/truss/internal/harness"

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

// options sets the sub-agents' options.
func (s *spawnFlags) options(o *harness.SpawnOptions) {
	*o = harness.SpawnOptions{Off: s.noSpawn || s.maxDepth <= 0, MaxDepth: s.maxDepth, MaxParallel: s.maxAgents, MaxTurns: s.agentTurn}
}
