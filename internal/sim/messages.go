package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// ---- Anthropic Messages ----

type messagesRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

func messagesError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_sim")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_sim"})
}

func messagesErrorType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	if !s.authorized(r) {
		messagesError(w, 401, "authentication_error", "invalid x-api-key")
		return
	}
	s.messagesOn("anthropic", w, r, body, received)
}

// messagesOn answers a Messages request of dialect ("anthropic", or
// "vertex" for a platform's request made into the API's) whose route and
// credentials the dialect has checked, and whose body was read at
// received.
func (s *Server) messagesOn(dialect string, w http.ResponseWriter, r *http.Request, body []byte, received time.Time) {
	if r.Header.Get("Anthropic-Version") == "" {
		messagesError(w, 400, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	var req messagesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		messagesError(w, 400, "invalid_request_error", "The request body is not valid JSON: "+err.Error())
		return
	}
	if req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0 {
		messagesError(w, 400, "invalid_request_error", "model, max_tokens and messages are required")
		return
	}
	if !s.Lenient {
		if msg := s.checkMessagesAt(operation(r), body); msg != "" {
			t := s.begin(dialect, r, body, received, assistantTurns(body))
			s.status(t, 400)
			messagesError(w, 400, "invalid_request_error", msg)
			return
		}
	}
	assistant := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			assistant++
		}
	}
	t := s.begin(dialect, r, body, received, assistant)
	var tools []declared
	for _, td := range req.Tools {
		kind := td.Type
		if kind == "" || kind == "custom" {
			kind = "function"
		}
		tools = append(tools, declared{Name: td.Name, Kind: kind})
	}
	say, calls, err := s.plan(t, tools)
	if err != nil {
		s.status(t, 400)
		messagesError(w, 400, "invalid_request_error", err.Error())
		return
	}
	if t.fault != nil && t.fault.Kind == FaultStatus {
		s.status(t, t.fault.Status)
		retryHeaders(w, t.fault)
		if dialect == vertexDialect {
			vertexFault(w, t.fault)
			return
		}
		messagesError(w, t.fault.Status, messagesErrorType(t.fault.Status), faultMessage(t.fault))
		return
	}
	s.status(t, 200)
	think := ""
	stop := "end_turn"
	if len(calls) > 0 {
		stop = "tool_use"
	}
	if t.step != nil {
		think = t.step.Think
		if t.step.Stop != "" {
			stop = t.step.Stop
		}
	}
	// Usage: a request that marks cache breakpoints reads the previous
	// request's prompt from the cache and writes the rest.
	input := tokens(body)
	var cacheRead, cacheWrite int64
	if strings.Contains(string(body), `"cache_control"`) {
		prev := s.prevPrompt(t)
		cacheRead = min(prev, input)
		cacheWrite = input - cacheRead
		input = 0
	}
	output := tokens([]byte(say+think)) + int64(len(calls))*12 + 1
	usage := func(out int64) map[string]any {
		return map[string]any{"input_tokens": input, "output_tokens": out, "cache_creation_input_tokens": cacheWrite,
			"cache_read_input_tokens": cacheRead, "cache_creation": map[string]any{"ephemeral_5m_input_tokens": cacheWrite, "ephemeral_1h_input_tokens": 0},
			"server_tool_use": nil, "service_tier": "standard", "inference_geo": nil}
	}
	id := fmt.Sprintf("msg_sim%02d%02d", t.index+1, t.attempt)
	var blocks []map[string]any
	if think != "" {
		blocks = append(blocks, map[string]any{"type": "thinking", "thinking": think, "signature": signature(think)})
	}
	if say != "" {
		blocks = append(blocks, map[string]any{"type": "text", "text": say, "citations": nil})
	}
	for _, c := range calls {
		var in any = json.RawMessage(c.Input)
		if !json.Valid([]byte(c.Input)) {
			in = map[string]any{}
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": in, "caller": map[string]any{"type": "direct"}})
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_sim")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": blocks,
			"stop_reason": stop, "stop_sequence": nil, "stop_details": nil, "container": nil, "usage": usage(output)})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Request-Id", "req_sim")
	fl, _ := w.(http.Flusher)
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "stop_details": nil, "container": nil, "usage": usage(1)}})
	send("ping", map[string]any{"type": "ping"})
	if s.midFault(t, w, func() {
		send("error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": faultMessage(t.fault)}, "request_id": "req_sim"})
	}) {
		return
	}
	for i, b := range blocks {
		switch b["type"] {
		case "thinking":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, p := range chunks(think) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": p}})
			}
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
		case "text":
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": "", "citations": nil}})
			for _, p := range chunks(say) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "text_delta", "text": p}})
			}
		case "tool_use":
			c := calls[i-len(blocks)+len(calls)]
			send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}, "caller": map[string]any{"type": "direct"}}})
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}})
			for _, p := range chunks(c.Input) {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
			}
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil, "stop_details": nil, "container": nil}, "usage": usage(output)})
	send("message_stop", map[string]any{"type": "message_stop"})
}

