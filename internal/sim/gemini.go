package sim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ---- Google's Gemini API ----
//
// POST /v1beta/models/{model}:streamGenerateContent?alt=sse (and
// :generateContent) take a GenerateContentRequest: "contents" of user and
// model turns made of parts (text, thought, functionCall,
// functionResponse, each with an optional thoughtSignature), a
// systemInstruction, "tools" of functionDeclarations and a
// generationConfig. The key is the x-goog-api-key header (or ?key=). The
// stream is server-sent events, each "data: " a GenerateContentResponse
// and a CRLF blank line; without alt=sse it is one JSON array of them.
// Errors are Google's {"error": {"code", "message", "status",
// "details"}}; a 429 carries a google.rpc.RetryInfo with the delay.
//
// What the server refuses, as the service does (unless Lenient): no
// contents, a role other than user or model, a content without parts,
// two contents of one role in a row, a function call turn not answered
// by the next user turn with one functionResponse per functionCall (the
// same names and, where the call had one, the same id), parameters and
// parametersJsonSchema on one declaration, a thinkingBudget with a
// thinkingLevel, and, for a Gemini 3 model, a function call of the
// current turn without the thoughtSignature it was sent with.
//
// A Gemini 3 model (a name containing "gemini-3") gives its calls ids and
// puts a signature on the first functionCall part of a turn (on the last
// text part of a turn without calls); the others give no ids, and sign a
// turn only when it thought. A call whose input is not a JSON object ends
// the turn with MALFORMED_FUNCTION_CALL and no parts, as the service
// does; a step that stops at max_tokens loses its last call (a call is
// sent whole or not at all).

// geminiDialect is the dialect name of the Gemini routes' requests.
const geminiDialect = "gemini"

// The messages Google answers with.
const (
	geminiNoKey      = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	geminiBadKey     = "API key not valid. Please pass a valid API key."
	geminiQuota      = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."
	geminiSignature  = "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details."
	geminiTurnOrder  = "Please ensure that function call turn comes immediately after a user turn or after a function response turn."
	geminiRespCount  = "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
	geminiRespFollow = "Please ensure that function response turn comes immediately after a function call turn."
)

type geminiPart struct {
	Text             *string `json:"text"`
	Thought          bool    `json:"thought"`
	ThoughtSignature string  `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
		ThinkingConfig  *struct {
			ThinkingBudget *int   `json:"thinkingBudget"`
			ThinkingLevel  string `json:"thinkingLevel"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

// geminiError answers with Google's error object; details are added as
// they are.
func geminiError(w http.ResponseWriter, code int, msg string, details ...any) {
	e := map[string]any{"code": code, "message": msg, "status": vertexStatus(code)}
	if len(details) > 0 {
		e["details"] = details
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": e})
}

// geminiSig is the signature the server gives a model turn: opaque
// base64, and checkable (a replayed part must carry it unchanged).
func geminiSig(index int, think string) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("sim-gemini:%d:%s", index, think)))
	return base64.StdEncoding.EncodeToString(h[:24])
}

// isGemini3 reports whether a model name is a Gemini 3 model's.
func isGemini3(model string) bool { return strings.Contains(strings.ToLower(model), "gemini-3") }

