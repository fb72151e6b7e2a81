package sim

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Recorded is one request the server received.
type Recorded struct {
	Dialect string `json:"dialect"`
	Path    string `json:"path"`
	// Query is the request's raw query (a model list's pagination).
	Query  string      `json:"query,omitempty"`
	Header http.Header `json:"header"`
	Body   []byte      `json:"body"`
	// Agent is the key of the agent script that answered, "" for the main one.
	Agent   string `json:"agent,omitempty"`
	Step    int    `json:"step"`    // 0-based step the request asked for
	Attempt int    `json:"attempt"` // 1-based attempt of that step
	Status  int    `json:"status"`  // the status answered
	// Received is when the whole request had arrived.
	Received time.Time `json:"received"`
	// Summary marks a summary request (Script.Compaction); Step is then
	// the number of model turns its history holds.
	Summary bool `json:"summary,omitempty"`
	// Answered is when the whole answer had been written (the stream's
	// last event flushed); zero while it is being written.
	Answered time.Time `json:"answered"`
	// Chained holds, for a request chained to an earlier response
	// (previous_response_id), the ids of that response's calls, which
	// the request's outputs answer.
	Chained []string `json:"chained,omitempty"`
}

// Server is the simulated model. Its zero value is not usable; use New.
type Server struct {
	script *Script
	// APIKey, when set, is required as a Bearer token (or x-api-key).
	APIKey string
	// Token, when set, is required of every request on every route,
	// before the request is read or recorded: as the credential the
	// dialect's client sends its API key as (x-api-key, "Authorization:
	// Bearer", x-goog-api-key or the key query parameter, api-key),
	// compared in constant time. A request without it is answered with
	// the dialect's own authentication error (a 401; Gemini's 403 or 400), is not
	// among Requests or ModelRequests, and uses up no step, no fault and
	// no model list attempt. Truss sets a random Token (NewToken) for the
	// server it starts for --provider sim, so that no other process on
	// the machine (a sandboxed command with the network on reaches the
	// loopback) can play the script's steps or read them.
	Token string
	// Root, when set, is the workspace the model works in: typed editor
	// calls name files by absolute path below it, as real models do. When
	// it is empty, the patches a turn writes read files in the workspace
	// its request's system prompt names (workspaceRoot).
	Root string
	// Lenient turns the strict checks off. By default the server refuses,
	// with the dialect's real error, what the real service refuses: the
	// dialect's own rules (for Messages in docs/anthropic.md, for
	// Responses in docs/openai.md) and, when Spec is set, a request that
	// does not validate against the provider's OpenAPI description.
	Lenient bool
	// Spec, when set, validates request bodies against the providers'
	// OpenAPI descriptions (the tests set internal/apispec's Checker).
	Spec SpecChecker
	// Deployments, when set, are the Azure resource's deployments: a
	// request of the azure dialect whose model names another is answered
	// 404 DeploymentNotFound. Nil: every name is deployed.
	Deployments []string
	// VertexProject, when set, is the only Google Cloud project whose
	// Vertex routes answer (another is a 403); VertexModels, when set, the
	// publisher models there are (another is a 404).
	VertexProject string
	VertexModels  []string

	mu sync.Mutex
	// issued are the access tokens the token endpoint issued.
	issued map[string]bool
	// geminiSigs are the thought signatures the Gemini routes gave, by
	// model turn ("turn:signature").
	geminiSigs map[string]bool
	attempts   map[attemptKey]int
	// stored holds the stored Responses by id (for previous_response_id).
	stored   map[string]storedResponse
	requests []Recorded
	// lists are the model list requests, listAttempts their number.
	lists        []Recorded
	listAttempts int
	mux          *http.ServeMux
}

