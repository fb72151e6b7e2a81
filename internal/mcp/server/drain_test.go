package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trussdev/truss/internal/tool"
)

// slowExec delays every call, as a shell command that takes a while.
type slowExec struct{ tool.Executor }

func (s slowExec) Execute(ctx context.Context, c tool.Call) tool.Result {
	time.Sleep(50 * time.Millisecond)
	return s.Executor.Execute(ctx, c)
}

// TestDrainingAnswersAPipe: a client that writes its requests and closes
// its end of the pipe (printf '…' | truss mcp serve) gets an answer to
// each one, the calls still running when the input ended included, and
// the server ends after them. Without Draining the SDK closes the
// connection at the input's end and they are lost.
func TestDrainingAnswersAPipe(t *testing.T) {
	mux := fileTools(t)
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"view","arguments":{"path":"a.txt"}}}`,
		`{"jsonrpc":"2.0","id":"three","method":"tools/call","params":{"name":"view","arguments":{"path":"a.txt"}}}`,
	}, "\n") + "\n"
	for _, tc := range []struct {
		name  string
		drain bool
	}{{"draining", true}, {"plain", false}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var tr sdk.Transport = &sdk.IOTransport{Reader: io.NopCloser(strings.NewReader(in)), Writer: nopWriteCloser{&out}}
			if tc.drain {
				tr = Draining{tr}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			New(Config{Exec: slowExec{mux}}).Run(ctx, tr)
			ids := map[string]bool{}
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var m struct {
					ID     json.RawMessage `json:"id"`
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal([]byte(l), &m) == nil && m.Result != nil {
					ids[string(m.ID)] = true
				}
			}
			all := ids["1"] && ids["2"] && ids[`"three"`]
			if tc.drain && !all {
				t.Errorf("answered %v, want 1, 2 and \"three\":\n%s", ids, out.String())
			}
			if !tc.drain && all {
				t.Log("the SDK answered every request without Draining: it may no longer need it")
			} else if !tc.drain {
				t.Logf("without Draining: answered %v", ids)
			}
		})
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
