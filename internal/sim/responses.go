package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/lazyre"
)

// ---- OpenAI Responses ----

type responsesRequest struct {
	Model        string            `json:"model"`
	Instructions *string           `json:"instructions"`
	Input        json.RawMessage   `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
	Stream       bool              `json:"stream"`
	Store        *bool             `json:"store"`
	Previous     string            `json:"previous_response_id"`
	MaxOutput    *int64            `json:"max_output_tokens"`
	Parallel     *bool             `json:"parallel_tool_calls"`
	ToolChoice   json.RawMessage   `json:"tool_choice"`
	Include      []string          `json:"include"`
	Reasoning    *struct {
		Effort  *string `json:"effort"`
		Summary *string `json:"summary"`
	} `json:"reasoning"`
	CacheKey *string `json:"prompt_cache_key"`
}

// inputItem is an input item, as far as the simulator reads it.
type inputItem struct {
	Type   string `json:"type"`
	Role   string `json:"role"`
	CallID string `json:"call_id"`
	// EncryptedContent of a replayed reasoning item.
	EncryptedContent *string `json:"encrypted_content"`
	Summary          []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// modelItem reports whether an input item is one the model produced (a
// replayed output item).
func (it inputItem) modelItem() bool {
	switch it.Type {
	case "reasoning", "function_call", "custom_tool_call", "shell_call", "apply_patch_call", "local_shell_call":
		return true
	case "message", "":
		return it.Role == "assistant"
	}
	return false
}

// storedResponse is what the simulator keeps of a stored response.
type storedResponse struct {
	turns int         // model turns up to and including it
	calls []inputItem // its calls, which a chained request must answer
}

// outputFor names the output item type that answers a call item type;
// ok is false for a type that is not a call item's.
func outputFor(callType string) (output string, ok bool) {
	switch callType {
	case "function_call", "custom_tool_call", "shell_call", "apply_patch_call", "local_shell_call":
		return callType + "_output", true
	}
	return "", false
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	w.Header().Set("X-Request-Id", "req_sim")
	w.Header().Set("Openai-Version", "2020-10-01")
	if !s.authorized(r) {
		chatError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	s.respond(w, r, "responses", body, received)
}

// respond answers a Responses request whose route and credentials the
// dialect ("responses" or "azure") has checked: the body's rules, the
// step, its fault (in the dialect's error shape) and the stream.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, dialect string, body []byte, received time.Time) {
	if !json.Valid(body) {
		responsesError(w, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)", "", "")
		return
	}
	if !s.Lenient {
		if msg := s.specError("openai", "/responses", body); msg != "" {
			responsesError(w, "Invalid request: "+msg, specParam(msg), "")
			return
		}
	}
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		responsesError(w, "Invalid request: "+err.Error(), "", "")
		return
	}
	if req.Model == "" {
		responsesError(w, "Missing required parameter: 'model'.", "model", "missing_required_parameter")
		return
	}
	var items []inputItem
	if len(req.Input) > 0 && req.Input[0] == '[' {
		if err := json.Unmarshal(req.Input, &items); err != nil {
			responsesError(w, "Invalid 'input': "+err.Error(), "input", "")
			return
		}
	}
	// The step is the number of model turns so far: those of the response
	// chained to, plus each run of model items in the input.
	turns := 0
	var prev storedResponse
	if req.Previous != "" {
		s.mu.Lock()
		p, ok := s.stored[req.Previous]
		s.mu.Unlock()
		prev = p
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf("Previous response with id '%s' not found.", req.Previous),
				"type": "invalid_request_error", "param": "previous_response_id", "code": "previous_response_not_found"}})
			return
		}
		turns = prev.turns
	}
	inRun := false
	for _, it := range items {
		m := it.modelItem()
		if m && !inRun {
			turns++
		}
		inRun = m
	}
	// Every output answers a call issued before it in the conversation (the
	// input, or the response a chained request names), of the type the
	// output answers; and every call in the conversation gets its output.
	if msg := pairing(prev.calls, items); msg != "" {
		responsesError(w, msg, "input", "")
		return
	}
	// Replayed reasoning must come back with its encrypted content intact.
	for _, it := range items {
		if it.Type == "reasoning" && it.EncryptedContent != nil {
			var text []string
			for _, p := range it.Summary {
				text = append(text, p.Text)
			}
			if *it.EncryptedContent != encrypted(strings.Join(text, "\n\n")) {
				responsesError(w, "The encrypted content of a reasoning item could not be verified.", "input", "invalid_encrypted_content")
				return
			}
		}
	}
	t := s.begin(dialect, r, body, received, turns)
	if req.Previous != "" {
		s.mu.Lock()
		for _, c := range prev.calls {
			s.requests[t.rec].Chained = append(s.requests[t.rec].Chained, c.CallID)
		}
		s.mu.Unlock()
	}
	var tools []declared
	for _, raw := range req.Tools {
		var td struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		json.Unmarshal(raw, &td)
		switch td.Type {
		case "function", "custom":
			tools = append(tools, declared{Name: td.Name, Kind: td.Type})
		case "shell", "apply_patch", "local_shell":
			tools = append(tools, declared{Name: td.Type, Kind: td.Type})
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
		if dialect == azureDialect {
			azureFault(w, t.fault)
			return
		}
		typ, code := chatErrorType(t.fault.Status)
		chatError(w, t.fault.Status, typ, code, faultMessage(t.fault))
		return
	}
	s.status(t, 200)
	think := ""
	if t.step != nil {
		think = t.step.Think
	}
	id := fmt.Sprintf("resp_sim%02d%02d", t.index+1, t.attempt)
	created := time.Now().Unix()
	store := req.Store == nil || *req.Store

	// The output items, complete.
	var output []map[string]any
	if think != "" {
		output = append(output, map[string]any{"id": fmt.Sprintf("rs_sim%02d", t.index+1), "type": "reasoning",
			"summary": []any{map[string]any{"type": "summary_text", "text": think}}, "encrypted_content": encrypted(think)})
	}
	if say != "" {
		msg := map[string]any{"id": fmt.Sprintf("msg_sim%02d", t.index+1), "type": "message", "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": say, "annotations": []any{}, "logprobs": []any{}}}}
		if len(calls) > 0 {
			msg["phase"] = "commentary"
		} else {
			msg["phase"] = "final_answer"
		}
		output = append(output, msg)
	}
	for i, c := range calls {
		output = append(output, responsesCall(c, fmt.Sprintf("%02d%02d", t.index+1, i+1)))
	}
	// A step that stops at the output limit ends with response.incomplete;
	// the item being written when the limit struck is incomplete too (a
	// function call's arguments cut in the middle).
	cut := t.step != nil && t.step.Stop == "max_tokens"
	if cut && len(output) > 0 {
		last := output[len(output)-1]
		if _, ok := last["status"]; ok {
			last["status"] = "incomplete"
		}
		if args, ok := last["arguments"].(string); ok {
			last["arguments"] = args[:len(args)/2]
		}
	}
	input, outTokens := tokens(body), tokens([]byte(say+think))+int64(len(calls))*12+1
	reasoning := tokens([]byte(think))
	// Prompt caching is automatic: the previous request's prompt is read
	// from the cache, in whole blocks of 128 tokens past the first 1024.
	cached := min(s.prevPrompt(t), input)
	if cached < 1024 {
		cached = 0
	}
	cached -= cached % 128
	usage := map[string]any{"input_tokens": input, "input_tokens_details": map[string]any{"cached_tokens": cached, "cache_write_tokens": 0},
		"output_tokens": outTokens, "output_tokens_details": map[string]any{"reasoning_tokens": reasoning}, "total_tokens": input + outTokens}
	// The response echoes the reasoning settings and cache key it was sent.
	echo := map[string]any{"effort": nil, "summary": nil}
	if r := req.Reasoning; r != nil {
		echo["effort"], echo["summary"] = r.Effort, r.Summary
	}
	response := func(status string, out []map[string]any, u any, errObj any) map[string]any {
		if out == nil {
			out = []map[string]any{}
		}
		var completed any
		if status == "completed" {
			completed = time.Now().Unix()
		}
		instr := any(nil)
		if req.Instructions != nil {
			instr = *req.Instructions
		}
		tools := req.Tools
		if tools == nil {
			tools = []json.RawMessage{}
		}
		choice := any("auto")
		if len(req.ToolChoice) > 0 {
			choice = req.ToolChoice
		}
		var incomplete any
		if status == "incomplete" {
			incomplete = map[string]any{"reason": "max_output_tokens"}
		}
		r := map[string]any{"id": id, "object": "response", "created_at": created, "status": status, "completed_at": completed,
			"background": false, "error": errObj, "incomplete_details": incomplete, "instructions": instr, "max_output_tokens": req.MaxOutput,
			"max_tool_calls": nil, "model": req.Model, "output": out, "parallel_tool_calls": req.Parallel == nil || *req.Parallel,
			"previous_response_id": nilIfEmpty(req.Previous), "reasoning": echo, "prompt_cache_key": req.CacheKey,
			"service_tier": "default", "store": store, "temperature": 1, "text": map[string]any{"format": map[string]any{"type": "text"}},
			"tool_choice": choice, "tools": tools, "top_p": 1, "truncation": "disabled", "metadata": map[string]any{}}
		if u != nil {
			r["usage"] = u // absent until the response is complete
		}
		return r
	}
	if store {
		sr := storedResponse{turns: t.index + 1}
		for _, c := range calls {
			sr.calls = append(sr.calls, inputItem{Type: responsesCall(c, "")["type"].(string), CallID: c.ID})
		}
		s.mu.Lock()
		s.stored[id] = sr
		s.mu.Unlock()
	}
	final := "completed"
	if cut {
		final = "incomplete"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(response(final, output, usage, nil))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	seq := 0
	send := func(v map[string]any) {
		v["sequence_number"] = seq
		seq++
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", v["type"], b)
		if fl != nil {
			fl.Flush()
		}
	}
	send(map[string]any{"type": "response.created", "response": response("in_progress", nil, nil, nil)})
	send(map[string]any{"type": "response.in_progress", "response": response("in_progress", nil, nil, nil)})
	if s.midFault(t, w, func() {
		msg := faultMessage(t.fault)
		code := t.fault.Code
		if code == "" {
			code = "server_error"
		}
		if t.fault.Kind == FaultFailed {
			send(map[string]any{"type": "response.failed", "response": response("failed", nil, nil, map[string]any{"code": code, "message": msg})})
			return
		}
		send(map[string]any{"type": "error", "code": code, "message": msg, "param": nil})
	}) {
		return
	}
	for i, item := range output {
		s.streamItem(send, i, item)
	}
	send(map[string]any{"type": "response." + final, "response": response(final, output, usage, nil)})
}

// responsesError answers 400 with the API's error object: message, type,
// param and code, the last two null when empty.
func responsesError(w http.ResponseWriter, msg, param, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error",
		"param": nilIfEmpty(param), "code": nilIfEmpty(code)}})
}

// specParam finds the place of a schema failure in its message, the
// deepest one named ("input.2.output: …", or `Error at "/input/2"`), in the
// API's parameter notation ("input[2].output"); "" when none is named.
func specParam(msg string) string {
	where := ""
	if w, _, ok := strings.Cut(msg, ": "); ok && !strings.Contains(w, " ") {
		where = w
	}
	for _, m := range specPlace.Get().FindAllStringSubmatch(msg, -1) {
		if p := strings.ReplaceAll(strings.TrimPrefix(m[1], "/"), "/", "."); len(p) > len(where) {
			where = p
		}
	}
	if where == "" {
		return ""
	}
	var b strings.Builder
	for i, part := range strings.Split(where, ".") {
		switch {
		case part != "" && strings.Trim(part, "0123456789") == "":
			b.WriteString("[" + part + "]")
		case i > 0:
			b.WriteString("." + part)
		default:
			b.WriteString(part)
		}
	}
	return b.String()
}

// specPlace matches a JSON pointer a validation message names.
var specPlace = lazyre.Regexp{Expr: `at ["'](/[^"']*)["']`}

// callName names a call item type as the API's messages do ("" for a
// type that is not a call item's).
func callName(callType string) string {
	if _, ok := outputFor(callType); !ok {
		return ""
	}
	return strings.ReplaceAll(callType, "_", " ")
}

// pairing checks a request's calls and outputs, as the API does: an output
// whose call id no call of its type issued before it (in the input, or
// among chained, the calls of the response chained to) is refused ("No tool
// call found for function call output with call_id …"), and so is a call
// left without an output ("No tool output found for function call …").
func pairing(chained, items []inputItem) string {
	issued := map[string]string{} // call id → call item type
	for _, c := range chained {
		issued[c.CallID] = c.Type
	}
	answered := map[string]bool{}
	var calls []inputItem
	calls = append(calls, chained...)
	for _, it := range items {
		if _, ok := outputFor(it.Type); ok {
			issued[it.CallID] = it.Type
			calls = append(calls, it)
			continue
		}
		if !strings.HasSuffix(it.Type, "_output") {
			continue
		}
		callType := strings.TrimSuffix(it.Type, "_output")
		if typ, ok := issued[it.CallID]; !ok || typ != callType {
			return fmt.Sprintf("No tool call found for %s output with call_id %s.", callName(callType), it.CallID)
		}
		answered[it.CallID] = true
	}
	for _, c := range calls {
		if !answered[c.CallID] {
			return fmt.Sprintf("No tool output found for %s %s.", callName(c.Type), c.CallID)
		}
	}
	return ""
}

// streamItem sends one output item's events: added, its deltas, done.
func (s *Server) streamItem(send func(map[string]any), i int, item map[string]any) {
	added := make(map[string]any, len(item))
	for k, v := range item {
		added[k] = v
	}
	itemID, _ := item["id"].(string)
	switch item["type"] {
	case "reasoning":
		added["summary"] = []any{}
		delete(added, "encrypted_content")
	case "message":
		added["status"], added["content"] = "in_progress", []any{}
	case "function_call":
		added["status"], added["arguments"] = "in_progress", ""
	case "custom_tool_call":
		added["input"] = ""
	case "shell_call":
		added["status"] = "in_progress"
		added["action"] = map[string]any{"commands": []any{}, "timeout_ms": nil, "max_output_length": nil}
	case "apply_patch_call":
		added["status"] = "in_progress"
	}
	send(map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
	switch item["type"] {
	case "reasoning":
		text := item["summary"].([]any)[0].(map[string]any)["text"].(string)
		part := map[string]any{"type": "summary_text", "text": ""}
		send(map[string]any{"type": "response.reasoning_summary_part.added", "item_id": itemID, "output_index": i, "summary_index": 0, "part": part})
		for _, p := range chunks(text) {
			send(map[string]any{"type": "response.reasoning_summary_text.delta", "item_id": itemID, "output_index": i, "summary_index": 0, "delta": p})
		}
		send(map[string]any{"type": "response.reasoning_summary_text.done", "item_id": itemID, "output_index": i, "summary_index": 0, "text": text})
		send(map[string]any{"type": "response.reasoning_summary_part.done", "item_id": itemID, "output_index": i, "summary_index": 0,
			"part": map[string]any{"type": "summary_text", "text": text}})
	case "message":
		content := item["content"].([]any)[0].(map[string]any)
		text := content["text"].(string)
		send(map[string]any{"type": "response.content_part.added", "item_id": itemID, "output_index": i, "content_index": 0,
			"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}, "logprobs": []any{}}})
		for _, p := range chunks(text) {
			send(map[string]any{"type": "response.output_text.delta", "item_id": itemID, "output_index": i, "content_index": 0, "delta": p, "logprobs": []any{}})
		}
		send(map[string]any{"type": "response.output_text.done", "item_id": itemID, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
		send(map[string]any{"type": "response.content_part.done", "item_id": itemID, "output_index": i, "content_index": 0, "part": content})
	case "function_call":
		args := item["arguments"].(string)
		for _, p := range chunks(args) {
			send(map[string]any{"type": "response.function_call_arguments.delta", "item_id": itemID, "output_index": i, "delta": p})
		}
		send(map[string]any{"type": "response.function_call_arguments.done", "item_id": itemID, "output_index": i, "name": item["name"], "arguments": args})
	case "custom_tool_call":
		in := item["input"].(string)
		for _, p := range chunks(in) {
			send(map[string]any{"type": "response.custom_tool_call_input.delta", "item_id": itemID, "output_index": i, "delta": p})
		}
		send(map[string]any{"type": "response.custom_tool_call_input.done", "item_id": itemID, "output_index": i, "input": in})
	case "shell_call":
		if cmds, ok := item["action"].(map[string]any)["commands"].([]any); ok {
			// The model writes the commands while the item is open.
			for j, c := range cmds {
				cmd, _ := c.(string)
				send(map[string]any{"type": "response.shell_call_command.added", "output_index": i, "command_index": j, "command": ""})
				for _, p := range chunks(cmd) {
					send(map[string]any{"type": "response.shell_call_command.delta", "output_index": i, "command_index": j, "delta": p})
				}
				send(map[string]any{"type": "response.shell_call_command.done", "output_index": i, "command_index": j, "command": cmd})
			}
		}
	}
	send(map[string]any{"type": "response.output_item.done", "output_index": i, "item": item})
}

// responsesCall renders a call as its complete output item.
func responsesCall(c call, n string) map[string]any {
	switch c.Kind {
	case "shell_call":
		var action map[string]any
		if json.Unmarshal([]byte(c.Input), &action) != nil {
			action = map[string]any{"commands": []any{c.Input}, "timeout_ms": nil, "max_output_length": nil}
		}
		return map[string]any{"type": "shell_call", "id": "sh_sim" + n, "call_id": c.ID, "action": action, "status": "completed",
			"environment": map[string]any{"type": "local"}, "caller": map[string]any{"type": "direct"}}
	case "apply_patch_call":
		var op any = json.RawMessage(c.Input)
		if !json.Valid([]byte(c.Input)) {
			op = map[string]any{"type": "update_file", "path": "", "diff": c.Input}
		}
		return map[string]any{"type": "apply_patch_call", "id": "apc_sim" + n, "call_id": c.ID, "operation": op, "status": "completed",
			"caller": map[string]any{"type": "direct"}}
	case "custom":
		return map[string]any{"type": "custom_tool_call", "id": "ctc_sim" + n, "call_id": c.ID, "name": c.Name, "input": c.Input}
	}
	return map[string]any{"type": "function_call", "id": "fc_sim" + n, "call_id": c.ID, "name": c.Name, "arguments": c.Input, "status": "completed"}
}

// encrypted stands in for a reasoning item's encrypted content: opaque, and
// checkable (a replayed item must carry it unchanged).
func encrypted(think string) string {
	h := sha256.Sum256([]byte("sim-reasoning:" + think))
	return "enc_" + hex.EncodeToString(h[:16])
}

// renderOpenAI renders an action as a call of OpenAI's tools, when the
// request declares them: the typed shell and apply_patch of the Responses
// API, or the codex family's freeform apply_patch and shell_command.
func renderOpenAI(a Action, have map[string]declared, root string) (call, bool) {
	typedShell := have["shell"].Kind == "shell"
	shellCommand := have["shell_command"].Kind == "function"
	typedPatch := have["apply_patch"].Kind == "apply_patch"
	freePatch := have["apply_patch"].Kind == "custom"
	run := func(cmd string) (call, bool) {
		switch {
		case typedShell:
			return call{Name: "shell", Kind: "shell_call", Input: jsonInput(map[string]any{"commands": []string{cmd}, "timeout_ms": nil, "max_output_length": nil})}, true
		case shellCommand:
			in := map[string]any{"command": cmd}
			if root != "" {
				in["workdir"] = root
			}
			return call{Name: "shell_command", Kind: "function", Input: jsonInput(in)}, true
		}
		return call{}, false
	}
	op := func(o map[string]any) (call, bool) {
		return call{Name: "apply_patch", Kind: "apply_patch_call", Input: jsonInput(o)}, true
	}
	free := func(text string) (call, bool) { return call{Name: "apply_patch", Kind: "custom", Input: text}, true }
	switch a.Kind {
	case ActRun:
		return run(a.Command)
	case ActView:
		if a.Start > 0 {
			end := "$"
			if a.End > 0 {
				end = fmt.Sprint(a.End)
			}
			return run(fmt.Sprintf("sed -n '%d,%sp' %s", a.Start, end, shellQuote(a.Path)))
		}
		return run("cat " + shellQuote(a.Path))
	case ActList:
		p := a.Path
		if p == "" {
			p = "."
		}
		return run("ls -la " + shellQuote(p))
	case ActReplace, ActInsert:
		body := hunkBody(root, a.Path, a.Old, a.New)
		if a.Kind == ActInsert {
			body = insertBody(root, a.Path, a.Line, a.Content)
		}
		switch {
		case typedPatch:
			return op(map[string]any{"type": "update_file", "path": a.Path, "diff": "@@\n" + strings.TrimSuffix(body, "\n")})
		case freePatch:
			return free(envelope("*** Update File: " + a.Path + "\n@@\n" + body))
		}
	case ActCreate:
		switch {
		case typedPatch:
			return op(map[string]any{"type": "create_file", "path": a.Path, "diff": createDiff(a.Content)})
		case freePatch:
			return free(envelope(addFile(a.Path, a.Content)))
		}
	case ActPatch:
		if freePatch {
			return free(a.Content)
		}
	}
	return call{}, false
}

// shellQuote quotes a word for the shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