// checkGemini returns what the service would refuse in a request, "" for
// nothing.
func checkGemini(req *geminiRequest, model string) string {
	if len(req.Contents) == 0 {
		return "* GenerateContentRequest.contents: contents is not specified"
	}
	for _, t := range req.Tools {
		for i, d := range t.FunctionDeclarations {
			if d.Name == "" {
				return fmt.Sprintf("* GenerateContentRequest.tools[0].function_declarations[%d].name: Name cannot be empty.", i)
			}
			if len(d.Parameters) > 0 && len(d.ParametersJSONSchema) > 0 {
				return fmt.Sprintf("* GenerateContentRequest.tools[0].function_declarations[%d]: parameters and parameters_json_schema are mutually exclusive.", i)
			}
		}
	}
	if g := req.GenerationConfig; g != nil && g.ThinkingConfig != nil && g.ThinkingConfig.ThinkingBudget != nil && g.ThinkingConfig.ThinkingLevel != "" {
		return "You can only set only one of thinking budget and thinking level."
	}
	// The current turn begins after the last user content with text.
	current := 0
	for i, c := range req.Contents {
		if c.Role != "user" && c.Role != "model" {
			return "Please use a valid role: user, model."
		}
		if len(c.Parts) == 0 {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d].parts: contents.parts must not be empty.", i)
		}
		if i > 0 && req.Contents[i-1].Role == c.Role {
			return fmt.Sprintf("* GenerateContentRequest.contents[%d]: two %s turns in a row; user and model turns must alternate.", i, c.Role)
		}
		for _, p := range c.Parts {
			if c.Role == "user" && p.Text != nil {
				current = i
			}
		}
	}
	for i, c := range req.Contents {
		var calls, resps []geminiPart
		for _, p := range c.Parts {
			if p.FunctionCall != nil {
				calls = append(calls, p)
			}
			if p.FunctionResponse != nil {
				resps = append(resps, p)
			}
		}
		if len(resps) > 0 {
			if i == 0 || c.Role != "user" {
				return geminiRespFollow
			}
			prev := 0
			for _, p := range req.Contents[i-1].Parts {
				if p.FunctionCall != nil {
					prev++
				}
			}
			if prev == 0 {
				return geminiRespFollow
			}
		}
		if len(calls) == 0 {
			continue
		}
		if c.Role != "model" || i == 0 {
			return geminiTurnOrder
		}
		if i+1 < len(req.Contents) {
			var answers []geminiPart
			for _, p := range req.Contents[i+1].Parts {
				if p.FunctionResponse != nil {
					answers = append(answers, p)
				}
			}
			if len(answers) != len(calls) {
				return geminiRespCount
			}
			for k, call := range calls {
				a := answers[k].FunctionResponse
				if a.Name != call.FunctionCall.Name || (call.FunctionCall.ID != "" && a.ID != call.FunctionCall.ID) {
					return fmt.Sprintf("Please ensure that function response %d (%s %s) answers function call %d (%s %s) of the function call turn.", k, a.Name, a.ID, k, call.FunctionCall.Name, call.FunctionCall.ID)
				}
			}
		}
		if isGemini3(model) && i > current && calls[0].ThoughtSignature == "" {
			return fmt.Sprintf(geminiSignature, "default_api:"+calls[0].FunctionCall.Name, 1)
		}
	}
	return ""
}

// geminiTurns counts a request's model turns: the step it asks for.
func geminiTurns(req *geminiRequest) int {
	n := 0
	for _, c := range req.Contents {
		if c.Role == "model" {
			n++
		}
	}
	return n
}

// signatures returns the signatures a request's model turns carry, by
// model turn, for the check that the server's own come back unchanged.
func (req *geminiRequest) signatures(body []byte) map[int][]string {
	out := map[int][]string{}
	n := summarized(body)
	for _, c := range req.Contents {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.ThoughtSignature != "" {
				out[n] = append(out[n], p.ThoughtSignature)
			}
		}
		n++
	}
	return out
}

// geminiGenerate answers POST /v1beta/models/{model}.
func (s *Server) geminiGenerate(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	modelID, method, _ := strings.Cut(r.PathValue("model"), ":")
	stream := method == "streamGenerateContent"
	if !stream && method != "generateContent" {
		geminiError(w, 404, fmt.Sprintf("models/%s:%s is not found for API version v1beta, or is not supported for this method.", modelID, method))
		return
	}
	key := r.Header.Get("X-Goog-Api-Key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	if key == "" {
		geminiError(w, 403, geminiNoKey, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "CONSUMER_INVALID", "domain": "googleapis.com"})
		return
	}
	if s.APIKey != "" && key != s.APIKey {
		geminiError(w, 400, geminiBadKey, map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
			"metadata": map[string]any{"service": "generativelanguage.googleapis.com"}})
		return
	}
	s.generate(w, r, body, received, modelID, stream, geminiDialect)
}

