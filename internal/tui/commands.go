package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/trussdev/truss/internal/compact"
	"github.com/trussdev/truss/internal/lazyre"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/termsafe"
)

// commandSpec is one slash command: /help lists the table, the menu that
// completes a command name is drawn from it, and a command typed while a
// turn runs either runs at once or waits its turn by it.
type commandSpec struct {
	name  string // without the slash: "model"
	args  string // the argument it takes, as /help writes it ("[NAME]"), or ""
	about string // what it does, in one line
	// idle: the command talks to the session, which runs one thing at a
	// time, so while a turn runs it is queued and runs when the session is
	// idle. show: without an argument it only shows what the status line
	// already holds, which runs at once.
	idle, show bool
}

// commandTable lists the slash commands in the order /help and the menu
// show them. It is never modified.
var commandTable = []commandSpec{
	{name: "help", about: "the commands and keys"},
	{name: "model", args: "[N|NAME]", about: "list the models, or switch to the Nth or to NAME for the next turns", idle: true, show: true},
	{name: "surface", args: "[NAME]", about: "show the tool surface, or switch to NAME", idle: true, show: true},
	{name: "sandbox", args: "[MODE]", about: "show the sandbox mode, or switch to MODE", idle: true, show: true},
	{name: "compact", about: "summarise the older turns now to free the context", idle: true},
	{name: "cost", about: "tokens and cost of this session so far"},
	{name: "diff", about: "the workspace's changes since truss started", idle: true},
	{name: "check", about: "run the project's checks now (edits start them in the background)", idle: true},
	{name: "ledger", about: "verify this session's ledger and show its root", idle: true},
	{name: "resume", args: "[N|ID]", about: "list this directory's earlier sessions, or continue one", idle: true},
	{name: "new", about: "start a new session in this directory", idle: true},
	{name: "quit", about: "save and exit (also /exit, Ctrl-D)"},
}

// lookupCommand returns the command named name ("exit" and "?" are
// aliases of quit and help).
func lookupCommand(name string) (commandSpec, bool) {
	switch name {
	case "exit":
		name = "quit"
	case "?":
		name = "help"
	}
	for _, c := range commandTable {
		if c.name == name {
			return c, true
		}
	}
	return commandSpec{}, false
}

// usage writes a command as /help lists it: "/model [N|NAME]".
func (c commandSpec) usage() string {
	if c.args == "" {
		return "/" + c.name
	}
	return "/" + c.name + " " + c.args
}

const keyHelp = `Keys: Enter sends (while a turn runs: queues) · Tab completes /commands and @paths · Alt+Enter or Ctrl+J adds a line · Up/Down history (Up on an empty input takes back a queued message) · Esc or Ctrl-C cancels the turn, then the queue is sent · Ctrl-D exits · %s · Ctrl+O shows/hides diffs · Ctrl+T shows/hides thinking · @path attaches a file`

// scrollHelp is how the transcript scrolls: with the terminal's own
// scrollback inline (where PgUp/PgDn do nothing), with PgUp/PgDn on the
// alternate screen.
func scrollHelp(inline bool) string {
	if inline {
		return "scroll with the terminal"
	}
	return "PgUp/PgDn scroll"
}

// errUnsupported says that the session lacks a command's capability.
var errUnsupported = errors.New("not available in this session")

// parseCommand splits "/name args" into its lower-case name and its
// argument, trimmed.
func parseCommand(text string) (name, arg string) {
	text = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(text), "/"))
	name, arg, _ = strings.Cut(text, " ")
	if i := strings.IndexAny(name, "\t\n"); i >= 0 {
		name, arg = name[:i], name[i+1:]+" "+arg
	}
	return strings.ToLower(name), strings.TrimSpace(arg)
}

