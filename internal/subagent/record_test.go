package subagent_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/mod/sumdb/note"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/subagent"
	"github.com/trussdev/truss/internal/tool"
)

// testRecording is a child's ledger, as cmd/truss keeps one.
type testRecording struct {
	*ledger.Recorder
	lw *ledger.Writer
}

func (r *testRecording) Wrap(next tool.Executor) tool.Executor { return next }

func (r *testRecording) Finish(*agent.Outcome) (*tool.LedgerLink, error) {
	err := r.Recorder.Close()
	if _, _, _, serr := r.lw.Seal(); err == nil {
		err = serr
	}
	if cerr := r.lw.Close(); err == nil {
		err = cerr
	}
	return &tool.LedgerLink{}, err
}

// readPack returns a ledger's payloads by digest.
func readPack(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	p, err := ledger.Payloads(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParallelChildrenLedgersHoldTheirOwnBytes runs three children at once
// on one shared provider client, each turn of each child slow enough that
// their HTTP exchanges overlap, and checks every child's ledger: it
// verifies, and each model.response holds that turn's own bytes — the
// request carries the child's own task and no sibling's, the response
// carries the text that turn decoded and nothing of a sibling's turns.
func TestParallelChildrenLedgersHoldTheirOwnBytes(t *testing.T) {
	names := []string{"A", "B", "C"}
	const turns = 3
	var agents []string
	for _, n := range names {
		var steps []string
		for k := 1; k < turns; k++ {
			steps = append(steps, fmt.Sprintf(`{"say":"MARK-%s-%d","actions":[{"kind":"run","command":"echo %s%d"}]}`, n, k, n, k))
		}
		steps = append(steps, fmt.Sprintf(`{"say":"MARK-%s-%d"}`, n, turns))
		agents = append(agents, fmt.Sprintf(`"CHILD-%s":{"latency_ms":40,"steps":[%s]}`, n, strings.Join(steps, ",")))
	}
	script := `{"steps":[
	  {"actions":[{"kind":"spawn","content":"CHILD-A: first part"},{"kind":"spawn","content":"CHILD-B: second part"},{"kind":"spawn","content":"CHILD-C: third part"}]},
	  {"say":"All three are done."}],
	 "agents":{` + strings.Join(agents, ",") + `}}`

	for _, dialect := range []string{"anthropic", "responses", "chat", "ollama"} {
		t.Run(dialect, func(t *testing.T) {
			skey, vkey, err := note.GenerateKey(rand.Reader, "truss/test")
			if err != nil {
				t.Fatal(err)
			}
			signer, err := note.NewSigner(skey)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarnessOn(t, dialect, script, subagent.Limits{})
			ledgers := t.TempDir()
			var mu sync.Mutex
			dirs := map[string]string{} // child session → its ledger
			h.cfg.Record = func(run *subagent.Run) (subagent.Recording, error) {
				dir := filepath.Join(ledgers, run.Name)
				lw, err := ledger.Create(dir, run.Session, signer)
				if err != nil {
					return nil, err
				}
				r, err := ledger.NewRecorder(lw, ledger.Start{Model: run.Model})
				if err != nil {
					lw.Close()
					return nil, err
				}
				mu.Lock()
				dirs[run.Session] = dir
				mu.Unlock()
				return &testRecording{Recorder: r, lw: lw}, nil
			}
			out := h.run(t, "Do three things.")
			if out.Status != agent.StatusCompleted {
				t.Fatalf("top agent: %s (%s)", out.Status, out.Reason)
			}
			rs := h.spawnResults()
			if len(rs) != len(names) {
				t.Fatalf("%d spawn results, want %d", len(rs), len(names))
			}
			for i, r := range rs {
				own := names[i]
				if r.Err != nil {
					t.Fatalf("child %s: %v", own, r.Err)
				}
				session := r.Agent.Session
				// The text each turn decoded, from the child's events.
				decoded := map[int]string{}
				for _, ev := range h.children[session] {
					if ev.Type == agent.EventResponse {
						for _, it := range ev.Response.Items {
							if it.Kind == model.KindAssistant {
								decoded[ev.Turn] += it.Text
							}
						}
					}
				}
				dir := dirs[session]
				if _, _, err := ledger.Verify(dir, vkey); err != nil {
					t.Fatalf("child %s: its ledger does not verify: %v", own, err)
				}
				_, entries, _ := ledger.Verify(dir, vkey)
				pack := readPack(t, dir)
				payload := func(e ledger.Entry, name string) []byte {
					d, ok := e.Payloads[name]
					if !ok {
						return nil
					}
					b, ok := pack[d]
					if !ok {
						t.Fatalf("child %s: entry %d: payload %s is not in the pack", own, e.Seq, name)
					}
					return b
				}
				seen := 0
				for _, e := range entries {
					if e.Type != "model.response" {
						continue
					}
					seen++
					n, _ := e.Data.(map[string]any)["turn"].(json.Number).Int64()
					turn := int(n)
					req := payload(e, "request")
					if manifest := payload(e, "request_parts"); manifest != nil {
						var digests []string
						if err := json.Unmarshal(manifest, &digests); err != nil {
							t.Fatal(err)
						}
						for _, d := range digests {
							part, ok := pack[d]
							if !ok {
								t.Fatalf("child %s: request part %s is not in the pack", own, d)
							}
							sum := sha256.Sum256(part)
							if hex.EncodeToString(sum[:]) != d {
								t.Fatalf("child %s: request part %s does not match its digest", own, d)
							}
							req = append(req, part...)
						}
					}
					resp := payload(e, "response")
					want := fmt.Sprintf("MARK-%s-%d", own, turn)
					if decoded[turn] != want {
						t.Errorf("child %s turn %d decoded %q, want %q", own, turn, decoded[turn], want)
					}
					if !bytes.Contains(resp, []byte(decoded[turn])) {
						t.Errorf("child %s turn %d: the recorded response does not hold what the turn decoded (%q):\n%s", own, turn, decoded[turn], resp)
					}
					if !bytes.Contains(req, []byte("CHILD-"+own+":")) {
						t.Errorf("child %s turn %d: the recorded request does not hold the child's task:\n%s", own, turn, req)
					}
					for _, other := range names {
						if other == own {
							continue
						}
						if bytes.Contains(req, []byte("CHILD-"+other)) || bytes.Contains(req, []byte("MARK-"+other)) {
							t.Errorf("child %s turn %d: the recorded request holds child %s's bytes:\n%s", own, turn, other, req)
						}
						if bytes.Contains(resp, []byte("MARK-"+other)) || bytes.Contains(resp, []byte("echo "+other)) {
							t.Errorf("child %s turn %d: the recorded response holds child %s's bytes:\n%s", own, turn, other, resp)
						}
					}
				}
				if seen != turns {
					t.Errorf("child %s: %d model.response entries, want %d", own, seen, turns)
				}
			}
		})
	}
}