// vertexGenerate answers POST /{version}/projects/{project}/locations/
// {location}/publishers/google/models/{model}:streamGenerateContent (and
// :generateContent): Vertex AI's Gemini, the Gemini API's request and
// response behind Vertex's route, with an access token for a key.
func (s *Server) vertexGenerate(w http.ResponseWriter, r *http.Request) {
	body, received, err := readBody(r)
	if err != nil {
		return
	}
	modelID, method, _ := strings.Cut(r.PathValue("model"), ":")
	stream := method == "streamGenerateContent"
	resource := fmt.Sprintf("projects/%s/locations/%s/publishers/google/models/%s", r.PathValue("project"), r.PathValue("location"), modelID)
	if !stream && method != "generateContent" {
		geminiError(w, 404, fmt.Sprintf("Method %q of publisher model %s is not found.", method, resource))
		return
	}
	if !s.vertexAuthorized(r) {
		geminiError(w, 401, vertexUnauthenticated)
		return
	}
	if s.VertexProject != "" && r.PathValue("project") != s.VertexProject {
		geminiError(w, 403, fmt.Sprintf("Permission 'aiplatform.endpoints.predict' denied on resource '//aiplatform.googleapis.com/%s' (or it may not exist).", resource))
		return
	}
	if s.VertexModels != nil && !slices.Contains(s.VertexModels, modelID) {
		geminiError(w, 404, fmt.Sprintf("Publisher Model `%s` not found.", resource))
		return
	}
	s.generate(w, r, body, received, modelID, stream, vertexGeminiDialect)
}

// vertexGeminiDialect is the dialect name of Vertex AI's Gemini routes'
// requests.
const vertexGeminiDialect = "vertex-gemini"

