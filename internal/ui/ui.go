// Package ui renders a run for a person reading a terminal: streamed
// assistant text, each tool call with a one-line summary, the first lines of
// its result, and a closing line with turns, calls, tokens and cost.
package ui

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/plural"
	"github.com/trussdev/truss/internal/termsafe"
	"github.com/trussdev/truss/internal/tool"
)

// Printer is an agent.Observer that prints a readable transcript.
type Printer struct {
	W io.Writer
	// ResultLines is how many lines of each result are shown (0 = 6).
	ResultLines int

	mu      sync.Mutex
	midLine bool // streamed text left the cursor mid-line
	texted  bool // this turn streamed assistant text
	// live is what was shown of each running call's output (by call
	// id), present once any of it was printed.
	live map[string]*liveOutput
}

// Of a call's output shown as it comes, the first liveHead lines are
// printed as they arrive and, past them, only the last liveTail once the
// call ends, with how many were left out: a command that prints 200,000
// lines shows 70 (the model's result, and the session record, have what
// they always have).
const (
	liveHead = 50
	liveTail = 20
)

// liveOutput is what the transcript showed of one running call's output.
type liveOutput struct {
	rest   string   // the unfinished last line
	shown  int      // complete lines printed
	hidden int      // complete lines past liveHead
	tail   []string // the last liveTail of the hidden lines, oldest first
}

// line takes one complete line of output: printed while under liveHead,
// kept for the tail after.
func (l *liveOutput) line(p *Printer, s string) {
	if l.shown < liveHead {
		l.shown++
		p.printf("  ┊ %s\n", s)
		return
	}
	l.hidden++
	if len(l.tail) == liveTail {
		l.tail = append(l.tail[:0], l.tail[1:]...)
	}
	l.tail = append(l.tail, s)
}

// end prints what was held back of the output: how many lines were left
// out, the last lines, and the unfinished last line.
func (l *liveOutput) end(p *Printer) {
	if l.rest != "" {
		l.line(p, clip(l.rest))
		l.rest = ""
	}
	if n := l.hidden - len(l.tail); n > 0 {
		p.printf("  ┊ … %s not shown …\n", plural.Count(n, "line"))
	}
	for _, s := range l.tail {
		p.printf("  ┊ %s\n", s)
	}
}

// printf writes Truss's own format with every text argument neutralised
// for the terminal: the arguments are model text, file contents, command
// output, tool names and errors, none of which may move the cursor, set the
// title or write the clipboard.
func (p *Printer) printf(format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = termsafe.String(v)
		case error:
			args[i] = termsafe.String(v.Error())
		case fmt.Stringer:
			args[i] = termsafe.String(v.String())
		}
	}
	fmt.Fprintf(p.W, format, args...)
}

func (p *Printer) endLine() {
	if p.midLine {
		p.printf("\n")
		p.midLine = false
	}
}

