package ledger

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/tool"
)

// Start is what session.start records.
type Start struct {
	Truss     string            `json:"truss"`
	Provider  string            `json:"provider"`
	Model     string            `json:"model"`
	Surface   string            `json:"surface"`
	Tools     []ToolDecl        `json:"tools"`
	Sandbox   string            `json:"sandbox"` // the mode actually enforced
	Workspace string            `json:"workspace"`
	Repo      *RepoState        `json:"repo,omitempty"`
	Config    map[string]string `json:"config,omitempty"`
	Parent    *Link             `json:"parent,omitempty"`
	// Previous is a resumed run's: the ledger of the session's run
	// before it, by its last checkpoint when this run began; nil for a
	// session's first run (runs.go).
	Previous *Previous `json:"previous,omitempty"`
	// Environment is where the session's commands ran when not on the
	// host: the task environment's facts (container.Facts: the image
	// reference, its ID and repository digests, the engine and its
	// version, the mounts and limits); nil for the host.
	Environment any `json:"environment,omitempty"`
}

// ToolDecl is one declared tool: its name and the tool type that presented it.
type ToolDecl struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	Type string `json:"type,omitempty"`
}

// RepoState is the repository the session started on.
type RepoState struct {
	Head  string `json:"head"`
	Dirty bool   `json:"dirty"`
}

// Link names a sub-agent's parent: its session and the spawn call that
// started the sub-agent.
type Link struct {
	Session string `json:"session"`
	CallID  string `json:"call_id"`
}

// Recorder writes a session's events to a ledger. It is an agent.Observer.
// Observe only queues the event: encoding, hashing and writing happen on
// the recorder's own goroutine, in the loop's order, so the ledger's order
// is deterministic (even when read-only calls run in parallel) and the loop
// never waits for the ledger. The loop does not change an event's data after
// reporting it. Close waits for the queue to drain.
type Recorder struct {
	W   *Writer
	mu  sync.Mutex
	err error
	// final is each changed file's last digest (zero when deleted),
	// spilled to disk past its budget.
	final *finalFiles
	// ended: the entries written so far end with session.end, followed
	// by nothing but the entries written after a run ends (validation):
	// the run has ended (CheckEnded).
	ended bool

	// Settle, when set (before the first Observe), is called once, just
	// before session.end is written: the changes it returns — a last
	// scan of the workspace for what commands left running changed after
	// the last call — are written as a workspace.changes entry, with
	// their contents, and count in session.end's files.
	Settle func() ([]tool.FileChange, error)

	qmu    sync.Mutex
	cond   *sync.Cond
	queue  []agent.Event
	due    bool        // the queue is to be written now
	timer  *time.Timer // makes the queue due after Defer
	busy   bool        // a batch is being written
	closed bool
	done   chan struct{}
}

// Defer is how long the recorder lets events wait before it writes them:
// the loop's own work between a model response and its next request is
// usually shorter, so the ledger's work falls in the model's time rather
// than in the loop's, and a slow tool call's events are on disk while it
// runs. The end or failure of a run is written at once, and Validation
// and Close write everything queued.
const Defer = 2 * time.Millisecond

// NewRecorder returns a recorder writing to w, after a session.start entry.
func NewRecorder(w *Writer, start Start) (*Recorder, error) {
	r := &Recorder{W: w, final: newFinalFiles(w.Dir()), done: make(chan struct{})}
	r.cond = sync.NewCond(&r.qmu)
	r.timer = time.AfterFunc(time.Hour, r.wake)
	r.timer.Stop()
	if _, err := w.Append("session.start", start, nil); err != nil {
		return nil, err
	}
	if err := w.Checkpoint(); err != nil {
		return nil, err
	}
	go r.run()
	return r, nil
}

// Observe implements agent.Observer: it queues the event, to be written
// Defer after the first event that waits (at once for a run's end).
func (r *Recorder) Observe(ev agent.Event) {
	switch ev.Type {
	case agent.EventDelta, agent.EventTurnStarted, agent.EventCallStarted, agent.EventCallOutput:
		return // in the response's and the result's records
	}
	now := ev.Type == agent.EventRunCompleted || ev.Type == agent.EventTurnFailed
	r.qmu.Lock()
	r.queue = append(r.queue, ev)
	arm := !now && !r.due && len(r.queue) == 1
	if now {
		r.due = true
	}
	r.qmu.Unlock()
	if now {
		r.cond.Broadcast()
	} else if arm {
		r.timer.Reset(Defer)
	}
}