// generate answers an authorized generateContent request of dialect
// (geminiDialect or vertexGeminiDialect).
func (s *Server) generate(w http.ResponseWriter, r *http.Request, body []byte, received time.Time, modelID string, stream bool, dialect string) {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		geminiError(w, 400, "Invalid JSON payload received. "+err.Error())
		return
	}
	if !s.Lenient {
		if msg := checkGemini(&req, modelID); msg != "" {
			geminiError(w, 400, msg)
			return
		}
	}
	gemini3 := isGemini3(modelID)
	t := s.begin(dialect, r, body, received, geminiTurns(&req))
	// The signatures the server gave must come back unchanged.
	if !s.Lenient {
		for turn, sigs := range req.signatures(body) {
			for _, sig := range sigs {
				if !s.geminiSigned(turn, sig) {
					s.status(t, 400)
					geminiError(w, 400, fmt.Sprintf("Corrupted thought signature in model turn %d.", turn))
					return
				}
			}
		}
	}
	var tools []declared
	for _, td := range req.Tools {
		for _, d := range td.FunctionDeclarations {
			tools = append(tools, declared{Name: d.Name, Kind: "function"})
		}
	}
	say, calls, err := s.plan(t, tools)
	if err != nil {
		s.status(t, 400)
		geminiError(w, 400, err.Error())
		return
	}
	if t.fault != nil && t.fault.Kind == FaultStatus {
		s.status(t, t.fault.Status)
		msg := faultMessage(t.fault)
		var details []any
		if t.fault.Status == http.StatusTooManyRequests {
			if t.fault.Message == "" {
				msg = geminiQuota
			}
			if t.fault.RetryAfterMS > 0 {
				details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo",
					"retryDelay": fmt.Sprintf("%.3fs", float64(t.fault.RetryAfterMS)/1000)})
			}
		}
		geminiError(w, t.fault.Status, msg, details...)
		return
	}
	s.status(t, http.StatusOK)
	think, stop := "", ""
	if t.step != nil {
		think, stop = t.step.Think, t.step.Stop
	}
	finish := "STOP"
	switch stop {
	case "max_tokens":
		finish = "MAX_TOKENS"
		if len(calls) > 0 {
			calls = calls[:len(calls)-1]
		}
	case "refusal":
		finish, say, calls = "SAFETY", "", nil
	}
	malformed := ""
	for _, c := range calls {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(c.Input), &obj) != nil || obj == nil {
			malformed = fmt.Sprintf("Malformed function call: %s(%s", c.Name, c.Input)
		}
	}
	sig := geminiSig(t.index, think)
	signed := gemini3 || think != ""
	var parts []map[string]any
	for _, p := range chunks(think) {
		parts = append(parts, map[string]any{"text": p, "thought": true})
	}
	sayParts := chunks(say)
	for i, p := range sayParts {
		part := map[string]any{"text": p}
		if signed && len(calls) == 0 && i == len(sayParts)-1 {
			part["thoughtSignature"] = sig
		}
		parts = append(parts, part)
	}
	if signed && len(calls) == 0 && len(sayParts) == 0 {
		parts = append(parts, map[string]any{"text": "", "thoughtSignature": sig})
	}
	if malformed != "" {
		finish, calls = "MALFORMED_FUNCTION_CALL", nil
	}
	for i, c := range calls {
		fc := map[string]any{"name": c.Name, "args": json.RawMessage(c.Input)}
		if gemini3 {
			fc["id"] = c.ID
		}
		part := map[string]any{"functionCall": fc}
		if signed && i == 0 {
			part["thoughtSignature"] = sig
		}
		parts = append(parts, part)
	}
	prompt := tokens(body)
	cached := min(s.prevPrompt(t), prompt)
	if cached < 1024 {
		cached = 0
	}
	thoughts := tokens([]byte(think))
	cands := tokens([]byte(say)) + int64(len(calls))*12 + 1
	usage := map[string]any{"promptTokenCount": prompt, "candidatesTokenCount": cands, "totalTokenCount": prompt + cands + thoughts,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": prompt}}}
	if thoughts > 0 {
		usage["thoughtsTokenCount"] = thoughts
	}
	if cached > 0 {
		usage["cachedContentTokenCount"] = cached
	}
	respID := fmt.Sprintf("sim-gemini-%02d%02d", t.index+1, t.attempt)
	chunk := func(ps []map[string]any, last bool) map[string]any {
		cand := map[string]any{"index": 0}
		if len(ps) > 0 {
			cand["content"] = map[string]any{"role": "model", "parts": ps}
		}
		out := map[string]any{"candidates": []any{cand}, "modelVersion": modelID, "responseId": respID}
		if last {
			cand["finishReason"] = finish
			if finish == "MALFORMED_FUNCTION_CALL" {
				cand["finishMessage"] = malformed
			}
			out["usageMetadata"] = usage
		} else {
			out["usageMetadata"] = map[string]any{"promptTokenCount": prompt, "totalTokenCount": prompt}
		}
		return out
	}
	s.noteGeminiSig(t.index, sig)
	if !stream || r.URL.Query().Get("alt") != "sse" {
		// generateContent answers one response; streamGenerateContent
		// without alt=sse one JSON array of the chunks.
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if !stream {
			json.NewEncoder(w).Encode(chunk(parts, true))
			return
		}
		var all []any
		for i, p := range parts {
			all = append(all, chunk([]map[string]any{p}, i == len(parts)-1))
		}
		if len(parts) == 0 {
			all = append(all, chunk(nil, true))
		}
		json.NewEncoder(w).Encode(all)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Server", "scaffolding on HTTPServer2")
	fl, _ := w.(http.Flusher)
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\r\n\r\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
	sendErr := func() {
		send(map[string]any{"error": map[string]any{"code": 500, "message": faultMessage(t.fault), "status": "INTERNAL"}})
	}
	if len(parts) == 0 {
		if s.midFault(t, w, sendErr) {
			return
		}
		send(chunk(nil, true))
		return
	}
	for i, p := range parts {
		// Text comes a fragment a chunk; the calls in the last.
		last := i == len(parts)-1
		if _, ok := p["functionCall"]; ok {
			send(chunk(parts[i:], true))
			return
		}
		send(chunk([]map[string]any{p}, last))
		if i == 0 && s.midFault(t, w, sendErr) {
			return
		}
	}
}

// noteGeminiSig remembers the signature given to a model turn.
func (s *Server) noteGeminiSig(turn int, sig string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.geminiSigs == nil {
		s.geminiSigs = map[string]bool{}
	}
	s.geminiSigs[fmt.Sprintf("%d:%s", turn, sig)] = true
}

// geminiSigned reports whether the server gave sig to model turn turn:
// a signature it did not give (one of another turn, or altered) is
// refused; one from a history the server did not see (another server's,
// a resumed session's) is taken as Google takes a valid one.
func (s *Server) geminiSigned(turn int, sig string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.geminiSigs) == 0 {
		return true
	}
	if s.geminiSigs[fmt.Sprintf("%d:%s", turn, sig)] {
		return true
	}
	for k := range s.geminiSigs {
		if strings.HasSuffix(k, ":"+sig) {
			return false // given to another turn
		}
	}
	_, err := base64.StdEncoding.DecodeString(sig)
	return err == nil && !s.knowsTurn(turn)
}

// knowsTurn reports whether the server signed model turn turn (with
// s.mu held).
func (s *Server) knowsTurn(turn int) bool {
	prefix := fmt.Sprintf("%d:", turn)
	for k := range s.geminiSigs {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
