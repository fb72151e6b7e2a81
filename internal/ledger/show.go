package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/termsafe"
)

// VerifyWorkspace checks that the files the session changed hold, in the
// workspace ws, the content the session.end entry of the ledger in dir
// (whose entries are entries) records (absent where it deleted them).
func VerifyWorkspace(dir string, entries []Entry, ws string) error {
	var end *Entry
	for i := range entries {
		if entries[i].Type == "session.end" {
			end = &entries[i]
		}
	}
	if end == nil {
		return &Error{Entry: -1, Reason: "no session.end entry: the session did not finish"}
	}
	files, err := FinalFiles(dir, *end)
	if err != nil {
		return err
	}
	// The workspace is read as the tracker recorded it: through hostfs,
	// no link followed, nothing but a regular file opened, each file
	// hashed as a stream (a workspace the model left can hold a link to
	// /dev/zero, a FIFO, a directory swapped for a link).
	root, err := hostfs.OpenRoot(ws)
	if err != nil {
		return &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("the workspace: %v", err)}
	}
	defer root.Close()
	buf := make([]byte, 256<<10)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		want := files[name]
		got, err := workspaceDigest(root, name, buf)
		p := ShowName(EncodeName(name)) // for messages
		switch {
		case want == "" && hostfs.IsNotExist(err):
			continue
		case want == "" && err == nil:
			return &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("%s exists in the workspace, but the session deleted it", p)}
		case err != nil:
			return &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("%s: %v", p, err)}
		case want == "":
			return &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("%s exists in the workspace, but the session deleted it", p)}
		case got != want:
			return &Error{Entry: int64(end.Seq), Reason: fmt.Sprintf("%s in the workspace has SHA-256 %s, the session left it at %s", p, got[:16], want[:16])}
		}
	}
	return nil
}

