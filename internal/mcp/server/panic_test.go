package server

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/tool"
)

// panicking is an executor that panics on every call.
type panicking struct{}

func (panicking) Execute(context.Context, tool.Call) tool.Result { panic("executor exploded") }

// TestServedPanicIsAnErrorResult: a panicking executor behind truss mcp
// serve answers the client with an error result naming the panic (not its
// stack), the server goes on serving, and the observer gets the stack.
func TestServedPanicIsAnErrorResult(t *testing.T) {
	var mu sync.Mutex
	var evs []agent.Event
	ctx := context.Background()
	cs := serveInMemory(t, Config{Exec: panicking{}, Observer: agent.ObserverFunc(func(ev agent.Event) { mu.Lock(); evs = append(evs, ev); mu.Unlock() })})
	for range 2 { // the second call shows the server survived the first
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "view", Arguments: map[string]any{"path": "a.txt"}})
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if !res.IsError || !strings.Contains(text, "internal error") || !strings.Contains(text, "executor exploded") || strings.Contains(text, "goroutine") {
			t.Fatalf("result: %v %q", res.IsError, text)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var found bool
	for _, ev := range evs {
		var p *agent.PanicError
		if ev.Type == agent.EventCallCompleted && errors.As(ev.Err, &p) && len(p.Stack) > 0 && strings.Contains(ev.FullText, "goroutine") {
			found = true
		}
	}
	if !found {
		t.Error("no completed call reported the panic with its stack")
	}
}
