package sim

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Model is a model the simulated model's model lists name.
type Model struct {
	// ID is the model's name in requests.
	ID string `json:"id"`
	// DisplayName is Anthropic's display_name; default the ID.
	DisplayName string `json:"display_name,omitempty"`
	// Created is the model's release date (Anthropic's created_at,
	// OpenAI's created, Ollama's modified_at); the zero time is sent as
	// the epoch, as the APIs send an unknown date.
	Created time.Time `json:"created,omitzero"`
	// ContextWindow is Anthropic's max_input_tokens; default 200,000.
	ContextWindow int64 `json:"context_window,omitempty"`
	// APIs are the model lists that name it: "anthropic" (GET /v1/models
	// with an anthropic-version header), "openai" (GET /v1/models or
	// /models otherwise: the Responses and Chat Completions dialects'),
	// "ollama" (GET /api/tags); empty for all of them.
	APIs []string `json:"apis,omitempty"`
}

// The model lists.
const (
	APIAnthropic = "anthropic"
	APIOpenAI    = "openai"
	APIOllama    = "ollama"
)

// DefaultModels are the models listed when the script declares none: the
// simulated model's names, each in the lists of the APIs whose surface its
// profile takes (sim-claude the Anthropic one, sim-gpt the OpenAI one).
func DefaultModels() []Model {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	return []Model{
		{ID: "sim-claude", DisplayName: "Sim Claude", Created: day(2025, 9, 29), ContextWindow: 200000, APIs: []string{APIAnthropic}},
		{ID: "sim-gpt", DisplayName: "Sim GPT", Created: day(2025, 11, 13), ContextWindow: 400000, APIs: []string{APIOpenAI}},
		{ID: "sim-gpt-codex", DisplayName: "Sim GPT Codex", Created: day(2025, 11, 13), ContextWindow: 400000, APIs: []string{APIOpenAI}},
		{ID: "sim-coder", DisplayName: "Sim Coder", Created: day(2025, 6, 1), ContextWindow: 200000, APIs: []string{APIOpenAI, APIOllama}},
	}
}

// modelMaxTokens is every simulated model's max_tokens (the profiles'
// output limit).
const modelMaxTokens = 8192

// listed returns the models the list of api names, newest first (as
// Anthropic's list is ordered; ties by ID).
func (s *Server) listed(api string) []Model {
	all := s.script.Models
	if len(all) == 0 {
		all = DefaultModels()
	}
	var out []Model
	for _, m := range all {
		if len(m.APIs) == 0 || slices.Contains(m.APIs, api) {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Model) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// beginList records a model list request and returns the fault of this
// attempt, if any: the script's ModelFaults fail the first list requests
// (each page is one), in order.
func (s *Server) beginList(api string, r *http.Request) (*Fault, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listAttempts++
	n := s.listAttempts
	s.lists = append(s.lists, Recorded{Dialect: api, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Attempt: n, Received: time.Now()})
	if n <= len(s.script.ModelFaults) {
		return &s.script.ModelFaults[n-1], len(s.lists) - 1
	}
	return nil, len(s.lists) - 1
}

func (s *Server) listStatus(rec, code int) {
	s.mu.Lock()
	s.lists[rec].Status = code
	s.mu.Unlock()
}

// ModelRequests returns a copy of the model list requests received (each
// page is one), with their query and the status answered; their Dialect
// is the list's API (APIAnthropic, APIOpenAI, APIOllama). They are not
// among Requests, which are the model turns.
func (s *Server) ModelRequests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lists)
}

// models answers GET /v1/models: Anthropic's list when the request has
// Anthropic's headers (anthropic-version or x-api-key), else OpenAI's.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "" {
		s.anthropicModels(w, r)
		return
	}
	s.openaiModels(w, r)
}

// anthropicModels answers Anthropic's GET /v1/models: a page of at most
// limit models (1 to 1000, default 20) after after_id or before before_id,
// with first_id, last_id and has_more.
func (s *Server) anthropicModels(w http.ResponseWriter, r *http.Request) {
	fault, rec := s.beginList(APIAnthropic, r)
	answer := func(status int, msg string) {
		s.listStatus(rec, status)
		messagesError(w, status, messagesErrorType(status), msg)
	}
	if !s.authorized(r) {
		answer(401, "invalid x-api-key")
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		answer(400, "anthropic-version: header is required")
		return
	}
	if fault != nil {
		retryHeaders(w, fault)
		answer(fault.Status, faultMessage(fault))
		return
	}
	q := r.URL.Query()
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			answer(400, "limit: Input should be greater than or equal to 1 and less than or equal to 1000")
			return
		}
		limit = n
	}
	all := s.listed(APIAnthropic)
	at := func(id string) int {
		return slices.IndexFunc(all, func(m Model) bool { return m.ID == id })
	}
	var page []Model
	hasMore := false
	switch after, before := q.Get("after_id"), q.Get("before_id"); {
	case after != "" && before != "":
		answer(400, "after_id and before_id cannot both be given")
		return
	case before != "":
		if i := at(before); i > 0 {
			from := max(0, i-limit)
			page, hasMore = all[from:i], from > 0
		}
	default:
		from := 0
		if after != "" {
			from = len(all) // an unknown cursor: an empty page
			if i := at(after); i >= 0 {
				from = i + 1
			}
		}
		to := min(len(all), from+limit)
		page, hasMore = all[from:to], to < len(all)
	}
	data := make([]map[string]any, 0, len(page))
	for _, m := range page {
		data = append(data, anthropicModel(m))
	}
	var first, last any // null on an empty page
	if len(page) > 0 {
		first, last = page[0].ID, page[len(page)-1].ID
	}
	s.listStatus(rec, 200)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_sim")
	json.NewEncoder(w).Encode(map[string]any{"data": data, "first_id": first, "last_id": last, "has_more": hasMore})
}

