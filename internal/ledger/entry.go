package ledger

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/lazyre"
)

// members are an entry's members, in the order the writer writes them.
var members = []string{"v", "seq", "time", "session", "type", "prev", "data", "payloads"}

var (
	timeRE   = lazyre.Regexp{Expr: `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$`}
	intRE    = lazyre.Regexp{Expr: `^-?(0|[1-9][0-9]*)$`}
	digestRE = lazyre.Regexp{Expr: `^[0-9a-f]{64}$`}
)

// parseEntry parses one line of entries.jsonl (without its newline) by the
// rules of docs/ledger.md: the line is one JSON text in UTF-8 (any string
// escapes), an object with exactly the eight members of an entry, no object
// anywhere with a member twice, and each member of its type: v and seq
// integers, time an RFC 3339 UTC time, session and type non-empty strings,
// prev a string, data an object, payloads an object of payload names to
// digests (64 lowercase hex digits). In tool.result and workspace.changes
// entries each change in data.results[].changes, and in session.end
// entries data.files, are checked too (paths local and '/'-separated,
// digests empty or 64 lowercase hex digits). It does not check v's value, seq's or prev's:
// the caller does, against the entries before.
func parseEntry(line []byte) (Entry, error) {
	var e Entry
	if !utf8.Valid(line) {
		return e, errors.New("the line is not UTF-8")
	}
	if err := checkJSON(line); err != nil {
		return e, fmt.Errorf("not a JSON entry: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return e, fmt.Errorf("not a JSON object: %w", err)
	}
	for _, k := range members {
		if _, ok := m[k]; !ok {
			return e, fmt.Errorf("no member %q", k)
		}
	}
	for k := range m {
		if !slices.Contains(members, k) {
			return e, fmt.Errorf("a member %q that entries do not have", k)
		}
	}
	for _, k := range []string{"v", "seq"} {
		if !intRE.Get().Match(m[k]) {
			return e, fmt.Errorf("member %q is %s, not an integer", k, m[k])
		}
	}
	var str = map[string]string{}
	for _, k := range []string{"time", "session", "type", "prev"} {
		var s string
		if m[k][0] != '"' || json.Unmarshal(m[k], &s) != nil {
			return e, fmt.Errorf("member %q is %s, not a string", k, m[k])
		}
		str[k] = s
	}
	if err := checkTime(str["time"]); err != nil {
		return e, err
	}
	for _, k := range []string{"session", "type"} {
		if str[k] == "" {
			return e, fmt.Errorf("member %q is empty", k)
		}
	}
	if m["data"][0] != '{' {
		return e, fmt.Errorf("member \"data\" is %.20s, not an object", m["data"])
	}
	var payloads map[string]json.RawMessage
	if m["payloads"][0] != '{' || json.Unmarshal(m["payloads"], &payloads) != nil {
		return e, fmt.Errorf("member \"payloads\" is %.20s, not an object", m["payloads"])
	}
	for _, name := range slices.Sorted(maps.Keys(payloads)) {
		raw := payloads[name]
		var d string
		if raw[0] != '"' || json.Unmarshal(raw, &d) != nil {
			return e, fmt.Errorf("payloads: %q is %s, not a digest", name, raw)
		}
		if name == "" {
			return e, errors.New("payloads: an empty payload name")
		}
		if !digestRE.Get().MatchString(d) {
			return e, fmt.Errorf("payloads: %q is %q, not a digest (64 lowercase hex digits)", name, d)
		}
	}
	v, _ := strconv.ParseInt(string(m["v"]), 10, 64)
	seq, _ := strconv.ParseInt(string(m["seq"]), 10, 64)
	if seq < 0 {
		return e, fmt.Errorf("member \"seq\" is %d, negative", seq)
	}
	dec := json.NewDecoder(bytes.NewReader(m["data"]))
	dec.UseNumber()
	if err := dec.Decode(&e.Data); err != nil {
		return e, fmt.Errorf("member \"data\": %w", err)
	}
	e.V, e.Seq = int(v), uint64(seq)
	e.Time, e.Session, e.Type, e.Prev = str["time"], str["session"], str["type"], str["prev"]
	e.Payloads = make(map[string]string, len(payloads))
	for name, raw := range payloads {
		var d string
		json.Unmarshal(raw, &d)
		e.Payloads[name] = d
	}
	switch e.Type {
	case "tool.result", "workspace.changes":
		if err := checkChanges(e.Data); err != nil {
			return e, err
		}
	case "session.end":
		if err := checkFiles(e.Data, e.Payloads); err != nil {
			return e, err
		}
	case "context.compact":
		if err := checkCompact(e.Data, e.Payloads); err != nil {
			return e, err
		}
	}
	return e, nil
}

// checkCompact checks a context.compact entry: data.digest is a digest,
// and the payload "replaced", when named, is that digest (the replaced
// items' bytes are what the entry says it replaced).
func checkCompact(data any, payloads map[string]string) error {
	d, _ := data.(map[string]any)
	digest, _ := d["digest"].(string)
	if !digestRE.Get().MatchString(digest) {
		return fmt.Errorf("data.digest %v is not a digest (64 lowercase hex digits)", d["digest"])
	}
	if p, ok := payloads["replaced"]; ok && p != digest {
		return fmt.Errorf("payloads: \"replaced\" is %s, not data.digest %s", p, digest)
	}
	return nil
}

// checkTime checks an entry's time: RFC 3339 in UTC ("Z"), with up to nine
// digits of a fraction of a second, naming a real date and time.
func checkTime(s string) error {
	if !timeRE.Get().MatchString(s) {
		return fmt.Errorf("time %q is not an RFC 3339 UTC time (2026-12-02T14:44:32.513054Z)", s)
	}
	t, err := time.Parse("2006-01-02T15:04:05", s[:19])
	if err != nil || t.Year() < 1 {
		return fmt.Errorf("time %q is not a real date and time", s)
	}
	return nil
}

// checkJSON checks that b is exactly one JSON value, with no object that
// has a member twice.
func checkJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := walk(dec); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("bytes after the entry's object")
	}
	return nil
}

