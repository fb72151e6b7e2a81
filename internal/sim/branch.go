package sim

import (
	"encoding/json"
	"strings"
)

// branch returns the step that answers a request: step itself, or the
// alternative of step.OnResult whose key the results of the previous
// turn's calls contain (the longest such key), so that a script reacts to
// what its commands printed.
func branch(step *Step, body []byte) *Step {
	if len(step.OnResult) == 0 {
		return step
	}
	text := lastResults(body)
	best := ""
	for key := range step.OnResult {
		if strings.Contains(text, key) && (len(key) > len(best) || len(key) == len(best) && key < best) {
			best = key
		}
	}
	if best == "" {
		return step
	}
	return step.OnResult[best]
}

// lastResults returns every text of the items that follow the request's
// last assistant turn (the tool results it answers with, in any dialect:
// messages with role user or tool, or Responses output items).
func lastResults(body []byte) string {
	var req struct {
		Messages []json.RawMessage `json:"messages"`
		Input    json.RawMessage   `json:"input"`
		Contents []json.RawMessage `json:"contents"`
	}
	json.Unmarshal(body, &req)
	items := req.Messages
	if len(items) == 0 {
		items = req.Contents
	}
	if len(items) == 0 {
		json.Unmarshal(req.Input, &items)
	}
	start := 0
	for i, raw := range items {
		var it struct {
			Role string `json:"role"`
			Type string `json:"type"`
		}
		json.Unmarshal(raw, &it)
		if it.Role == "assistant" || it.Role == "model" || (it.Type != "" && !strings.HasSuffix(it.Type, "_output") && it.Role != "user" && it.Role != "tool") {
			start = i + 1
		}
	}
	var sb strings.Builder
	for _, raw := range items[start:] {
		var v any
		if json.Unmarshal(raw, &v) == nil {
			collect(&sb, v)
		}
	}
	return sb.String()
}

// collect writes every string inside v, one per line.
func collect(sb *strings.Builder, v any) {
	switch v := v.(type) {
	case string:
		sb.WriteString(v)
		sb.WriteByte('\n')
	case []any:
		for _, e := range v {
			collect(sb, e)
		}
	case map[string]any:
		for _, e := range v {
			collect(sb, e)
		}
	}
}