// prevPrompt is the estimated prompt size of the last successful request
// before t (what a cache would hold).
func (s *Server) prevPrompt(t *turn) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := t.rec - 1; i >= 0; i-- {
		if s.requests[i].Status == 200 {
			return tokens(s.requests[i].Body)
		}
	}
	return 0
}

// signature is a stand-in for a thinking block's signature: opaque, and
// checkable (the replayed block must carry it unchanged).
func signature(think string) string {
	h := sha256.Sum256([]byte("sim-thinking:" + think))
	return "sig_" + hex.EncodeToString(h[:16])
}

// renderAnthropic renders an action as a call of Anthropic's typed tools, when
// the request declares them.
func renderAnthropic(a Action, have map[string]declared, root string) (call, bool) {
	editor := ""
	for _, name := range []string{"str_replace_based_edit_tool", "str_replace_editor"} {
		if d, ok := have[name]; ok && strings.HasPrefix(d.Kind, "text_editor_") {
			editor = name
		}
	}
	abs := func(p string) string {
		if root == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(root, p)
	}
	var in map[string]any
	name := editor
	switch a.Kind {
	case ActView:
		in = map[string]any{"command": "view", "path": abs(a.Path)}
		if a.Start > 0 {
			end := a.End
			if end == 0 {
				end = -1
			}
			in["view_range"] = []int{a.Start, end}
		}
	case ActList:
		p := a.Path
		if p == "" {
			p = "."
		}
		in = map[string]any{"command": "view", "path": strings.TrimSuffix(abs(p), "/.")}
	case ActReplace:
		in = map[string]any{"command": "str_replace", "path": abs(a.Path), "old_str": a.Old, "new_str": a.New}
	case ActCreate:
		in = map[string]any{"command": "create", "path": abs(a.Path), "file_text": a.Content}
	case ActInsert:
		field := "insert_text"
		if editor == "str_replace_editor" {
			field = "new_str"
		}
		in = map[string]any{"command": "insert", "path": abs(a.Path), "insert_line": a.Line, field: a.Content}
	case ActRun:
		if d, ok := have["bash"]; !ok || d.Kind != "bash_20250124" {
			return call{}, false
		}
		return call{Name: "bash", Kind: "tool_use", Input: jsonInput(map[string]any{"command": a.Command})}, true
	default:
		return call{}, false
	}
	if editor == "" {
		return call{}, false
	}
	return call{Name: name, Kind: "tool_use", Input: jsonInput(in)}, true
}

