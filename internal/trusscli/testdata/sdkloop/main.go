// Command sdkloop is the bare loop of ../bareloop with its requests made
// by the official OpenAI SDK (openai-go) instead of the standard library:
// the same system prompt, the same one bash function tool, each call run
// with `bash -c` in the current directory, no session, ledger, sandbox,
// change tracking, project instructions or retries. It is the floor of a
// program that speaks to the model through the SDK, as Truss does: its
// start is the Go runtime's and the SDK's packages' initialisation.
//
//	OPENAI_BASE_URL=http://127.0.0.1:PORT/v1 sdkloop MODEL TASK
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

const system = "You are a coding agent. Use the bash tool to inspect and change the repository in the current directory."

var bash = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "bash",
	Description: openai.String("Run a bash command in the repository and return its output."),
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"command": map[string]any{"type": "string"}},
		"required":   []string{"command"},
	},
})

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: sdkloop MODEL TASK")
		os.Exit(2)
	}
	// The client reads OPENAI_BASE_URL and OPENAI_API_KEY; the simulated
	// model takes any key.
	client := openai.NewClient(option.WithAPIKey(os.Getenv("OPENAI_API_KEY")), option.WithMaxRetries(0))
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system), openai.UserMessage(os.Args[2])}
	for turn := 0; turn < 50; turn++ {
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model:    os.Args[1],
			Messages: msgs,
			Tools:    []openai.ChatCompletionToolUnionParam{bash},
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "sdkloop:", err)
			os.Exit(1)
		}
		if len(resp.Choices) == 0 {
			fmt.Fprintln(os.Stderr, "sdkloop: no choices")
			os.Exit(1)
		}
		reply := resp.Choices[0].Message
		msgs = append(msgs, reply.ToParam())
		if len(reply.ToolCalls) == 0 {
			fmt.Println(reply.Content)
			return
		}
		for _, c := range reply.ToolCalls {
			msgs = append(msgs, openai.ToolMessage(run(c.Function.Name, c.Function.Arguments), c.ID))
		}
	}
	fmt.Fprintln(os.Stderr, "sdkloop: stopped after 50 turns")
	os.Exit(1)
}

// run runs one call's command with bash -c and returns its output and
// exit status.
func run(name, arguments string) string {
	var args struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || name != "bash" {
		return fmt.Sprintf("error: cannot run %s(%s)", name, arguments)
	}
	out, err := exec.Command("bash", "-c", args.Command).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s\n[%v]", out, err)
	}
	return string(out)
}