// walk reads one value from dec, rejecting a duplicate member.
func walk(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '[':
		for dec.More() {
			if err := walk(dec); err != nil {
				return err
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			if seen[key] {
				return fmt.Errorf("an object has the member %q twice (a duplicate member)", key)
			}
			seen[key] = true
			if err := walk(dec); err != nil {
				return err
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

// changePath reports whether p is a change's path as entries write it:
// a recorded name (DecodeName) that is '/'-separated and clean; relative
// to the workspace root without leaving it, or absolute (a file in another
// root, a memory file).
func changePath(p string) bool {
	p, err := DecodeName(p)
	return err == nil && p != "" && p != "." && path.Clean(p) == p && p != ".." && !strings.HasPrefix(p, "../")
}

// fileDigest reports whether v is a file's digest as entries write it:
// "" (no such file, or not a regular file) or 64 lowercase hex digits.
func fileDigest(v any) bool {
	s, ok := v.(string)
	return ok && (s == "" || digestRE.Get().MatchString(s))
}

// checkChanges checks the changes of a tool.result's data.
func checkChanges(data any) error {
	d, _ := data.(map[string]any)
	results, ok := d["results"]
	if !ok {
		return nil
	}
	rs, ok := results.([]any)
	if !ok && results != nil {
		return errors.New("data.results is not an array")
	}
	for i, r := range rs {
		res, ok := r.(map[string]any)
		if !ok {
			return fmt.Errorf("data.results[%d] is not an object", i)
		}
		changes, ok := res["changes"]
		if !ok {
			continue
		}
		cs, ok := changes.([]any)
		if !ok && changes != nil {
			return fmt.Errorf("data.results[%d].changes is not an array", i)
		}
		for j, c := range cs {
			ch, ok := c.(map[string]any)
			where := fmt.Sprintf("data.results[%d].changes[%d]", i, j)
			if !ok {
				return fmt.Errorf("%s is not an object", where)
			}
			// A bulk change (with files) of the workspace root is path ".".
			_, bulk := ch["files"]
			if p, _ := ch["path"].(string); !changePath(p) && !(bulk && p == ".") {
				return fmt.Errorf("%s: path %v is not a clean path inside the workspace", where, ch["path"])
			}
			if k, _ := ch["kind"].(string); k != "add" && k != "update" && k != "delete" {
				return fmt.Errorf("%s: kind %v is not add, update or delete", where, ch["kind"])
			}
			for _, k := range []string{"before", "after"} {
				if v, ok := ch[k]; ok && !fileDigest(v) {
					return fmt.Errorf("%s: %s %v is not a digest (64 lowercase hex digits)", where, k, v)
				}
			}
			if v, ok := ch["moved_to"]; ok {
				if p, _ := v.(string); !changePath(p) {
					return fmt.Errorf("%s: moved_to path %v is not a clean path inside the workspace", where, v)
				}
			}
		}
	}
	return nil
}

// checkFiles checks a session.end's data.files, or its data.files_count
// (a count past InlineFiles, with a final_files payload, and no
// data.files).
func checkFiles(data any, payloads map[string]string) error {
	d, _ := data.(map[string]any)
	if n, ok := d["files_count"]; ok {
		c, ok := n.(json.Number)
		v, err := c.Int64()
		if !ok || err != nil || v <= InlineFiles {
			return fmt.Errorf("data.files_count %v is not a count of more than %d files", n, InlineFiles)
		}
		if _, ok := d["files"]; ok {
			return errors.New("data has both files and files_count")
		}
		if _, ok := payloads["final_files"]; !ok {
			return errors.New("data.files_count without a final_files payload")
		}
		return nil
	}
	files, ok := d["files"]
	if !ok || files == nil {
		return nil
	}
	fs, ok := files.(map[string]any)
	if !ok {
		return errors.New("data.files is not an object")
	}
	for p, v := range fs {
		if !changePath(p) {
			return fmt.Errorf("data.files: path %q is not a clean path inside the workspace", p)
		}
		if !fileDigest(v) {
			return fmt.Errorf("data.files: %q's digest %v is not a digest (64 lowercase hex digits)", p, v)
		}
	}
	return nil
}