// attachments returns the paths of the @path words of a task: an @ at the
// start of a word, followed by the path up to the next space (trailing
// punctuation left out). A lone @ and an @ inside a word (an e-mail
// address) attach nothing.
func attachments(text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(text) {
		p, ok := strings.CutPrefix(w, "@")
		if !ok {
			continue
		}
		p = strings.TrimRight(p, ",.;:!?)]}'\"")
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

// command runs a slash command.
func (m *uiModel) command(text string) tea.Cmd {
	name, arg := parseCommand(text)
	st := m.sess.Status()
	switch name {
	case "help", "?":
		var b strings.Builder
		for _, c := range commandTable {
			fmt.Fprintf(&b, "%-17s %s\n", c.usage(), c.about)
		}
		fmt.Fprintf(&b, keyHelp, scrollHelp(m.inline))
		m.add(blockNote, b.String())
		return nil
	case "quit", "exit":
		return m.quit()
	case "cost":
		m.add(blockNote, costText(st))
		return nil
	}
	var run func(ctx context.Context) cmdDoneMsg
	show := func(what, v string) tea.Cmd {
		if v == "" {
			v = "(unknown)"
		}
		m.add(blockNote, what+": "+termsafe.String(v))
		return nil
	}
	switch name {
	case "model":
		lister, canList := m.sess.(ModelLister)
		if arg == "" && !canList {
			m.add(blockNote, "Model: "+termsafe.Line(st.Model)+"\n/model NAME switches to NAME for the next turns (this session cannot list its provider's models).")
			return nil
		}
		if arg == "" {
			current := st.Model
			run = func(ctx context.Context) cmdDoneMsg {
				names, err := lister.Models(ctx)
				if err != nil {
					return cmdDoneMsg{err: err}
				}
				if len(names) == 0 {
					return cmdDoneMsg{report: "The provider lists no models; /model NAME switches to NAME."}
				}
				return cmdDoneMsg{report: modelsText(names, current), models: names}
			}
			break
		}
		if n, err := strconv.Atoi(arg); err == nil {
			if n < 1 || n > len(m.models) {
				m.add(blockError, fmt.Sprintf("No model %d: /model lists the models to choose from.", n))
				return nil
			}
			arg = m.models[n-1]
		}
		if s, ok := m.sess.(ModelSwitcher); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				return cmdDoneMsg{report: "Model: " + termsafe.Line(arg), err: s.SetModel(ctx, arg)}
			}
		}
	case "surface":
		if arg == "" {
			return show("Surface", st.Surface)
		}
		if s, ok := m.sess.(SurfaceSwitcher); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				return cmdDoneMsg{report: "Surface: " + arg, err: s.SetSurface(ctx, arg)}
			}
		}
	case "sandbox":
		if arg == "" {
			return show("Sandbox", st.Sandbox)
		}
		mode, confirmed := strings.CutSuffix(arg, " confirm")
		if strings.EqualFold(strings.TrimSpace(mode), "full") && !confirmed {
			// No sandbox at all: said plainly, and done only when asked twice.
			m.add(blockApproval, "/sandbox full runs every command without a sandbox: with your user's rights, the network, and your\n"+
				"credentials, keys and every file readable and writable. Type /sandbox full confirm to do it.")
			return nil
		}
		arg = strings.TrimSpace(mode)
		if s, ok := m.sess.(SandboxSwitcher); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				return cmdDoneMsg{report: "Sandbox: " + arg, err: s.SetSandbox(ctx, arg)}
			}
		}
	case "compact":
		if s, ok := m.sess.(Compactor); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				rep, err := s.Compact(ctx)
				return cmdDoneMsg{report: rep, err: err}
			}
		}
	case "diff":
		if s, ok := m.sess.(Differ); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				d, err := s.Diff(ctx)
				if err == nil && strings.TrimSpace(d) == "" {
					return cmdDoneMsg{report: "No changes since truss started."}
				}
				return cmdDoneMsg{kind: blockDiff, report: d, err: err}
			}
		}
	case "check":
		if s, ok := m.sess.(Checker); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				rep, err := s.Check(ctx)
				return cmdDoneMsg{report: rep, err: err}
			}
		}
	case "ledger":
		if s, ok := m.sess.(LedgerVerifier); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				rep, err := s.VerifyLedger(ctx)
				return cmdDoneMsg{report: rep, err: err}
			}
		}
	case "resume":
		if l, ok := m.sess.(ResumeLister); ok && arg == "" {
			run = func(ctx context.Context) cmdDoneMsg {
				cs, err := l.Resumable(ctx)
				if err != nil {
					return cmdDoneMsg{err: err}
				}
				if len(cs) == 0 {
					return cmdDoneMsg{report: "No other session of this directory to resume (truss sessions lists them all)."}
				}
				return cmdDoneMsg{report: choicesText(cs), choices: cs}
			}
			break
		}
		// A number picks from the last listing, or, before any, from the
		// one /resume would show now.
		var lister ResumeLister
		n, nerr := strconv.Atoi(arg)
		if nerr == nil {
			if l, ok := m.sess.(ResumeLister); ok && len(m.choices) == 0 {
				lister = l
			} else if n < 1 || n > len(m.choices) {
				m.add(blockError, fmt.Sprintf("No session %d: /resume lists the sessions to choose from.", n))
				return nil
			} else {
				arg = m.choices[n-1].ID
			}
		}
		if s, ok := m.sess.(Resumer); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				if lister != nil {
					cs, err := lister.Resumable(ctx)
					if err != nil {
						return cmdDoneMsg{err: err}
					}
					if n < 1 || n > len(cs) {
						return cmdDoneMsg{err: fmt.Errorf("no session %d: /resume lists the %s to choose from", n, plural(len(cs), "session"))}
					}
					arg = cs[n-1].ID
				}
				items, err := s.Resume(ctx, arg)
				if err != nil {
					return cmdDoneMsg{err: err}
				}
				return cmdDoneMsg{clear: true, title: "session " + termsafe.Line(arg), items: items, report: "Resumed."}
			}
		}
	case "new":
		if s, ok := m.sess.(Renewer); ok {
			run = func(ctx context.Context) cmdDoneMsg {
				if err := s.NewSession(ctx); err != nil {
					return cmdDoneMsg{err: err}
				}
				return cmdDoneMsg{clear: true, title: "new session", report: "New session."}
			}
		}
	default:
		m.add(blockError, fmt.Sprintf("Unknown command /%s; /help lists the commands.", termsafe.String(name)))
		return nil
	}
	if run == nil {
		m.add(blockError, fmt.Sprintf("/%s is %v.", name, errUnsupported))
		return nil
	}
	if m.busy != "" {
		// mustWait queues such a command; this is a safety net.
		m.add(blockNote, fmt.Sprintf("/%s waits for the session to be idle; send it again then.", name))
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.busy, m.cancel = "/"+name, cancel
	fly := m.fly
	return func() tea.Msg {
		defer cancel()
		if !fly.begin() {
			return cmdDoneMsg{err: context.Canceled}
		}
		defer fly.end()
		msg := run(ctx)
		if msg.err != nil {
			msg.err = fmt.Errorf("/%s: %w", name, msg.err)
		}
		return msg
	}
}