// Observe implements agent.Observer.
func (p *Printer) Observe(ev agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Type {
	case agent.EventUser:
		for _, it := range ev.Items {
			p.printf("› %s\n", firstLine(it.Text))
		}
	case agent.EventTurnStarted:
		p.texted = false
	case agent.EventDelta:
		if ev.Delta.Kind == model.KindAssistant && ev.Delta.Text != "" {
			if !p.midLine {
				p.printf("\n")
			}
			p.printf("%s", ev.Delta.Text)
			p.midLine = !strings.HasSuffix(ev.Delta.Text, "\n")
			p.texted = true
		}
	case agent.EventResponse:
		if !p.texted {
			if t := ev.Response.Text(); t != "" {
				p.printf("\n%s\n", t)
			}
		}
		p.endLine()
	case agent.EventCallStarted:
		p.endLine()
		p.printf("⏺ %s\n", Summary(ev.Call, ev.Ops))
	case agent.EventCallOutput:
		p.printLive(ev)
	case agent.EventCallCompleted:
		if l, ok := p.live[ev.Call.ID]; ok {
			// The output was shown as it came: its end and how it ended.
			delete(p.live, ev.Call.ID)
			l.end(p)
			p.printf("  ⎿ %s\n", ended(ev.Results))
			return
		}
		p.printResult(ev)
	case agent.EventTurnFailed:
		p.endLine()
		p.printf("✗ %v\n", ev.Err)
	case agent.EventCompacted:
		p.endLine()
		if c := ev.Compaction; c != nil {
			p.printf("⟲ context compacted (%s): %s replaced by a summary, about %d → %s\n", c.Reason, plural.Count(c.Replaced, "item"), c.TokensBefore, plural.Count(c.TokensAfter, "token"))
		}
	case agent.EventCompactFailed:
		p.endLine()
		p.printf("✗ the context could not be compacted: %v\n", ev.Err)
	case agent.EventRunCompleted:
		p.endLine()
		o := ev.Outcome
		mark := "✓"
		if o.Status != agent.StatusCompleted {
			mark = "■"
		}
		p.printf("\n%s %s after %s and %s · %s", mark, o.Status, plural.Count(o.Turns, "turn"), plural.Count(o.Calls, "tool call"), usageText(o.Usage))
		switch {
		case o.Usage.CostUnknown:
			p.printf(" · cost unknown")
		case o.Usage.CostUSD > 0:
			p.printf(" · $%.4f", o.Usage.CostUSD)
		}
		p.printf("\n")
		if o.Reason != "" && o.Status != agent.StatusCompleted && o.Reason != string(o.Status) {
			p.printf("  %s\n", o.Reason)
		}
	}
}