// checkMessages applies the rules the real Messages API enforces to a
// request body and returns the message of the error it would answer with,
// or "" (docs/anthropic.md lists the rules and their sources):
//
//   - no text block is empty, anywhere in messages (also inside a
//     tool_result's content) or in system;
//   - a content list whose text blocks are all whitespace is refused;
//   - every tool_use of an assistant message is answered by a tool_result
//     in the next message, the tool_result blocks coming first in it, and
//     no tool_result answers an id the previous message did not use;
//   - the body validates against the vendored OpenAPI description, when
//     the server has a Spec.
func (s *Server) checkMessages(body []byte) string { return s.checkMessagesAt("/v1/messages", body) }

// checkMessagesAt is checkMessages against the named operation of the
// description: "/v1/messages", or "/v1/messages?beta=true", the beta
// Messages API (which the SDKs' beta clients call), whose requests may
// carry beta fields such as context_management.
func (s *Server) checkMessagesAt(op string, body []byte) string {
	if msg := messagesRules(body); msg != "" {
		return msg
	}
	return s.specError("anthropic", op, body)
}

// operation names the Messages operation a request calls.
func operation(r *http.Request) string {
	if r.URL.Query().Get("beta") == "true" {
		return "/v1/messages?beta=true"
	}
	return "/v1/messages"
}

// messagesRules applies the rules of checkMessages that the OpenAPI
// description does not state.
func messagesRules(body []byte) string {
	var req struct {
		System   json.RawMessage `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return "" // the schema check below names what is wrong
	}
	if msg := checkText("system", req.System); msg != "" {
		return msg
	}
	var used []string // the tool_use ids of the previous message
	for i, m := range req.Messages {
		if msg := checkText("messages", m.Content); msg != "" {
			return msg
		}
		blocks := contentBlocks(m.Content)
		answered := map[string]bool{}
		leading := true
		for j, b := range blocks {
			if b.Type != "tool_result" {
				leading = false
				continue
			}
			if !contains(used, b.ToolUseID) || m.Role != "user" {
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			}
			if leading {
				answered[b.ToolUseID] = true
			}
		}
		if missing := unanswered(used, answered); len(missing) > 0 {
			return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
		}
		used = nil
		if m.Role == "assistant" {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					used = append(used, b.ID)
				}
			}
		}
	}
	if len(used) > 0 {
		return fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(req.Messages)-1, strings.Join(used, ", "))
	}
	return ""
}

// contentBlock is a block of a content list, as far as the rules need it.
type contentBlock struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ToolUseID string          `json:"tool_use_id"`
	Text      *string         `json:"text"`
	Content   json.RawMessage `json:"content"`
}

// contentBlocks returns the blocks of a content list (none for a string).
func contentBlocks(content json.RawMessage) []contentBlock {
	var blocks []contentBlock
	json.Unmarshal(content, &blocks)
	return blocks
}

// checkText checks the text blocks of a content list and of the content of
// its tool_result blocks: none empty, and not all of them whitespace.
func checkText(where string, content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		// A string content is one text block.
		switch {
		case s == "" && where == "messages":
			return where + ": text content blocks must be non-empty"
		case s != "" && strings.TrimSpace(s) == "":
			return where + ": text content blocks must contain non-whitespace text"
		}
		return ""
	}
	blocks := contentBlocks(content)
	texts, blank := 0, 0
	for _, b := range blocks {
		if b.Type == "tool_result" && len(b.Content) > 0 {
			if msg := checkText(where, b.Content); msg != "" {
				return msg
			}
		}
		if b.Type != "text" || b.Text == nil {
			continue
		}
		if *b.Text == "" {
			return where + ": text content blocks must be non-empty"
		}
		texts++
		if strings.TrimSpace(*b.Text) == "" {
			blank++
		}
	}
	if texts > 0 && blank == texts {
		return where + ": text content blocks must contain non-whitespace text"
	}
	return ""
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// unanswered returns the ids of used that answered lacks, in order.
func unanswered(used []string, answered map[string]bool) []string {
	var out []string
	for _, id := range used {
		if !answered[id] {
			out = append(out, id)
		}
	}
	return out
}
