package awsauth

import (
	"bytes"
	"fmt"
	"strings"
)

// INI is a parsed shared configuration or credentials file: its sections
// by name, each its keys (lower case) and values.
type INI map[string]map[string]string

// ParseINI reads an AWS shared file as the AWS CLI and SDKs do: "[name]"
// opens a section; "key = value" sets a key of it (the key in lower case,
// both trimmed); blank lines and lines starting with # or ; are comments;
// an indented line after a key with an empty value is one of its nested
// settings ("s3 =" then "  max_concurrent_requests = 10"), which no
// credential or region is, and is skipped. A section named twice has the
// keys of both, the later value of a key winning. A key outside a section
// or a line that is none of these is an error naming its line.
func ParseINI(data []byte) (INI, error) {
	out := INI{}
	var section map[string]string
	nested := false
	for i, raw := range bytes.Split(data, []byte("\n")) {
		line := strings.TrimSuffix(string(raw), "\r")
		indented := line != "" && (line[0] == ' ' || line[0] == '\t')
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' || trimmed[0] == ';' {
			continue
		}
		if indented && nested {
			continue
		}
		nested = false
		if trimmed[0] == '[' {
			if !strings.HasSuffix(trimmed, "]") || len(trimmed) < 3 {
				return nil, fmt.Errorf("line %d: a section's name is [name]: %q", i+1, trimmed)
			}
			name := strings.TrimSpace(trimmed[1 : len(trimmed)-1])
			if name == "" {
				return nil, fmt.Errorf("line %d: a section without a name", i+1)
			}
			if out[name] == nil {
				out[name] = map[string]string{}
			}
			section = out[name]
			continue
		}
		k, v, ok := strings.Cut(trimmed, "=")
		if !ok {
			return nil, fmt.Errorf("line %d: neither a [section] nor key = value: %q", i+1, trimmed)
		}
		k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
		if k == "" {
			return nil, fmt.Errorf("line %d: a value without a key", i+1)
		}
		if section == nil {
			return nil, fmt.Errorf("line %d: %s is outside any [section]", i+1, k)
		}
		section[k] = v
		nested = v == ""
	}
	return out, nil
}