// wake makes the queue due.
func (r *Recorder) wake() {
	r.qmu.Lock()
	r.due = true
	r.qmu.Unlock()
	r.cond.Broadcast()
}

// Validation records the verdict of the verification boundary, after every
// queued event, as a "validation" entry with the full log as its payload,
// and seals it with a checkpoint.
func (r *Recorder) Validation(verdict any, log []byte) {
	r.drain()
	r.mu.Lock()
	defer r.mu.Unlock()
	p := map[string]string{}
	r.put(p, "log", log)
	_, err := r.W.Append("validation", verdict, p)
	r.fail(err)
	r.fail(r.W.Checkpoint())
}

// Flush waits until the recorder has written every event observed so far
// (a session reads the ledger's root after a run, while the recorder goes
// on for the next).
func (r *Recorder) Flush() { r.drain() }

// drain waits until the recorder has written every queued event.
func (r *Recorder) drain() {
	r.qmu.Lock()
	r.due = true
	r.cond.Broadcast()
	for len(r.queue) > 0 || r.busy {
		r.cond.Wait()
	}
	r.qmu.Unlock()
}

// Close records every queued event and stops the recorder. It returns the
// first recording error.
func (r *Recorder) Close() error {
	r.qmu.Lock()
	r.closed = true
	r.qmu.Unlock()
	r.cond.Broadcast()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	// The spilled final digests are kept until now: every session.end
	// of the run lists them (a conversation's tasks', End's).
	r.final.close()
	return r.err
}

func (r *Recorder) run() {
	defer close(r.done)
	for {
		r.qmu.Lock()
		for (len(r.queue) == 0 || !r.due) && !r.closed {
			r.cond.Wait()
		}
		if len(r.queue) == 0 {
			r.qmu.Unlock()
			return
		}
		batch := r.queue
		r.queue = nil
		r.due = false
		r.busy = true
		r.qmu.Unlock()
		r.timer.Stop()
		for _, ev := range batch {
			r.record(ev)
		}
		r.qmu.Lock()
		r.busy = false
		r.qmu.Unlock()
		r.cond.Broadcast()
	}
}

// Err returns the first recording error.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *Recorder) fail(err error) {
	if err != nil && r.err == nil {
		r.err = err
	}
}

func (r *Recorder) put(payloads map[string]string, name string, b []byte) {
	if len(b) == 0 {
		return
	}
	d, err := r.W.Put(b)
	r.fail(err)
	payloads[name] = d
}

// record writes one event.
func (r *Recorder) record(ev agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Type {
	case agent.EventUser, agent.EventResponse, agent.EventCallCompleted, agent.EventTurnFailed,
		agent.EventCompacted, agent.EventCompactFailed:
		r.ended = false // an entry after which the run has not ended
	}
	switch ev.Type {
	case agent.EventUser:
		for _, it := range ev.Items {
			p := map[string]string{}
			r.put(p, "text", []byte(it.Text))
			_, err := r.W.Append("user", map[string]any{"chars": len(it.Text)}, p)
			r.fail(err)
		}
	case agent.EventResponse:
		r.response(ev)
	case agent.EventCallCompleted:
		r.call(ev)
	case agent.EventTurnFailed:
		_, err := r.W.Append("model.error", map[string]any{"turn": ev.Turn, "error": ev.Err.Error()}, nil)
		r.fail(err)
	case agent.EventTurnCompleted:
		r.fail(r.W.Checkpoint())
	case agent.EventCompacted:
		r.compacted(ev)
		r.fail(r.W.Checkpoint())
	case agent.EventCompactFailed:
		data := map[string]any{"turn": ev.Turn, "error": ev.Err.Error()}
		if c := ev.Compaction; c != nil {
			data["reason"], data["tokens_before"] = c.Reason, c.TokensBefore
		}
		_, err := r.W.Append("context.compact_failed", data, nil)
		r.fail(err)
	case agent.EventRunCompleted:
		o := ev.Outcome
		r.end(map[string]any{"status": o.Status, "reason": o.Reason, "turns": o.Turns, "calls": o.Calls, "usage": o.Usage})
	}
}

// end writes a session.end with data, after the last scan's changes
// (Settle), with the files the run changed, and seals it.
func (r *Recorder) end(data map[string]any) {
	if r.Settle != nil {
		r.settle()
	}
	p := map[string]string{}
	r.fail(r.finalFiles(p, data))
	_, err := r.W.Append("session.end", data, p)
	r.fail(err)
	r.fail(r.W.Checkpoint())
	r.ended = true
}

