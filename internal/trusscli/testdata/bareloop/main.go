// Command bareloop is the floor the benchmarks measure Truss's start
// against: the smallest agent loop that does the same job over Chat
// Completions — one bash function tool, each call run with `bash -c` in
// the current directory, no session, ledger, sandbox, change tracking,
// project instructions or retries. Only the standard library, so that its
// start is the Go runtime's and nothing more.
//
//	OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 bareloop MODEL TASK
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
)

const system = "You are a coding agent. Use the bash tool to inspect and change the repository in the current directory."

type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

var tools = []map[string]any{{
	"type": "function",
	"function": map[string]any{
		"name":        "bash",
		"description": "Run a bash command in the repository and return its output.",
		"parameters": map[string]any{
			"type":       "object",
			"properties": map[string]any{"command": map[string]any{"type": "string"}},
			"required":   []string{"command"},
		},
	},
}}

func text(s string) *string { return &s }

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: bareloop MODEL TASK")
		os.Exit(2)
	}
	base := os.Getenv("OPENAI_BASE_URL")
	msgs := []message{{Role: "system", Content: text(system)}, {Role: "user", Content: text(os.Args[2])}}
	for turn := 0; turn < 50; turn++ {
		reply, err := complete(base, os.Args[1], msgs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bareloop:", err)
			os.Exit(1)
		}
		msgs = append(msgs, reply)
		if len(reply.ToolCalls) == 0 {
			if reply.Content != nil {
				fmt.Println(*reply.Content)
			}
			return
		}
		for _, c := range reply.ToolCalls {
			msgs = append(msgs, message{Role: "tool", ToolCallID: c.ID, Content: text(run(c))})
		}
	}
	fmt.Fprintln(os.Stderr, "bareloop: stopped after 50 turns")
	os.Exit(1)
}

// complete sends one request and returns the model's message.
func complete(base, model string, msgs []message) (message, error) {
	body, err := json.Marshal(map[string]any{"model": model, "messages": msgs, "tools": tools})
	if err != nil {
		return message{}, err
	}
	req, err := http.NewRequest("POST", base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return message{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if k := os.Getenv("OPENAI_API_KEY"); k != "" {
		req.Header.Set("Authorization", "Bearer "+k)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return message{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return message{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return message{}, fmt.Errorf("%s: %s", resp.Status, b)
	}
	var out struct {
		Choices []struct {
			Message message `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return message{}, err
	}
	if len(out.Choices) == 0 {
		return message{}, fmt.Errorf("no choices in %s", b)
	}
	m := out.Choices[0].Message
	m.Role = "assistant"
	return m, nil
}

// run runs one call's command with bash -c and returns its output and
// exit status.
func run(c toolCall) string {
	var args struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil || c.Function.Name != "bash" {
		return fmt.Sprintf("error: cannot run %s(%s)", c.Function.Name, c.Function.Arguments)
	}
	out, err := exec.Command("bash", "-c", args.Command).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s\n[%v]", out, err)
	}
	return string(out)
}