// New returns a server for a script.
func New(s *Script) *Server {
	srv := &Server{script: s, attempts: make(map[attemptKey]int), stored: make(map[string]storedResponse), mux: http.NewServeMux()}
	srv.mux.HandleFunc("POST /api/chat", srv.ollamaChat)
	srv.mux.HandleFunc("POST /api/show", srv.ollamaShow)
	srv.mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, `{"version":"0.13.5"}`)
	})
	srv.mux.HandleFunc("POST /v1/chat/completions", srv.chatCompletions)
	srv.mux.HandleFunc("POST /chat/completions", srv.chatCompletions)
	srv.mux.HandleFunc("POST /v1/messages", srv.messages)
	srv.mux.HandleFunc("POST /v1/responses", srv.responses)
	srv.mux.HandleFunc("POST /responses", srv.responses)
	srv.mux.HandleFunc("POST /openai/v1/responses", srv.azureResponses)
	srv.mux.HandleFunc("POST /openai/responses", srv.azureResponses)
	srv.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/anthropic/models/{model}", srv.vertexPredict)
	srv.mux.HandleFunc("POST /model/{model}/invoke-with-response-stream", srv.bedrockInvoke(true))
	srv.mux.HandleFunc("POST /model/{model}/invoke", srv.bedrockInvoke(false))
	srv.mux.HandleFunc("POST /v1beta/models/{model}", srv.geminiGenerate)
	srv.mux.HandleFunc("POST /v1beta1/projects/{project}/locations/{location}/publishers/google/models/{model}", srv.vertexGenerate)
	srv.mux.HandleFunc("POST /v1/projects/{project}/locations/{location}/publishers/google/models/{model}", srv.vertexGenerate)
	srv.mux.HandleFunc("POST /token", srv.token)
	srv.mux.HandleFunc("GET /v1/models", srv.models)
	srv.mux.HandleFunc("GET /models", srv.openaiModels)
	srv.mux.HandleFunc("GET /api/tags", srv.ollamaTags)
	return srv
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.Token != "" && !s.hasToken(r) {
		// Bedrock's routes check their own credential, a SigV4 signature
		// with the token as the secret key, before they read a step.
		if _, pattern := s.mux.Handler(r); !strings.HasPrefix(pattern, "POST /model/") {
			unauthorized(w, r, pattern)
			return
		}
	}
	rec := -1
	s.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), recordKey{}, &rec)))
	if rec >= 0 {
		s.mu.Lock()
		s.requests[rec].Answered = time.Now()
		s.mu.Unlock()
	}
}

// recordKey carries, in a request's context, where the request's record
// goes, so that ServeHTTP can stamp when its answer was written.
type recordKey struct{}

// Requests returns a copy of the recorded requests.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Recorded(nil), s.requests...)
}

// Listen serves on a loopback port until ctx ends; it returns the base URL
// ("http://127.0.0.1:PORT").
func (s *Server) Listen(ctx context.Context) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("sim: listen: %w", err)
	}
	hs := &http.Server{Handler: s}
	go hs.Serve(ln)
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	return "http://" + ln.Addr().String(), nil
}

// turn is what a request resolves to: the step (or nil past the end of the
// script), the fault of this attempt, if any.
type turn struct {
	index   int
	step    *Step
	fault   *Fault
	attempt int
	rec     int    // index into requests
	root    string // the workspace the turn's files are named in ("" unknown)
}

// attemptKey counts the attempts of one step of one script (or of one
// summary request, at the number of turns it summarizes).
type attemptKey struct {
	agent   string
	index   int
	summary bool
}

// route picks the script a request follows: the agent script whose key
// the request's first user message contains (the longest such key), else
// the main script.
func (s *Server) route(body []byte) (string, *Script) {
	if len(s.script.Agents) == 0 {
		return "", s.script
	}
	first := firstUserText(body)
	best := ""
	for key := range s.script.Agents {
		if strings.Contains(first, key) && (len(key) > len(best) || len(key) == len(best) && key < best) {
			best = key
		}
	}
	if best == "" {
		return "", s.script
	}
	return best, s.script.Agents[best]
}

// firstUserText returns the text of the first user message of a request
// in any dialect (messages or input; string content or text blocks).
func firstUserText(body []byte) string {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Input    json.RawMessage   `json:"input"`
		Contents []geminiContent   `json:"contents"`
	}
	json.Unmarshal(body, &req)
	for _, c := range req.Contents {
		if c.Role != "user" {
			continue
		}
		var sb strings.Builder
		for _, p := range c.Parts {
			if p.Text != nil {
				sb.WriteString(*p.Text)
			}
		}
		return sb.String()
	}
	msgs := req.Messages
	if len(msgs) == 0 && len(req.Input) > 0 {
		var s string
		if json.Unmarshal(req.Input, &s) == nil {
			return s
		}
		json.Unmarshal(req.Input, &msgs)
	}
	for _, raw := range msgs {
		var m struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(raw, &m) != nil || m.Role != "user" {
			continue
		}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			return s
		}
		var blocks []struct {
			Text string `json:"text"`
		}
		json.Unmarshal(m.Content, &blocks)
		var sb strings.Builder
		for _, b := range blocks {
			sb.WriteString(b.Text)
		}
		return sb.String()
	}
	return ""
}

// begin records a request and decides its step and fault.
func (s *Server) begin(dialect string, r *http.Request, body []byte, received time.Time, assistantTurns int) *turn {
	agent, script := s.route(body)
	t := s.record(dialect, r, body, received, assistantTurns, agent, script)
	t.root = s.Root
	if t.root == "" {
		t.root = workspaceRoot(body)
	}
	if d := time.Duration(script.LatencyMS) * time.Millisecond; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-r.Context().Done():
			timer.Stop()
		}
	}
	return t
}