// StatusClosed is the status of the session.end End writes: the session
// was closed with no task running, after entries no task's end followed.
const StatusClosed = "closed"

// End ends the run when it has not ended: after every queued event, when
// the entries so far do not end with session.end (followed by nothing but
// the entries written after a run ends), it writes one with status
// StatusClosed, reason, no turns and no calls, usage (what the session's
// model used in the run: a compaction's turn, say), and the files as a
// task's session.end lists them, after Settle's last scan; and seals it.
// A session closes so after a compaction, a check or a verification of
// its ledger with no task after it, or with no task at all: its run then
// ends as CheckEnded requires. A run that has ended is left as it is. End
// is called before Close.
func (r *Recorder) End(reason string, usage model.Usage) {
	r.drain()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.end(map[string]any{"status": StatusClosed, "reason": reason, "turns": 0, "calls": 0, "usage": usage})
}

// finalFiles names the final_files payload in p and sets session.end's
// data.files (at most InlineFiles files) or data.files_count. A short
// list is built in memory; a longer one is written to a spill file as it
// is merged and stored from there, never whole in memory.
func (r *Recorder) finalFiles(p map[string]string, data map[string]any) error {
	files, small, err := r.final.json()
	if err != nil {
		return err
	}
	if !small {
		f, size, digest, count, err := r.final.spooled()
		if err != nil {
			return err
		}
		if count > InlineFiles {
			// The sealer reads it after this, and closes it (or, when
			// the same list was stored before, the collector does).
			r.W.PutFrom(digest, size, func() (io.ReadCloser, error) {
				return struct {
					io.Reader
					io.Closer
				}{io.NewSectionReader(f, 0, size), f}, nil
			})
			p["final_files"] = digest
			data["files_count"] = count
			return nil
		}
		// Removals left few: the list is read back, to be inlined.
		files = make([]byte, size)
		_, err = f.ReadAt(files, 0)
		f.Close()
		if err != nil {
			return fmt.Errorf("final files: %w", err)
		}
	}
	r.put(p, "final_files", files)
	data["files"] = json.RawMessage(files)
	return nil
}

// compacted writes a context.compact entry: what the compaction replaced
// (the range, the replaced items' bytes under their digest, the ids of the
// responses and calls whose entries the summary stands for), the summary,
// and the summary turn with its wire bytes as a model.response's.
func (r *Recorder) compacted(ev agent.Event) {
	c := ev.Compaction
	p := map[string]string{}
	r.put(p, "replaced", c.Items)
	data := map[string]any{"turn": ev.Turn, "reason": c.Reason, "cut": c.Cut, "pinned": c.Pinned, "replaced": c.Replaced,
		"digest": c.Digest, "responses": c.Responses, "calls": c.Calls, "summary": c.Summary,
		"tokens_before": c.TokensBefore, "tokens_after": c.TokensAfter, "usage": c.Usage, "items": len(ev.Items)}
	if resp := c.Response; resp != nil {
		r.wire(p, resp.Wire)
		data["response"] = map[string]any{"id": resp.ID, "model": resp.Model, "stop_reason": resp.StopReason, "attempts": resp.Attempts}
	}
	_, err := r.W.Append("context.compact", data, p)
	r.fail(err)
}

// wire stores a turn's exchange as a model.response's payloads.
func (r *Recorder) wire(p map[string]string, w *model.Wire) {
	if w == nil {
		return
	}
	if len(w.Parts) > 0 {
		// Each part is stored once, so a turn costs what is new in it.
		for i, part := range w.Parts {
			r.W.PutKnown(w.Digests[i], part)
		}
		manifest, _ := json.Marshal(w.Digests)
		r.put(p, "request_parts", manifest)
	} else {
		r.put(p, "request", w.Request)
	}
	r.put(p, "response", w.Response)
}

func (r *Recorder) response(ev agent.Event) {
	resp := ev.Response
	p := map[string]string{}
	r.wire(p, resp.Wire)
	var items []map[string]any
	for _, it := range resp.Items {
		m := map[string]any{"kind": it.Kind}
		if it.Call != nil {
			m["call_id"], m["name"] = it.Call.ID, it.Call.Name
		}
		items = append(items, m)
	}
	_, err := r.W.Append("model.response", map[string]any{"turn": ev.Turn, "id": resp.ID, "model": resp.Model,
		"stop_reason": resp.StopReason, "usage": resp.Usage, "attempts": resp.Attempts, "items": items}, p)
	r.fail(err)
	for _, it := range resp.Items {
		if it.Kind != model.KindServerTool {
			continue
		}
		sp := map[string]string{}
		r.put(sp, "block", it.Raw)
		_, err := r.W.Append("provider_tool", map[string]any{"turn": ev.Turn, "block": it.Text, "unverified": true}, sp)
		r.fail(err)
	}
}

