package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/sim/simtest"
)

// TestContextManagement: with ContextManagement set, every request goes
// through the beta Messages API with the context-management beta and the
// field, and the strict simulator (which checks the beta operation's
// schema) accepts a whole conversation with tool calls, with and without
// thinking (two betas then); without it, the plain operation is used.
func TestContextManagement(t *testing.T) {
	cm := compact.DefaultContextEditing(200000, true).ContextManagement()
	for _, tc := range []struct {
		name     string
		cfg      Config
		beta     bool
		thinking bool
	}{
		{"context editing", Config{ContextManagement: cm}, true, false},
		{"context editing with thinking", Config{ContextManagement: cm, ThinkingBudget: 2048}, true, true},
		{"plain", Config{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script, err := sim.ParseScript([]byte(`{"steps": [{"say": "Saving a note.", "actions": [{"kind": "run", "command": "ls"}]}, {"say": "Done."}]}`))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			srv := simtest.New(script)
			base, err := srv.Listen(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cfg := tc.cfg
			cfg.BaseURL, cfg.APIKey = base, "k"
			c := New(cfg)
			req := &model.Request{Model: "claude-sonnet-4-5", MaxTokens: 1000, Items: []model.Item{{Kind: model.KindUser, Text: "List."}},
				Tools: []model.ToolSpec{{Kind: model.ToolTyped, Name: "bash", Type: "bash_20250124"}, {Kind: model.ToolTyped, Name: "memory", Type: "memory_20250818"}}}
			resp, err := c.Turn(ctx, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			calls := resp.Calls()
			if len(calls) != 1 || resp.Text() != "Saving a note." {
				t.Fatalf("first turn: %q %+v", resp.Text(), calls)
			}
			req.Items = append(req.Items, resp.Items...)
			req.Items = append(req.Items, model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: calls[0].ID, Name: "bash", Text: "a.go"}})
			resp, err = c.Turn(ctx, req, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != "Done." || resp.Wire == nil || len(resp.Wire.Response) == 0 {
				t.Fatalf("second turn: %q", resp.Text())
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			for _, r := range reqs {
				betas := strings.Join(r.Header.Values("anthropic-beta"), ",")
				body := string(r.Body)
				if r.Status != 200 {
					t.Errorf("status %d", r.Status)
				}
				if got := strings.Contains(betas, ContextManagementBeta); got != tc.beta {
					t.Errorf("anthropic-beta %q", betas)
				}
				if got := strings.Contains(body, `"context_management":{"edits":[{"clear_at_least"`); got != tc.beta {
					t.Errorf("context_management sent: %v", got)
				}
				if tc.thinking && !strings.Contains(betas, InterleavedThinking) {
					t.Errorf("anthropic-beta %q lost the thinking beta", betas)
				}
			}
		})
	}
}