// anthropicModel is a model in Anthropic's ModelInfo shape: the fields of
// the OpenAPI description and those the current SDK reads (lifecycle,
// line, deprecated_at, retires_at), capabilities in full.
func anthropicModel(m Model) map[string]any {
	yes := map[string]any{"supported": true}
	no := map[string]any{"supported": false}
	window := m.ContextWindow
	if window == 0 {
		window = 200000
	}
	return map[string]any{
		"type": "model", "id": m.ID, "display_name": cmp.Or(m.DisplayName, m.ID),
		"created_at":       createdAt(m.Created).Format(time.RFC3339),
		"max_input_tokens": window, "max_tokens": modelMaxTokens,
		"lifecycle": "active", "line": nil, "deprecated_at": nil, "retires_at": nil,
		"capabilities": map[string]any{
			"batch": no, "citations": no, "code_execution": no, "image_input": no, "pdf_input": no, "structured_outputs": no,
			"context_management": map[string]any{"supported": true, "clear_thinking_20251015": yes, "clear_tool_uses_20250919": yes, "compact_20260112": no},
			"effort":             map[string]any{"supported": false, "low": no, "medium": no, "high": no, "max": no, "xhigh": no},
			"thinking":           map[string]any{"supported": true, "types": map[string]any{"enabled": yes, "adaptive": no}},
			"server_tools":       map[string]any{"supported": false, "code_execution": no, "web_search": no},
		},
	}
}

// openaiModels answers OpenAI's GET /v1/models (and a compatible server's
// GET /models): every model at once, {"object": "list", "data": [...]}.
func (s *Server) openaiModels(w http.ResponseWriter, r *http.Request) {
	fault, rec := s.beginList(APIOpenAI, r)
	w.Header().Set("X-Request-Id", "req_sim")
	if !s.authorized(r) {
		s.listStatus(rec, 401)
		chatError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	if fault != nil {
		s.listStatus(rec, fault.Status)
		retryHeaders(w, fault)
		typ, code := chatErrorType(fault.Status)
		msg := faultMessage(fault)
		if fault.Status == 404 && fault.Message == "" {
			// What OpenAI answers for a path it does not have.
			msg = "Invalid URL (GET " + r.URL.Path + ")"
		}
		chatError(w, fault.Status, typ, code, msg)
		return
	}
	data := []map[string]any{}
	for _, m := range s.listed(APIOpenAI) {
		data = append(data, map[string]any{"id": m.ID, "object": "model", "created": createdAt(m.Created).Unix(), "owned_by": "system"})
	}
	s.listStatus(rec, 200)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
}

// ollamaTags answers Ollama's GET /api/tags: the models pulled, each named
// with its tag (":latest" when the ID has none), as Ollama lists them.
func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	fault, rec := s.beginList(APIOllama, r)
	if fault != nil {
		s.listStatus(rec, fault.Status)
		retryHeaders(w, fault)
		ollamaError(w, fault.Status, faultMessage(fault))
		return
	}
	models := []map[string]any{}
	for _, m := range s.listed(APIOllama) {
		name := m.ID
		if !strings.Contains(name, ":") {
			name += ":latest"
		}
		digest := sha256.Sum256([]byte("sim-model:" + name))
		models = append(models, map[string]any{
			"name": name, "model": name, "modified_at": createdAt(m.Created).Format(time.RFC3339Nano),
			"size": 4920753328, "digest": hex.EncodeToString(digest[:]),
			"details": map[string]any{"parent_model": "", "format": "gguf", "family": "llama", "families": []string{"llama"},
				"parameter_size": "8.0B", "quantization_level": "Q4_K_M"},
		})
	}
	s.listStatus(rec, 200)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	json.NewEncoder(w).Encode(map[string]any{"models": models})
}

// createdAt is a model's date as sent: the epoch when it has none.
func createdAt(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t.UTC()
}

// checkModels checks the script's model list and its faults.
func (s *Script) checkModels(where string) error {
	seen := map[string]bool{}
	for i, m := range s.Models {
		if m.ID == "" || seen[m.ID] {
			return fmt.Errorf("sim script%s: model %d: a model needs an id of its own", where, i+1)
		}
		seen[m.ID] = true
		for _, api := range m.APIs {
			if api != APIAnthropic && api != APIOpenAI && api != APIOllama {
				return fmt.Errorf("sim script%s: model %s: unknown API %q (anthropic, openai or ollama)", where, m.ID, api)
			}
		}
	}
	for i, f := range s.ModelFaults {
		if f.Kind != FaultStatus || f.Status < 400 {
			return fmt.Errorf("sim script%s: model fault %d: a model list fails only with a status fault (status >= 400)", where, i+1)
		}
	}
	return nil
}