// MaxArgsDepth is the deepest nesting of a call's decoded arguments that
// tool.call records as they are: deeper ones (the model's to choose, up
// to what would make the entry unreadable, MaxDataDepth) are recorded as
// omitted, and the call's input payload holds them as the model sent them.
const MaxArgsDepth = 1000

// recordedArgs is what tool.call records of a call's arguments.
func recordedArgs(args any) any {
	b, err := json.Marshal(args)
	if err != nil || Depth(b) <= MaxArgsDepth {
		return args
	}
	return map[string]any{"omitted": fmt.Sprintf("the arguments nest %d levels deep, more than the %d recorded here; the call's input payload holds them", Depth(b), MaxArgsDepth)}
}

func (r *Recorder) call(ev agent.Event) {
	c := ev.Call
	p := map[string]string{}
	r.put(p, "input", []byte(c.Input))
	var ops []map[string]any
	surface := ""
	for _, op := range ev.Ops {
		ops = append(ops, map[string]any{"op": op.Op, "args": recordedArgs(op.Args)})
		surface = op.Surface
	}
	_, err := r.W.Append("tool.call", map[string]any{"turn": ev.Turn, "call_id": c.ID, "tool": c.Name, "kind": c.Kind,
		"type": c.Type, "surface": surface, "ops": ops, "decoded": ev.Ops != nil}, p)
	r.fail(err)

	rp := map[string]string{}
	r.put(rp, "output", []byte(ev.FullText))
	if ev.Result.Text != ev.FullText {
		r.put(rp, "model_output", []byte(ev.Result.Text))
	}
	var results []map[string]any
	for i, res := range ev.Results {
		m := map[string]any{"op": res.Op, "timed_out": res.TimedOut, "truncated": res.Truncated}
		if res.ExitCode != nil {
			m["exit_code"] = *res.ExitCode
		}
		if res.Err != nil {
			m["error_kind"] = res.Err.Kind
		}
		if len(res.Changes) > 0 {
			m["changes"] = recordedChanges(res.Changes)
		}
		if a := res.Agent; a != nil {
			ag := map[string]any{"session": a.Session, "model": a.Model, "depth": a.Depth, "status": a.Status,
				"turns": a.Turns, "calls": a.Calls, "usage": a.Usage}
			if a.Agent != "" {
				ag["agent"] = a.Agent
			}
			if a.Reason != "" {
				ag["reason"] = a.Reason
			}
			if a.Worktree != "" {
				ag["isolated"] = true
				r.put(rp, fmt.Sprintf("diff.%d", i), []byte(a.Diff))
			}
			if a.Ledger != nil {
				ag["ledger"] = a.Ledger
			}
			m["agent"] = ag
		}
		if ap := res.Approval; ap != nil {
			m["approval"] = ap
		}
		if mc := res.MCP; mc != nil {
			m["mcp"] = map[string]any{"server": mc.Server, "tool": mc.Tool}
		}
		r.put(rp, fmt.Sprintf("stdout.%d", i), []byte(res.Stdout))
		r.put(rp, fmt.Sprintf("stderr.%d", i), []byte(res.Stderr))
		r.changes(rp, res.Changes)
		results = append(results, m)
	}
	_, err = r.W.Append("tool.result", map[string]any{"turn": ev.Turn, "call_id": c.ID, "is_error": ev.Result.IsError,
		"results": results}, rp)
	r.fail(err)
}

// recordedChanges is changes as a result's entry records them: each name
// (path, moved_to, and the link targets) in its recorded form (EncodeName),
// so that a name that is not UTF-8 keeps its bytes. A list whose names are
// all UTF-8 is returned as it is, and records as it always did.
func recordedChanges(changes []tool.FileChange) []tool.FileChange {
	valid := func(ch *tool.FileChange) bool {
		return utf8.ValidString(ch.Path) && utf8.ValidString(ch.MovedTo) && utf8.ValidString(ch.LinkBefore) && utf8.ValidString(ch.LinkAfter)
	}
	i := slices.IndexFunc(changes, func(ch tool.FileChange) bool { return !valid(&ch) })
	if i < 0 {
		return changes
	}
	out := slices.Clone(changes)
	for k := i; k < len(out); k++ {
		ch := &out[k]
		ch.Path, ch.MovedTo = EncodeName(ch.Path), EncodeName(ch.MovedTo)
		ch.LinkBefore, ch.LinkAfter = EncodeName(ch.LinkBefore), EncodeName(ch.LinkAfter)
	}
	return out
}