// finishCommand draws a command's result.
func (m *uiModel) finishCommand(msg cmdDoneMsg) {
	if msg.err != nil {
		if errors.Is(msg.err, context.Canceled) {
			m.add(blockNote, "Cancelled.")
			return
		}
		m.add(blockError, termsafe.String(msg.err.Error()))
		return
	}
	if msg.choices != nil {
		m.choices = msg.choices
	}
	if msg.models != nil {
		m.models = msg.models
	}
	if msg.clear {
		m.separator(msg.title)
		m.replay(msg.items)
	}
	if msg.report != "" {
		kind := msg.kind
		if kind == 0 {
			kind = blockNote
		}
		m.add(kind, termsafe.String(msg.report))
	}
}

// modelsText lists the provider's models, numbered for /model N, the
// current one marked.
func modelsText(names []string, current string) string {
	var b strings.Builder
	b.WriteString("Models of the provider (/model N or /model NAME switches):\n")
	exact := slices.Contains(names, current)
	for i, n := range names {
		mark, note := "  ", ""
		switch {
		case n == current:
			mark, note = "● ", "  (current)"
		case !exact && ListedAs(n, current):
			// The session names the model by an alias the server
			// lists as its dated snapshot.
			mark, note = "● ", "  (current: "+termsafe.Line(current)+")"
		}
		fmt.Fprintf(&b, "%s%3d  %s%s\n", mark, i+1, termsafe.Line(n), note)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// ListedAs reports whether listed, an id of a provider's model list, is
// the model name names: the same id, or the dated snapshot of an alias
// ("claude-sonnet-4-5-20250929" of "claude-sonnet-4-5", Vertex AI's
// "claude-sonnet-4-5@20250929", "gpt-5-2025-08-07" of "gpt-5").
func ListedAs(listed, name string) bool {
	if listed == name {
		return true
	}
	if name == "" || len(listed) <= len(name)+1 || !strings.HasPrefix(listed, name) {
		return false
	}
	sep, date := listed[len(name)], listed[len(name)+1:]
	if sep != '-' && sep != '@' {
		return false
	}
	switch len(date) {
	case 8: // 20250929
		return strings.Trim(date, "0123456789") == ""
	case 10: // 2025-08-07
		return date[4] == '-' && date[7] == '-' && strings.Trim(date[:4]+date[5:7]+date[8:], "0123456789") == ""
	}
	return false
}

// choicesText lists sessions to resume, numbered, most recent first:
// when, the first task, the provider and model.
func choicesText(cs []ResumeChoice) string {
	var b strings.Builder
	b.WriteString("Sessions of this directory, most recent first:\n")
	for i, c := range cs {
		task := firstLine(c.Task)
		if r := []rune(task); len(r) > 52 {
			task = string(r[:51]) + "…"
		}
		fmt.Fprintf(&b, "%3d  %s  %s/%s\n     %s\n", i+1, c.Updated.Local().Format("Jan _2 15:04"),
			termsafe.Line(c.Provider), termsafe.Line(c.Model), termsafe.Line(task))
	}
	b.WriteString("/resume N continues the Nth, its conversation drawn again.")
	return b.String()
}

// replay draws a resumed session's transcript.
func (m *uiModel) replay(items []model.Item) {
	cards := map[string]*block{}
	for _, it := range items {
		switch it.Kind {
		case model.KindUser:
			if rest, ok := strings.CutPrefix(it.Text, compact.SummaryPrefix); ok {
				m.add(blockNote, fmt.Sprintf("⋯ the earlier conversation, compacted into a summary of %d lines", strings.Count(strings.TrimRight(rest, "\n"), "\n")+1))
				continue
			}
			m.add(blockUser, termsafe.String(foldAttachments(it.Text)))
		case model.KindAssistant:
			if strings.TrimSpace(it.Text) != "" {
				m.add(blockAssistant, termsafe.String(it.Text)).done = true
			}
		case model.KindReasoning:
			if it.Text != "" {
				m.add(blockReasoning, termsafe.String(it.Text)).done = true
			}
		case model.KindToolCall:
			if it.Call == nil {
				continue
			}
			name := termsafe.Line(it.Call.Name)
			b := &block{kind: blockTool, tool: &card{id: it.Call.ID, name: name, summary: name + " · " + termsafe.Line(replaySummary(it.Call.Input))}}
			m.blocks = append(m.blocks, b)
			cards[it.Call.ID] = b
		case model.KindToolResult:
			if it.Result == nil {
				continue
			}
			if b := cards[it.Result.CallID]; b != nil {
				b.tool.done, b.tool.failed, b.tool.result = true, it.Result.IsError, termsafe.String(it.Result.Text)
			}
		}
	}
	for _, b := range cards {
		b.tool.done = true
	}
}

// AttachedFile is a file attached to a task as the task carries it to the
// model, after the task's own words: the session appends it, and a
// resumed conversation's drawing folds it back to the file's name
// (foldAttachments).
func AttachedFile(path string, data []byte) string {
	s := fmt.Sprintf("\n\n<attached_file path=%q>\n%s", path, data)
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	return s + "</attached_file>"
}

// attachedFile matches what AttachedFile makes.
var attachedFile = lazyre.Regexp{Expr: `(?s)\n*<attached_file path="((?:[^"\\]|\\.)*)">\n.*?</attached_file>`}

// foldAttachments replaces each file attached to a task by its name, as
// the task was shown when it was sent.
func foldAttachments(task string) string {
	return attachedFile.Get().ReplaceAllStringFunc(task, func(a string) string {
		p := attachedFile.Get().FindStringSubmatch(a)[1]
		if u, err := strconv.Unquote(`"` + p + `"`); err == nil {
			p = u
		}
		return "\n(attached " + p + ")"
	})
}

// replaySummary is what a resumed call did, from its input alone (the
// surface's decoding is not at hand): a command, else a path with what
// was done to it, else the input's first line.
func replaySummary(input string) string {
	var in map[string]any
	if json.Unmarshal([]byte(input), &in) != nil {
		return firstLine(input)
	}
	str := func(k string) string {
		switch v := in[k].(type) {
		case string:
			return v
		case []any: // an argv (Codex's shell)
			var parts []string
			for _, a := range v {
				if s, ok := a.(string); ok {
					parts = append(parts, s)
				}
			}
			return strings.Join(parts, " ")
		}
		return ""
	}
	p := str("path")
	if p == "" {
		p = str("file_path")
	}
	switch c := str("command"); {
	case p != "" && c != "":
		return c + " " + p // the text editor's command and its file
	case c != "":
		return "$ " + firstLine(c)
	case str("cmd") != "":
		return "$ " + firstLine(str("cmd"))
	case p != "":
		return p
	case str("input") != "":
		return firstLine(str("input")) // a freeform patch
	}
	return firstLine(input)
}

// costText is /cost's report.
func costText(s Status) string {
	u := s.Usage
	var b strings.Builder
	fmt.Fprintf(&b, "Input %s tokens (%s read from cache, %s written to it) · output %s", tokens(u.Input()), tokens(u.CacheReadTokens), tokens(u.CacheWriteTokens), tokens(u.OutputTokens))
	if u.ReasoningTokens > 0 {
		fmt.Fprintf(&b, " (%s reasoning)", tokens(u.ReasoningTokens))
	}
	fmt.Fprintf(&b, "\nCost $%.4f", u.CostUSD)
	if s.ContextWindow > 0 {
		fmt.Fprintf(&b, " · context %s of %s tokens (%s)", tokens(s.ContextTokens), tokens(s.ContextWindow), percent(s.ContextTokens, s.ContextWindow))
	}
	return b.String()
}