// record records a request and finds the step and fault that answer it.
func (s *Server) record(dialect string, r *http.Request, body []byte, received time.Time, assistantTurns int, agent string, script *Script) *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &turn{index: assistantTurns + summarized(body)}
	summary := isSummaryRequest(script, body)
	k := attemptKey{agent, t.index, summary}
	s.attempts[k]++
	t.attempt = s.attempts[k]
	switch {
	case summary:
		t.step = summaryStep(script, t.index)
	case t.index < len(script.Steps):
		t.step = branch(&script.Steps[t.index], body)
	}
	if t.step != nil && t.attempt <= len(t.step.Faults) {
		t.fault = &t.step.Faults[t.attempt-1]
	}
	s.requests = append(s.requests, Recorded{Dialect: dialect, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Agent: agent, Step: t.index, Attempt: t.attempt, Received: received, Summary: summary})
	t.rec = len(s.requests) - 1
	if p, ok := r.Context().Value(recordKey{}).(*int); ok {
		*p = t.rec
	}
	return t
}

func (s *Server) status(t *turn, code int) {
	s.mu.Lock()
	s.requests[t.rec].Status = code
	s.mu.Unlock()
}

// authorized checks the key, if one is configured.
func (s *Server) authorized(r *http.Request) bool {
	if s.APIKey == "" {
		return true
	}
	return r.Header.Get("Authorization") == "Bearer "+s.APIKey || r.Header.Get("X-Api-Key") == s.APIKey
}

// declared is a tool the request declared.
type declared struct {
	Name string
	Kind string // function, custom, or the typed tool's type
}

// call is an action rendered for the request's tools.
type call struct {
	ID    string
	Name  string
	Kind  string // "function", "custom", or a typed item type
	Input string
}

// render renders a step's actions as calls of the declared tools, naming
// files in the workspace root (Root, or the one the request names).
func (s *Server) render(step *Step, tools []declared, index int, root string) ([]call, error) {
	have := map[string]declared{}
	for _, t := range tools {
		have[t.Name] = t
	}
	var calls []call
	for i, a := range step.Actions {
		c, ok := renderAnthropic(a, have, s.Root)
		if !ok {
			c, ok = renderOpenAI(a, have, root)
		}
		var err error
		if !ok {
			c, err = renderGeneric(a, have)
		}
		if err != nil {
			return nil, fmt.Errorf("step %d action %d: %w", index+1, i+1, err)
		}
		if a.Tool != "" {
			// A call of another (or an unknown) tool by name: a function
			// call, unless the tool is a declared freeform one.
			c.Name, c.Kind = a.Tool, "function"
			if have[a.Tool].Kind == "custom" {
				c.Kind = "custom"
			}
		}
		if a.RawInput != nil {
			c.Input = *a.RawInput
		}
		c.ID = fmt.Sprintf("call_%d_%d", index+1, i+1)
		calls = append(calls, c)
	}
	return calls, nil
}