// Child returns an observer that prints a sub-agent's calls and its end,
// one indented line each, marked with the sub-agent's name; it shares the
// printer's lock, so concurrent sub-agents' lines do not interleave.
func (p *Printer) Child(name string) agent.Observer {
	return agent.ObserverFunc(func(ev agent.Event) {
		switch ev.Type {
		case agent.EventCallStarted, agent.EventRunCompleted, agent.EventTurnFailed:
		default:
			return
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		p.endLine()
		switch ev.Type {
		case agent.EventCallStarted:
			p.printf("  ↳ [%s] %s\n", name, Summary(ev.Call, ev.Ops))
		case agent.EventTurnFailed:
			p.printf("  ↳ [%s] ✗ %v\n", name, ev.Err)
		case agent.EventRunCompleted:
			o := ev.Outcome
			p.printf("  ↳ [%s] %s after %s and %s\n", name, o.Status, plural.Count(o.Turns, "turn"), plural.Count(o.Calls, "tool call"))
		}
	})
}

// printLive prints the complete lines of a running call's output as they
// come, each marked ┊, up to liveHead of them (liveOutput); the model
// reads only the result.
func (p *Printer) printLive(ev agent.Event) {
	if ev.Call == nil || ev.Output == nil {
		return
	}
	if p.live == nil {
		p.live = map[string]*liveOutput{}
	}
	l := p.live[ev.Call.ID]
	if l == nil {
		l = &liveOutput{}
		p.live[ev.Call.ID] = l
	}
	p.endLine()
	text := l.rest + ev.Output.Text
	for {
		i := strings.IndexByte(text, '\n')
		if i < 0 {
			break
		}
		l.line(p, clip(text[:i]))
		text = text[i+1:]
	}
	if len(text) > 4096 {
		l.line(p, clip(text))
		text = ""
	}
	l.rest = text
}

// clip cuts a line of output for the transcript; a carriage return
// shows what was written after it (a progress bar's last state).
func clip(l string) string {
	l = strings.TrimRight(l, "\r")
	if i := strings.LastIndexByte(l, '\r'); i >= 0 {
		l = l[i+1:]
	}
	if len(l) > 160 {
		l = l[:160] + "…"
	}
	return l
}

// ended says how a call whose output was shown live ended.
func ended(rs []tool.Result) string {
	for _, r := range rs {
		if r.Err != nil {
			return firstLine(r.Err.Message)
		}
	}
	return "done"
}

func (p *Printer) printResult(ev agent.Event) {
	n := p.ResultLines
	if n == 0 {
		n = 6
	}
	text := strings.TrimRight(ev.Result.Text, "\n")
	lines := strings.Split(text, "\n")
	more := 0
	if len(lines) > n {
		more = len(lines) - n
		lines = lines[:n]
	}
	for i, l := range lines {
		prefix := "  │ "
		if i == 0 {
			prefix = "  ⎿ "
		}
		if len(l) > 160 {
			l = l[:160] + "…"
		}
		p.printf("%s%s\n", prefix, l)
	}
	if more > 0 {
		p.printf("  │ … %s\n", plural.Count(more, "more line"))
	}
}

// Summary is a one-line description of a call: the command of a shell call,
// the path of a file operation (shown by termsafe.Name, every byte of it),
// else the tool name and its arguments.
func Summary(c *model.ToolCall, ops []tool.Call) string {
	if len(ops) > 0 {
		var parts []string
		for _, op := range ops {
			switch a := op.Args.(type) {
			case *tool.ExecArgs:
				parts = append(parts, "$ "+firstLine(a.Command))
			case *tool.SpawnArgs:
				who := ""
				if a.Agent != "" {
					who = "[" + a.Agent + "] "
				}
				parts = append(parts, who+firstLine(a.Task))
			case *tool.MCPArgs:
				parts = append(parts, a.Server+"."+a.Tool+" "+firstLine(string(a.Arguments)))
			case *tool.ViewArgs:
				parts = append(parts, "view "+termsafe.Name(a.Path)+rangeOf(a))
			case *tool.CreateArgs:
				verb := "write "
				if op.Op == tool.OpCreate {
					verb = "create "
				}
				parts = append(parts, verb+termsafe.Name(a.Path))
			case *tool.ReplaceArgs:
				parts = append(parts, "edit "+termsafe.Name(a.Path))
			case *tool.InsertArgs:
				parts = append(parts, fmt.Sprintf("insert into %s after line %d", termsafe.Name(a.Path), a.Line))
			case *tool.ListArgs:
				parts = append(parts, "list "+orDot(termsafe.Name(a.Path)))
			case *tool.PatchOpArgs:
				parts = append(parts, strings.TrimSuffix(a.Type, "_file")+" "+termsafe.Name(a.Path))
			case *tool.PatchArgs:
				parts = append(parts, patchFiles(a.Text))
			default:
				parts = append(parts, string(op.Op))
			}
		}
		return c.Name + " · " + strings.Join(parts, "; ")
	}
	in := c.Input
	var v any
	if json.Unmarshal([]byte(in), &v) == nil {
		b, _ := json.Marshal(v)
		in = string(b)
	}
	if len(in) > 120 {
		in = in[:120] + "…"
	}
	return c.Name + " " + in
}

// patchFiles names the files a patch envelope touches, from its headers
// ("patch: update a.go, add b.go").
func patchFiles(text string) string {
	var files []string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		for _, h := range [][2]string{{"*** Add File: ", "add "}, {"*** Update File: ", "update "}, {"*** Delete File: ", "delete "}, {"*** Move to: ", "move to "}} {
			if p, ok := strings.CutPrefix(l, h[0]); ok {
				files = append(files, h[1]+termsafe.Name(p))
			}
		}
	}
	if len(files) == 0 {
		return "patch"
	}
	return "patch: " + strings.Join(files, ", ")
}

func rangeOf(a *tool.ViewArgs) string {
	if a.Start > 1 || a.End > 0 {
		return fmt.Sprintf(" [%d:%d]", a.Start, a.End)
	}
	return ""
}

func orDot(s string) string {
	if s == "" {
		return "."
	}
	return s
}

func firstLine(s string) string {
	l, rest, _ := strings.Cut(s, "\n")
	if rest != "" {
		l += " …"
	}
	return l
}

// usageText is "N input / M output tokens", N every input token
// (model.Usage.Input), with the cache's parts of it when there are any.
func usageText(u model.Usage) string {
	var cache []string
	if u.CacheReadTokens != 0 {
		cache = append(cache, fmt.Sprintf("%d read from cache", u.CacheReadTokens))
	}
	if u.CacheWriteTokens != 0 {
		cache = append(cache, fmt.Sprintf("%d written to cache", u.CacheWriteTokens))
	}
	in := fmt.Sprintf("%d input", u.Input())
	if len(cache) > 0 {
		in += " (" + strings.Join(cache, ", ") + ")"
	}
	return in + " / " + plural.Count(u.OutputTokens, "output token")
}