// changes stores the contents of changes, names them in payloads, and
// keeps each path's final digest: "" where the file was deleted; none
// where the last change left no regular file (a symlink), which the
// workspace check cannot compare.
func (r *Recorder) changes(payloads map[string]string, changes []tool.FileChange) {
	for _, ch := range changes {
		r.contents(payloads, ch.Before, ch.BeforeData)
		if ch.AfterFile != nil {
			r.contentsFrom(payloads, ch.After, ch.AfterFile)
		} else {
			r.contents(payloads, ch.After, ch.AfterData)
		}
		if ch.Files > 0 {
			// A bulk change: its manifest names each file's change.
			if m, err := ch.OpenAfter(); err != nil {
				r.fail(fmt.Errorf("ledger: the manifest of %s: %w", ch.Path, err))
			} else {
				r.fail(r.bulk(m))
				m.Close()
			}
			continue
		}
		path := EncodeName(ch.Path)
		if ch.MovedTo != "" {
			r.final.set(path, "")
			path = EncodeName(ch.MovedTo)
		}
		switch {
		case ch.Kind == tool.ChangeDelete:
			r.final.set(path, "")
		case ch.After == "" || !r.final.set(path, ch.After):
			r.final.remove(path)
		}
	}
}

// bulk applies a bulk change's manifest (docs/ledger.md, "Bulk changes":
// a line per file, KIND TYPE BEFORE AFTER SIZE "PATH"[ -> "TARGET"]) to
// the final digests, as changes does one change, reading it a line at a
// time. A line it cannot read leaves that path out: the workspace check
// then does not compare it. The error is a manifest that could not be
// read to its end.
func (r *Recorder) bulk(manifest io.Reader) error {
	br := bufio.NewReaderSize(manifest, 64<<10)
	var long []byte // a line longer than the reader's buffer
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		if len(line) > 0 {
			r.bulkLine(line)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("ledger: a bulk change's manifest: %w", err)
		}
	}
}

// bulkLine applies one line of a manifest.
func (r *Recorder) bulkLine(line []byte) {
	f := bytes.SplitN(line, []byte(" "), 6)
	if len(f) < 6 {
		return
	}
	quoted, err := strconv.QuotedPrefix(string(f[5]))
	if err != nil {
		return
	}
	path, err := strconv.Unquote(quoted)
	if err != nil {
		return
	}
	path = EncodeName(path)
	switch {
	case string(f[0]) == string(tool.ChangeDelete):
		r.final.set(path, "")
	case string(f[3]) == "-" || !r.final.set(path, string(f[3])):
		r.final.remove(path)
	}
}

// settle writes the changes of the last scan as a workspace.changes
// entry: data {reason: "session.end", results: [{op: "workspace.scan",
// changes}]} (results as a tool.result's, so one reader serves both),
// with error when the scan failed in part.
func (r *Recorder) settle() {
	found, err := r.Settle()
	if len(found) == 0 && err == nil {
		return
	}
	p := map[string]string{}
	r.changes(p, found)
	res := map[string]any{"op": "workspace.scan"}
	if len(found) > 0 {
		res["changes"] = recordedChanges(found)
	}
	data := map[string]any{"reason": "session.end", "results": []any{res}}
	if err != nil {
		data["error"] = err.Error()
	}
	_, werr := r.W.Append("workspace.changes", data, p)
	r.fail(werr)
}

// contentsFrom stores a content held outside memory (a bulk change's
// manifest) as contents does one in memory, copied into the ledger from
// its reader.
func (r *Recorder) contentsFrom(payloads map[string]string, d string, c tool.Content) {
	if len(d) < 16 || c.Size() == 0 {
		return
	}
	r.W.PutFrom(d, c.Size(), c.Open)
	payloads["content."+d[:16]] = d
}

// contents stores a changed file's content, as the result carries it,
// under its digest d, and names it in the result's payloads. The executor
// computed d from these very bytes (a wrong one would fail verification).
// An empty content is not stored: its digest is that of no bytes.
func (r *Recorder) contents(payloads map[string]string, d string, b []byte) {
	if len(d) < 16 || len(b) == 0 {
		return
	}
	r.W.PutKnown(d, b)
	payloads["content."+d[:16]] = d
}