func jsonInput(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// renderGeneric renders an action as a call of Truss's generic tools.
func renderGeneric(a Action, have map[string]declared) (call, error) {
	need := func(name string) error {
		if _, ok := have[name]; !ok && a.Tool == "" {
			return fmt.Errorf("the %s action needs the tool %q, which the request does not declare", a.Kind, name)
		}
		return nil
	}
	var name string
	var in map[string]any
	switch a.Kind {
	case ActView:
		name, in = "read_file", map[string]any{"path": a.Path}
		if a.Start > 0 {
			in["offset"] = a.Start
		}
		if a.End > 0 {
			in["limit"] = a.End - max(a.Start, 1) + 1
		}
	case ActReplace:
		name, in = "edit_file", map[string]any{"path": a.Path, "old_string": a.Old, "new_string": a.New}
	case ActCreate:
		name, in = "write_file", map[string]any{"path": a.Path, "content": a.Content}
	case ActRun:
		name, in = "bash", map[string]any{"command": a.Command}
	case ActList:
		name, in = "list_dir", map[string]any{}
		if a.Path != "" {
			in["path"] = a.Path
		}
	case ActSpawn:
		name, in = "spawn", map[string]any{"task": a.Content}
		if a.Agent != "" {
			in["agent"] = a.Agent
		}
	case ActCall:
		if a.Content == "" {
			return call{Name: a.Tool, Kind: "function", Input: "{}"}, nil
		}
		return call{Name: a.Tool, Kind: "function", Input: a.Content}, nil
	default:
		return call{}, fmt.Errorf("the generic surface has no tool for a %s action", a.Kind)
	}
	if err := need(name); err != nil {
		return call{}, err
	}
	return call{Name: name, Kind: "function", Input: jsonInput(in)}, nil
}

// tokens estimates a token count (four bytes a token), deterministically.
func tokens(b []byte) int64 { return int64(len(b)+3) / 4 }

// readBody reads the request body and notes when it had fully arrived.
func readBody(r *http.Request) ([]byte, time.Time, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	return b, time.Now(), err
}

// chunks splits text into a few stream fragments.
func chunks(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for len(s) > 0 {
		n := min(len(s), 24)
		// Do not split a UTF-8 sequence.
		for n < len(s) && !utf8Start(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// finalText is what the model says past the end of its script.
const finalText = "The script has no more steps."

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// messages is what both message-list dialects (Ollama's /api/chat and Chat
// Completions) have in common.
type messages struct {
	Messages []struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
		// Content is a string, or (Messages API) a list of blocks.
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
}

// block is a Messages API content block, as far as pairing needs it.
type block struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	ToolUseID string `json:"tool_use_id"`
}

// assistantTurns counts the assistant messages of a request: the number of
// the step it asks for.
func assistantTurns(body []byte) int {
	var m messages
	json.Unmarshal(body, &m)
	n := 0
	for _, msg := range m.Messages {
		if msg.Role == "assistant" {
			n++
		}
	}
	return n
}

// ToolCalls returns the ids of the tool calls in a recorded request's
// history, in order, and the ids each tool result answers, in order.
func (r Recorded) ToolCalls() (calls, results []string, err error) {
	var m messages
	if err := json.Unmarshal(r.Body, &m); err != nil {
		return nil, nil, fmt.Errorf("request body: %w", err)
	}
	if r.Dialect == geminiDialect {
		// A call without an id (Gemini 2.5) is known by its name.
		var req geminiRequest
		if err := json.Unmarshal(r.Body, &req); err != nil {
			return nil, nil, fmt.Errorf("request body: %w", err)
		}
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if fc := p.FunctionCall; fc != nil {
					calls = append(calls, cmp.Or(fc.ID, fc.Name))
				}
				if fr := p.FunctionResponse; fr != nil {
					results = append(results, cmp.Or(fr.ID, fr.Name))
				}
			}
		}
		return calls, results, nil
	}
	if r.Dialect == "responses" || r.Dialect == azureDialect {
		var req struct {
			Input []inputItem `json:"input"`
		}
		if err := json.Unmarshal(r.Body, &req); err != nil {
			return nil, nil, fmt.Errorf("request body: %w", err)
		}
		calls = append(calls, r.Chained...)
		for _, it := range req.Input {
			if _, ok := outputFor(it.Type); ok {
				calls = append(calls, it.CallID)
			} else if strings.HasSuffix(it.Type, "_output") {
				results = append(results, it.CallID)
			}
		}
		return calls, results, nil
	}
	for _, msg := range m.Messages {
		for _, c := range msg.ToolCalls {
			calls = append(calls, c.ID)
		}
		if msg.Role == "tool" {
			results = append(results, msg.ToolCallID)
		}
		var blocks []block
		if json.Unmarshal(msg.Content, &blocks) == nil {
			for _, b := range blocks {
				switch b.Type {
				case "tool_use":
					calls = append(calls, b.ID)
				case "tool_result":
					results = append(results, b.ToolUseID)
				}
			}
		}
	}
	return calls, results, nil
}

// CheckPairing reports the first tool call in a recorded request that is
// not answered by exactly one result, in order.
func (r Recorded) CheckPairing() error {
	calls, results, err := r.ToolCalls()
	if err != nil {
		return err
	}
	if len(calls) != len(results) {
		return fmt.Errorf("%d tool calls but %d results", len(calls), len(results))
	}
	for i := range calls {
		if calls[i] != results[i] {
			return fmt.Errorf("call %s is answered by a result for %s", calls[i], results[i])
		}
	}
	return nil
}

// SpecChecker validates a request body against a provider's OpenAPI
// description; internal/apispec's Checker is one.
type SpecChecker interface {
	// CheckRequest validates body as the JSON request of POST path in the
	// description of api ("openai" or "anthropic"), and returns nil or an
	// error of one line naming the most specific failure.
	CheckRequest(api, path string, body []byte) error
}

// specError is the server's schema check of a request body: "" when it
// validates or when the server has no SpecChecker.
func (s *Server) specError(api, path string, body []byte) string {
	if s.Spec == nil {
		return ""
	}
	if err := s.Spec.CheckRequest(api, path, body); err != nil {
		return err.Error()
	}
	return ""
}
