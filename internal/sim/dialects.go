package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// ---- Ollama native /api/chat ----

type ollamaRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream  *bool `json:"stream"`
	Options struct {
		NumCtx *int `json:"num_ctx"`
	} `json:"options"`
}

// ollamaDefaultCtx is the context Ollama gives a request without num_ctx
// (below 24 GiB of VRAM), and ollamaModelCtx the longest context of every
// simulated model (what /api/show reports).
const (
	ollamaDefaultCtx = 4096
	ollamaModelCtx   = 131072
)

// ollamaShow answers POST /api/show with a model's details, as far as a
// client reads them: its model_info with the architecture's context length.
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"`
	}
	body, _, err := readBody(r)
	if err != nil {
		return
	}
	if json.Unmarshal(body, &req) != nil || req.Model+req.Name == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(map[string]any{
		"modelfile": "# simulated", "parameters": "", "template": "{{ .Prompt }}",
		"details":      map[string]any{"format": "gguf", "family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
		"model_info":   map[string]any{"general.architecture": "llama", "llama.context_length": ollamaModelCtx, "llama.embedding_length": 4096},
		"capabilities": []string{"completion", "tools"},
	})
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	var req ollamaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		ollamaError(w, http.StatusBadRequest, "invalid request: "+err.Error())
		return
	}
	if req.Model == "" {
		ollamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	t := s.begin("ollama", r, body, received, assistantTurns(body))
	var tools []declared
	for _, td := range req.Tools {
		tools = append(tools, declared{Name: td.Function.Name, Kind: "function"})
	}
	say, calls, err := s.plan(t, tools)
	if err != nil {
		s.status(t, http.StatusBadRequest)
		ollamaError(w, http.StatusBadRequest, err.Error())
		return
	}
	if t.fault != nil && t.fault.Kind == FaultStatus {
		s.status(t, t.fault.Status)
		retryHeaders(w, t.fault)
		ollamaError(w, t.fault.Status, faultMessage(t.fault))
		return
	}
	s.status(t, http.StatusOK)
	stream := req.Stream == nil || *req.Stream
	now := time.Now().UTC().Format(time.RFC3339Nano)
	type fn struct {
		Index     int             `json:"index"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Function fn     `json:"function"`
	}
	var tcs []tc
	for i, c := range calls {
		args := json.RawMessage(c.Input)
		if !json.Valid(args) {
			// Ollama parses arguments into an object; unparseable text
			// arrives as a JSON string.
			args, _ = json.Marshal(c.Input)
		}
		tcs = append(tcs, tc{ID: c.ID, Function: fn{Index: i, Name: c.Name, Arguments: args}})
	}
	msg := func(content string, calls []tc) map[string]any {
		m := map[string]any{"role": "assistant", "content": content}
		if len(calls) > 0 {
			m["tool_calls"] = calls
		}
		return m
	}
	// Ollama cuts a prompt longer than the context it was given, without a
	// word: the count says how much of it the model read.
	window := ollamaDefaultCtx
	if req.Options.NumCtx != nil && *req.Options.NumCtx > 0 {
		window = *req.Options.NumCtx
	}
	final := map[string]any{
		"model": req.Model, "created_at": now, "message": msg("", nil), "done": true, "done_reason": "stop",
		"total_duration": 1200000, "load_duration": 100000, "prompt_eval_count": min(tokens(body), int64(window)), "prompt_eval_duration": 400000,
		"eval_count": tokens([]byte(say)) + int64(len(calls))*12 + 1, "eval_duration": 700000,
	}
	if !stream {
		final["message"] = msg(say, tcs)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		json.NewEncoder(w).Encode(final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	fl, _ := w.(http.Flusher)
	line := func(v any) {
		enc.Encode(v)
		if fl != nil {
			fl.Flush()
		}
	}
	parts := chunks(say)
	for i, p := range parts {
		line(map[string]any{"model": req.Model, "created_at": now, "message": msg(p, nil), "done": false})
		if i == 0 && s.midFault(t, w, func() { line(map[string]any{"error": faultMessage(t.fault)}) }) {
			return
		}
	}
	if len(parts) == 0 && s.midFault(t, w, func() { line(map[string]any{"error": faultMessage(t.fault)}) }) {
		return
	}
	if len(tcs) > 0 {
		line(map[string]any{"model": req.Model, "created_at": now, "message": msg("", tcs), "done": false})
	}
	line(final)
}

func ollamaError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// plan renders the turn: the text and calls of the step, or the closing text
// past the end of the script.
func (s *Server) plan(t *turn, tools []declared) (string, []call, error) {
	if t.step == nil {
		return finalText, nil, nil
	}
	calls, err := s.render(t.step, tools, t.index, t.root)
	return t.step.Say, calls, err
}

// midFault applies a mid-stream or truncation fault after the stream has
// started; it reports whether the response is over.
func (s *Server) midFault(t *turn, w http.ResponseWriter, sendError func()) bool {
	if t.fault == nil {
		return false
	}
	switch t.fault.Kind {
	case FaultMidStream, FaultFailed:
		sendError()
		return true
	case FaultTruncate:
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		panic(http.ErrAbortHandler) // cut the connection without ending the stream
	}
	return false
}

func retryHeaders(w http.ResponseWriter, f *Fault) {
	if f.RetryAfterMS > 0 {
		w.Header().Set("Retry-After-Ms", strconv.Itoa(f.RetryAfterMS))
		w.Header().Set("Retry-After", strconv.Itoa((f.RetryAfterMS+999)/1000))
	}
}

func faultMessage(f *Fault) string {
	if f.Message != "" {
		return f.Message
	}
	switch f.Kind {
	case FaultStatus:
		switch f.Status {
		case 429:
			return "Rate limit reached. Please try again later."
		case 529:
			return "Overloaded"
		}
		return http.StatusText(f.Status)
	case FaultMidStream, FaultFailed:
		return "The server had an error while processing your request."
	}
	return "fault"
}

// ---- OpenAI Chat Completions ----

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

func chatError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	var c any
	if code != "" {
		c = code
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c}})
}

func chatErrorType(status int) (string, string) {
	switch status {
	case 401:
		return "invalid_request_error", "invalid_api_key"
	case 429:
		return "requests", "rate_limit_exceeded"
	case 400, 404, 409, 422:
		return "invalid_request_error", ""
	}
	return "server_error", ""
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	w.Header().Set("X-Request-Id", "req_sim")
	if !s.authorized(r) {
		chatError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		chatError(w, 400, "invalid_request_error", "", "We could not parse the JSON body of your request.")
		return
	}
	if req.Model == "" || len(req.Messages) == 0 {
		chatError(w, 400, "invalid_request_error", "", "you must provide a model parameter and at least one message")
		return
	}
	t := s.begin("chat", r, body, received, assistantTurns(body))
	var tools []declared
	for _, td := range req.Tools {
		if td.Type == "function" {
			tools = append(tools, declared{Name: td.Function.Name, Kind: "function"})
		}
	}
	say, calls, err := s.plan(t, tools)
	if err != nil {
		s.status(t, 400)
		chatError(w, 400, "invalid_request_error", "", err.Error())
		return
	}
	if t.fault != nil && t.fault.Kind == FaultStatus {
		s.status(t, t.fault.Status)
		retryHeaders(w, t.fault)
		typ, code := chatErrorType(t.fault.Status)
		chatError(w, t.fault.Status, typ, code, faultMessage(t.fault))
		return
	}
	s.status(t, 200)
	id := fmt.Sprintf("chatcmpl-sim%d%d", t.index+1, t.attempt)
	created := time.Now().Unix()
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	prompt, completion := tokens(body), tokens([]byte(say))+int64(len(calls))*12+1
	usage := map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details":     map[string]any{"cached_tokens": 0, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
	toolCalls := func(withArgs bool) []map[string]any {
		var out []map[string]any
		for i, c := range calls {
			args := ""
			if withArgs {
				args = c.Input
			}
			out = append(out, map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": args}})
		}
		return out
	}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nilIfEmpty(say), "refusal": nil, "annotations": []any{}}
		if len(calls) > 0 {
			tcs := toolCalls(true)
			for _, tc := range tcs {
				delete(tc, "index")
			}
			msg["tool_calls"] = tcs
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":   usage, "service_tier": "default", "system_fingerprint": "fp_sim"})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"service_tier": "default", "system_fingerprint": "fp_sim",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	sendErr := func() {
		typ, code := chatErrorType(500)
		send(map[string]any{"error": map[string]any{"message": faultMessage(t.fault), "type": typ, "param": nil, "code": code}})
	}
	if s.midFault(t, w, sendErr) {
		return
	}
	for _, p := range chunks(say) {
		send(chunk(map[string]any{"content": p}, nil))
	}
	for i, c := range calls {
		first := toolCalls(false)[i]
		send(chunk(map[string]any{"tool_calls": []any{first}}, nil))
		for _, p := range chunks(c.Input) {
			send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil))
		}
	}
	send(chunk(map[string]any{}, finish))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"service_tier": "default", "system_fingerprint": "fp_sim", "choices": []any{}, "usage": usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
