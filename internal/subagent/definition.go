package subagent

import (
	"bytes"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/trussdev/truss/internal/agent"
)

// AgentsDir is where a workspace's agent definitions live.
const AgentsDir = ".truss/agents"

// Definition is a user-defined agent: a Markdown file whose YAML front
// matter names and bounds the agent and whose body is its system prompt.
//
//	---
//	name: reviewer
//	description: Reviews a change for bugs and missing tests.
//	tools: [read_file, list_dir, bash]   # or "read_file, list_dir, bash"
//	model: claude-haiku-4-5
//	budget: {max_turns: 10, max_tokens: 200000, max_cost_usd: 0.5, max_wall: 5m}
//	---
//	You are a careful reviewer. ...
type Definition struct {
	Name        string
	Description string
	// Tools narrows the tools the agent gets (nil: all of its parent's).
	Tools  []string
	Model  string
	Budget agent.Budget
	// Prompt is the body: the agent's instructions.
	Prompt string
	// Path is the file it was read from.
	Path string
}

// validName reports whether name is 1 to 64 lower-case letters, digits,
// '-' and '_', starting with a letter or digit.
func validName(name string) bool {
	if name == "" || len(name) > 64 || name[0] == '-' || name[0] == '_' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// frontMatter is the YAML the definition starts with.
type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Tools       toolsList `yaml:"tools"`
	Model       string    `yaml:"model"`
	Budget      struct {
		MaxTurns  int     `yaml:"max_turns"`
		MaxTokens int64   `yaml:"max_tokens"`
		MaxCost   float64 `yaml:"max_cost_usd"`
		MaxWall   string  `yaml:"max_wall"`
	} `yaml:"budget"`
}

// toolsList is a list of tool names, written as a YAML list or as one
// comma-separated string.
type toolsList []string

func (t *toolsList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		for _, f := range strings.Split(n.Value, ",") {
			if f = strings.TrimSpace(f); f != "" {
				*t = append(*t, f)
			}
		}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*t = l
		return nil
	}
	return fmt.Errorf("line %d: tools must be a list or a comma-separated string", n.Line)
}

// ParseDefinition parses a definition file's bytes; file names it in
// errors and gives the name when the front matter does not.
func ParseDefinition(file string, b []byte) (*Definition, error) {
	b = bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
	rest, ok := bytes.CutPrefix(b, []byte("---\n"))
	if !ok {
		return nil, fmt.Errorf("%s: an agent definition starts with a '---' line and YAML front matter", file)
	}
	fm, body, ok := bytes.Cut(rest, []byte("\n---\n"))
	if !ok {
		if fm2, ok2 := bytes.CutSuffix(rest, []byte("\n---")); ok2 {
			fm, body, ok = fm2, nil, true
		}
	}
	if !ok {
		return nil, fmt.Errorf("%s: the front matter has no closing '---' line", file)
	}
	var m frontMatter
	dec := yaml.NewDecoder(bytes.NewReader(fm))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil && err.Error() != "EOF" {
		return nil, fmt.Errorf("%s: front matter: %w", file, err)
	}
	d := &Definition{Name: m.Name, Description: strings.TrimSpace(m.Description), Tools: m.Tools, Model: m.Model,
		Prompt: strings.TrimSpace(string(body)), Path: file}
	if d.Name == "" {
		d.Name = strings.TrimSuffix(filepath.Base(file), ".md")
	}
	if !validName(d.Name) {
		return nil, fmt.Errorf("%s: agent name %q must be lower-case letters, digits, '-' or '_' (at most 64)", file, d.Name)
	}
	if d.Description == "" {
		return nil, fmt.Errorf("%s: the front matter needs a description (the model picks agents by it)", file)
	}
	if d.Prompt == "" {
		return nil, fmt.Errorf("%s: the body (the agent's instructions) is empty", file)
	}
	bu := m.Budget
	if bu.MaxTurns < 0 || bu.MaxTokens < 0 || bu.MaxCost < 0 {
		return nil, fmt.Errorf("%s: budget limits must not be negative", file)
	}
	d.Budget = agent.Budget{MaxTurns: bu.MaxTurns, MaxTokens: bu.MaxTokens, MaxCost: bu.MaxCost}
	if bu.MaxWall != "" {
		w, err := time.ParseDuration(bu.MaxWall)
		if err != nil || w < 0 {
			return nil, fmt.Errorf("%s: budget.max_wall %q is not a duration such as 90s or 5m", file, bu.MaxWall)
		}
		d.Budget.MaxWall = w
	}
	return d, nil
}

// Source is one agent definition file as it was read: its path relative
// to the workspace root and its bytes (those the configuration's trust
// decision was made on).
type Source struct {
	Path string
	Data []byte
}

// ParseDefinitions parses agent definition files, sorted by name. A bad
// file is an error, and so are two agents with one name.
func ParseDefinitions(files []Source) ([]*Definition, error) {
	var defs []*Definition
	seen := map[string]string{}
	for _, f := range files {
		d, err := ParseDefinition(f.Path, f.Data)
		if err != nil {
			return nil, fmt.Errorf("agents: %w", err)
		}
		if other, dup := seen[d.Name]; dup {
			return nil, fmt.Errorf("agents: %s and %s both define the agent %q", other, d.Path, d.Name)
		}
		seen[d.Name] = d.Path
		defs = append(defs, d)
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs, nil
}
