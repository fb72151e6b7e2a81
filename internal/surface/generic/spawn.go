package generic

import (
	"fmt"
	"sort"
	"strings"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool"
)

// AgentInfo names a user-defined agent the spawn tool offers.
type AgentInfo struct {
	Name        string
	Description string
}

// Spawn binds spawn, offered on every surface (no provider has a typed
// sub-agent tool): it runs a child agent on a sub-task and returns its final
// message, the files it changed and its usage.
type Spawn struct {
	// Agents are the user-defined agents the model may name.
	Agents []AgentInfo
}

// Spec implements surface.Binding.
func (s Spawn) Spec() model.ToolSpec {
	var d strings.Builder
	d.WriteString("Run a sub-agent on a self-contained sub-task and wait for it to finish. The sub-agent does not see this conversation: give it everything it needs in `task`. It works in the same workspace with the same tools (or the subset in `tools`), unless `isolated` is set, in which case it works in a copy and its changes come back as a diff. Several spawn calls in one turn run at the same time. It returns the sub-agent's final message, the files it changed and the tokens and cost it used.")
	props := map[string]any{
		"task":         prop("string", "The sub-task, complete and self-contained: what to do, where, and what to report back."),
		"tools":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "The names of the tools the sub-agent may use (default: all of yours)."},
		"model":        prop("string", "Another model of the same provider for the sub-agent (default: yours)."),
		"isolated":     prop("boolean", "Work in an isolated copy of the workspace (a git worktree) and return the changes as a diff instead of making them here."),
		"max_turns":    prop("integer", "The most model turns the sub-agent may take."),
		"max_tokens":   prop("integer", "The most tokens (input and output) the sub-agent may use."),
		"max_cost_usd": prop("number", "The most USD the sub-agent may spend."),
		"max_wall_ms":  prop("integer", "The most wall time, in milliseconds, the sub-agent may run."),
	}
	if len(s.Agents) > 0 {
		agents := append([]AgentInfo(nil), s.Agents...)
		sort.Slice(agents, func(i, j int) bool { return agents[i].Name < agents[j].Name })
		names := make([]any, len(agents))
		d.WriteString("\n\nDefined agents (name one in `agent` to use its instructions, tools and model):")
		for i, a := range agents {
			names[i] = a.Name
			fmt.Fprintf(&d, "\n- %s: %s", a.Name, oneLine(a.Description))
		}
		props["agent"] = map[string]any{"type": "string", "enum": names, "description": "A defined agent to run the task as."}
	}
	return model.ToolSpec{Kind: model.ToolFunction, Name: "spawn", Description: d.String(),
		Parameters: surface.Schema(props, "task")}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Decode implements surface.Binding.
func (s Spawn) Decode(c model.ToolCall) ([]tool.Call, error) {
	var in tool.SpawnArgs
	if err := surface.DecodeJSON("spawn", c.Input, &in, "task"); err != nil {
		return nil, err
	}
	if strings.TrimSpace(in.Task) == "" {
		return nil, tool.Errorf(tool.ErrInvalidInput, "spawn: the task is empty; describe the sub-task")
	}
	if in.MaxTurns < 0 || in.MaxTokens < 0 || in.MaxCost < 0 || in.MaxWallMS < 0 {
		return nil, tool.Errorf(tool.ErrInvalidInput, "spawn: budget limits must not be negative")
	}
	if in.Agent != "" {
		known := false
		for _, a := range s.Agents {
			known = known || a.Name == in.Agent
		}
		if !known {
			return nil, tool.Errorf(tool.ErrInvalidInput, "spawn: there is no agent named %q; %s", in.Agent, agentList(s.Agents))
		}
	}
	return []tool.Call{{ID: c.ID, Tool: c.Name, Surface: Name, Op: tool.OpSpawn, Raw: tool.Raw(c.Input), Args: &in}}, nil
}

func agentList(as []AgentInfo) string {
	if len(as) == 0 {
		return "no agents are defined (leave agent out)"
	}
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = a.Name
	}
	sort.Strings(names)
	return "the defined agents are: " + strings.Join(names, ", ")
}

// Encode implements surface.Binding.
func (Spawn) Encode(c model.ToolCall, rs []tool.Result) model.ToolResult {
	r := rs[0]
	return model.ToolResult{CallID: c.ID, Name: c.Name, Text: RenderAgent(r), IsError: r.Err != nil}
}

// RenderAgent renders a sub-agent's outcome for the model: how it ended,
// what it changed, what it used, and its final message.
func RenderAgent(r tool.Result) string {
	a := r.Agent
	if a == nil {
		return surface.ErrorText(r)
	}
	var sb strings.Builder
	if r.Err != nil {
		sb.WriteString(surface.ErrorText(r))
		sb.WriteString("\n")
	}
	who := "Sub-agent " + a.Session
	if a.Agent != "" {
		who += " (" + a.Agent + ")"
	}
	fmt.Fprintf(&sb, "%s %s after %d turns and %d tool calls", who, a.Status, a.Turns, a.Calls)
	if a.Reason != "" {
		fmt.Fprintf(&sb, " (%s)", a.Reason)
	}
	fmt.Fprintf(&sb, ".\nUsage: %d input and %d output tokens, $%.4f.\n", a.Usage.Input(), a.Usage.OutputTokens, a.Usage.CostUSD)
	switch {
	case a.Worktree != "":
		if a.Diff == "" {
			sb.WriteString("It worked in an isolated copy and changed nothing.\n")
		} else {
			sb.WriteString("It worked in an isolated copy; its changes are NOT in your workspace. Its diff (apply it with `git apply` if you want it):\n")
			sb.WriteString(a.Diff)
			if !strings.HasSuffix(a.Diff, "\n") {
				sb.WriteString("\n")
			}
		}
	case len(r.Changes) > 0:
		sb.WriteString("Files it changed:\n")
		for _, ch := range r.Changes {
			p := ch.Path
			if ch.MovedTo != "" {
				p += " -> " + ch.MovedTo
			}
			fmt.Fprintf(&sb, "  %s %s\n", ch.Kind, p)
		}
	default:
		sb.WriteString("It changed no files.\n")
	}
	if a.Text != "" {
		sb.WriteString("Its final message:\n")
		sb.WriteString(a.Text)
	} else {
		sb.WriteString("It left no final message.")
	}
	return sb.String()
}