// workspaceDigest is the hex SHA-256 of the regular file p beneath root (an
// absolute p, the memory tool's, beneath its own directory), read as a
// stream; a link, a FIFO, a device is an error.
func workspaceDigest(root *hostfs.Root, p string, buf []byte) (string, error) {
	name := filepath.FromSlash(p)
	if filepath.IsAbs(p) {
		r, err := hostfs.OpenRoot(filepath.Dir(p))
		if err != nil {
			return "", err
		}
		defer r.Close()
		root, name = r, filepath.Base(p)
	}
	if _, err := root.Lstat(name); err != nil {
		return "", err
	}
	f, err := root.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Show writes a readable timeline of the entries: ShowWith without their
// payloads.
func Show(w io.Writer, entries []Entry) { ShowWith(w, entries, nil) }

// PayloadFunc returns the payload of a digest, false when the ledger
// holds none that matches it.
type PayloadFunc func(digest string) ([]byte, bool)

// PayloadsIn is the PayloadFunc of the ledger in dir: the payloads whose
// content matches their digest (Payloads), read once.
func PayloadsIn(dir string) (PayloadFunc, error) {
	s, err := openPayloads(dir)
	if err != nil {
		return nil, err
	}
	return func(digest string) ([]byte, bool) {
		b, err := s.get(digest)
		return b, err == nil
	}, nil
}

// Request is the exact body of the request the entry e (a
// model.response's, a context.compact's) records, read with payload (the
// entry's ledger's, PayloadsIn): its request payload, or the parts its
// request_parts manifest names, concatenated in order. false when e
// records no request.
func Request(e Entry, payload PayloadFunc) ([]byte, bool, error) {
	if d, ok := e.Payloads["request"]; ok {
		b, ok := payload(d)
		if !ok {
			return nil, true, fmt.Errorf("entry %d names payload request (%s), which the ledger does not hold", e.Seq, d)
		}
		return b, true, nil
	}
	d, ok := e.Payloads["request_parts"]
	if !ok {
		return nil, false, nil
	}
	m, ok := payload(d)
	if !ok {
		return nil, true, fmt.Errorf("entry %d names payload request_parts (%s), which the ledger does not hold", e.Seq, d)
	}
	var parts []string
	if err := json.Unmarshal(m, &parts); err != nil {
		return nil, true, fmt.Errorf("entry %d: payload request_parts is not a list of digests: %w", e.Seq, err)
	}
	var body []byte
	for k, pd := range parts {
		b, ok := payload(pd)
		if !ok {
			return nil, true, fmt.Errorf("entry %d: request part %d (%s) is not in the ledger", e.Seq, k, pd)
		}
		body = append(body, b...)
	}
	return body, true, nil
}

// userExcerpt is how many characters of a user entry's text the timeline
// shows.
const userExcerpt = 72

// ShowWith writes a readable timeline of the entries, a line each. With
// payload (nil for none), what only an entry's payloads hold is shown
// too: the start of a user entry's text, quoted (the entry itself
// records its length).
func ShowWith(w io.Writer, entries []Entry, payload PayloadFunc) {
	for _, e := range entries {
		d, _ := e.Data.(map[string]any)
		t := e.Time
		if len(t) >= 23 {
			t = t[11:23]
		}
		// What an entry names (paths, tool names, call ids, servers)
		// came from a model, a file or whoever wrote the ledger: each name
		// is shown by termsafe.Name (every byte, escaped where it cannot
		// be shown) and the rest of the line neutralised for the terminal.
		line := summary(e.Type, d)
		if e.Type == "user" && payload != nil {
			if b, ok := payload(e.Payloads["text"]); ok {
				line = userText(b)
			}
		}
		fmt.Fprintf(w, "%5d %s %-15s %s\n", e.Seq, termsafe.Line(t), termsafe.Line(e.Type), termsafe.Line(line))
	}
}

// userText is a user entry's text as the timeline shows it: its first
// userExcerpt characters, quoted (a newline as \n, a byte that is not
// UTF-8 escaped), "…" after them when there are more, and its length.
func userText(b []byte) string {
	text, cut := runePrefix(string(b), userExcerpt)
	more := ""
	if cut {
		more = "…"
	}
	return strconv.Quote(text) + more + " · " + plural.Count(utf8.RuneCount(b), "character")
}

// runePrefix is s's first n characters (a byte that is not UTF-8 counting
// as one), and whether s had more.
func runePrefix(s string, n int) (string, bool) {
	k := 0
	for i := range s {
		if k == n {
			return s[:i], true
		}
		k++
	}
	return s, false
}

// opTargetMax is how many characters of a command or a task the
// timeline shows of a tool call.
const opTargetMax = 60

// opTarget is what an operation's recorded arguments say it acts on, for
// the timeline: a command ("$ go test ./..."), a path, a rename's two
// paths, a sub-agent's task, an MCP tool; "" when they name none. Each
// name is shown by termsafe.Name; a command or task is cut at
// opTargetMax characters.
func opTarget(a map[string]any) string {
	cut := func(s string) string {
		head, more := runePrefix(s, opTargetMax)
		if more {
			return termsafe.Name(head) + "…"
		}
		return termsafe.Name(head)
	}
	switch {
	case str(a, "command") != "":
		return "$ " + cut(str(a, "command"))
	case str(a, "from") != "" && str(a, "to") != "":
		return name(a, "from") + " → " + name(a, "to")
	case str(a, "path") != "":
		return name(a, "path")
	case str(a, "task") != "":
		return cut(str(a, "task"))
	case str(a, "server") != "" && str(a, "tool") != "":
		return name(a, "server") + "/" + name(a, "tool")
	}
	return ""
}

// countOf is the number under k with noun, singular for one.
func countOf(d map[string]any, k, noun string) string {
	n, err := strconv.ParseInt(str(d, k), 10, 64)
	if err != nil {
		return str(d, k) + " " + plural.Noun(2, noun)
	}
	return plural.Count(n, noun)
}

func str(d map[string]any, k string) string {
	if v, ok := d[k]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// name is the name under k (a path, a tool's or a server's name, an id)
// as a terminal may show it: termsafe.Name.
func name(d map[string]any, k string) string { return termsafe.Name(str(d, k)) }

// usageText is a recorded model.Usage as "in N out M", N every input
// token (the recorded input_tokens is only the uncached part), followed by
// the cache's parts of N when the provider reported any.
func usageText(u map[string]any) string {
	num := func(k string) int64 {
		switch v := u[k].(type) {
		case json.Number:
			n, _ := v.Int64()
			return n
		case float64:
			return int64(v)
		}
		return 0
	}
	in, read, write := num("input_tokens"), num("cache_read_tokens"), num("cache_write_tokens")
	s := fmt.Sprintf("in %d out %d", in+read+write, num("output_tokens"))
	if read != 0 {
		s += fmt.Sprintf(" cache-read %d", read)
	}
	if write != 0 {
		s += fmt.Sprintf(" cache-write %d", write)
	}
	return s
}

func summary(typ string, d map[string]any) string {
	switch typ {
	case "session.start":
		s := fmt.Sprintf("%s · %s · surface %s · sandbox %s · %s", name(d, "provider"), name(d, "model"), name(d, "surface"), str(d, "sandbox"), name(d, "workspace"))
		if env, ok := d["environment"].(map[string]any); ok {
			s += fmt.Sprintf(" · image %s (%s) via %s %s", name(env, "image"), name(env, "image_id"), name(env, "engine"), name(env, "engine_version"))
		}
		return s
	case "model.response":
		u, _ := d["usage"].(map[string]any)
		return fmt.Sprintf("turn %s · %s · %s", str(d, "turn"), str(d, "stop_reason"), usageText(u))
	case "tool.call":
		var ops []string
		if l, ok := d["ops"].([]any); ok {
			for _, o := range l {
				if m, ok := o.(map[string]any); ok {
					op := name(m, "op")
					if a, ok := m["args"].(map[string]any); ok {
						if t := opTarget(a); t != "" {
							op += " " + t
						}
					}
					ops = append(ops, op)
				}
			}
		}
		return fmt.Sprintf("turn %s · %s · %s via %s · %s", str(d, "turn"), name(d, "call_id"), name(d, "tool"), orDash(name(d, "surface")), strings.Join(ops, ","))
	case "tool.result":
		s := name(d, "call_id")
		if str(d, "is_error") == "true" {
			s += " · error"
		}
		if l, ok := d["results"].([]any); ok {
			for _, x := range l {
				m, _ := x.(map[string]any)
				if c := str(m, "exit_code"); c != "" {
					s += " · exit " + c
				}
				if ag, ok := m["agent"].(map[string]any); ok {
					u, _ := ag["usage"].(map[string]any)
					s += fmt.Sprintf(" · sub-agent %s %s after %s turns (%s)", name(ag, "session"), str(ag, "status"), str(ag, "turns"), usageText(u))
					if l, ok := ag["ledger"].(map[string]any); ok {
						s += " · ledger " + name(l, "dir")
					}
				}
				if mc, ok := m["mcp"].(map[string]any); ok {
					s += fmt.Sprintf(" · mcp %s/%s", name(mc, "server"), name(mc, "tool"))
				}
				if ap, ok := m["approval"].(map[string]any); ok {
					s += fmt.Sprintf(" · %s %s", str(ap, "kind"), str(ap, "decision"))
					if by := str(ap, "by"); by != "" {
						s += " by " + by // an unanswered question has no one it was decided by
					}
					s += fmt.Sprintf(" (%s)", str(ap, "policy"))
				}
				if chs, ok := m["changes"].([]any); ok {
					for _, ch := range chs {
						cm, _ := ch.(map[string]any)
						if to := str(cm, "moved_to"); to != "" {
							s += fmt.Sprintf(" · rename %s → %s", ShowName(str(cm, "path")), ShowName(to))
							continue
						}
						s += fmt.Sprintf(" · %s %s", str(cm, "kind"), ShowName(str(cm, "path")))
					}
				}
			}
		}
		return s
	case "context.compact":
		var n int
		if l, ok := d["responses"].([]any); ok {
			n = len(l)
		}
		return fmt.Sprintf("%s · %s items (%d model turns) replaced by a summary · ~%s → ~%s tokens · replaced %.16s…", str(d, "reason"), str(d, "replaced"), n,
			str(d, "tokens_before"), str(d, "tokens_after"), str(d, "digest"))
	case "context.compact_failed":
		return fmt.Sprintf("%s · %s", str(d, "reason"), str(d, "error"))
	case "provider_tool":
		return str(d, "block") + " · UNVERIFIED (executed by the provider)"
	case "session.end":
		s := fmt.Sprintf("%s · %s · %s", str(d, "status"), countOf(d, "turns", "turn"), countOf(d, "calls", "call"))
		if r := str(d, "reason"); r != "" && r != str(d, "status") {
			s += " · " + r
		}
		return s
	case "validation":
		sum, _ := d["summary"].(map[string]any)
		verdict := "FAILED"
		switch {
		case str(sum, "cancelled") == "true":
			verdict = "CANCELLED (concludes nothing)"
		case str(sum, "ok") == "true":
			verdict = "passed"
		}
		who := "by the model"
		if str(d, "boundary") == "true" {
			who = "by truss (verification boundary)"
			if w := str(d, "when"); w != "" {
				who = "by truss (verification boundary, " + w + ")"
			}
		}
		if r := str(sum, "not_run"); r != "" {
			// No test ran: there are no counts to show, only why.
			return fmt.Sprintf("%s %s · %s · the test command could not run: %s", verdict, who, str(sum, "command"), r)
		}
		return fmt.Sprintf("%s %s · %s · %s %s passed, %s failed", verdict, who, str(sum, "command"), str(sum, "unit"), str(sum, "passed"), str(sum, "failed"))
	}
	b, _ := json.Marshal(d)
	if len(b) > 100 {
		b = append(b[:100], "…"...)
	}
	return string(b)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
