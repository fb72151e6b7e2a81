package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// decodeInput decodes a typed tool's input object into v. Input that is not
// JSON is refused with what is wrong and where (the byte offset and the
// text just before it), so the model can resend it; the exact bytes stay in
// the call's raw input for the record. Input that is JSON but not an object,
// or a field of the wrong type, is refused naming the field. An empty input
// is an empty object.
func decodeInput(toolName, input string, v any) error {
	in := orEmpty(input)
	err := json.Unmarshal([]byte(in), v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		if int(se.Offset) >= len(in) {
			return inputErr("Invalid input for the %s tool: the input is not valid JSON: it ends at byte %d before the JSON value is complete, after %q. Send the input as one JSON object.",
				toolName, len(in), before(in, len(in), 24))
		}
		return inputErr("Invalid input for the %s tool: the input is not valid JSON: %s at byte %d of %d, after %q. Send the input as one JSON object.",
			toolName, se.Error(), se.Offset, len(in), before(in, int(se.Offset), 24))
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return inputErr("Invalid input for the %s tool: the input must be a JSON object, got %s.", toolName, te.Value)
		}
		return inputErr("Invalid input for the %s tool: `%s` must be of type %s, got %s.", toolName, te.Field, jsonKind(te.Type.String()), te.Value)
	}
	return inputErr("Invalid input for the %s tool: %v", toolName, err)
}

// before returns at most n characters of s ending at byte offset off.
func before(s string, off, n int) string {
	off = min(max(off, 0), len(s))
	start := off
	for i := 0; i < n && start > 0; i++ {
		_, w := utf8.DecodeLastRuneInString(s[:start])
		start -= w
	}
	return s[start:off]
}

func jsonKind(goType string) string {
	switch goType {
	case "string", "*string":
		return "string"
	case "bool", "*bool":
		return "boolean"
	case "int", "*int", "int64", "float64":
		return "integer"
	}
	return fmt.Sprintf("JSON matching %s", goType)
}
