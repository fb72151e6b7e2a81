// Package tool defines Truss's internal representation of a tool call and its
// result, independent of any provider or tool schema.
//
// A surface binding decodes a provider's call item into one or more Calls; an
// Executor runs a Call and returns a Result holding structured facts (file
// content, stdout, stderr, exit code, file changes with digests, an error
// kind). Rendering a Result as the text a particular model was trained to read
// is the binding's job, never the executor's, so one executor serves every
// surface.
package tool

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/plural"
)

// Op names a capability operation. Ops are provider-neutral: the Anthropic
// editor's str_replace and the generic edit_file both become OpReplace.
type Op string

// The operations Truss executes.
const (
	OpView    Op = "file.view"     // read a file (optionally a line range) or list a directory two levels deep
	OpCreate  Op = "file.create"   // create a file that must not exist yet
	OpWrite   Op = "file.write"    // create or overwrite a file
	OpReplace Op = "file.replace"  // replace a unique string in a file
	OpInsert  Op = "file.insert"   // insert text after a line
	OpList    Op = "file.list"     // list a directory
	OpDelete  Op = "file.delete"   // delete a file (or, with Recursive, a directory)
	OpRename  Op = "file.rename"   // rename a file or directory; never overwrites
	OpUndo    Op = "file.undo"     // restore a file's content before its last edit
	OpPatch   Op = "file.patch"    // apply a multi-file patch envelope, all or nothing
	OpPatchOp Op = "file.patch_op" // apply one create/update/delete operation with a diff
	OpExec    Op = "shell.exec"    // run a command in the persistent shell
	OpRestart Op = "shell.restart"
	// OpValidate runs the project's checks (its test command) in a fresh
	// sandboxed shell and summarizes them.
	OpValidate Op = "check.validate"
	// OpSpawn runs a sub-agent on a task and returns its outcome.
	OpSpawn Op = "agent.spawn"
	// OpMCP calls a tool of an MCP server.
	OpMCP Op = "mcp.call"
)

// The memory operations: the file operations on the model's notes across
// sessions, addressed by virtual paths below MemoryRoot ("/memories/a.md").
// Their arguments are the file operations' types (*ViewArgs for
// OpMemoryView, and so on); package tool/memory executes them.
const (
	OpMemoryView    Op = "memory.view"
	OpMemoryCreate  Op = "memory.create"
	OpMemoryReplace Op = "memory.replace"
	OpMemoryInsert  Op = "memory.insert"
	OpMemoryDelete  Op = "memory.delete"
	OpMemoryRename  Op = "memory.rename"
)

// MemoryRoot is the virtual root of the memory store as the model sees it.
const MemoryRoot = "/memories"

// Call is one operation requested by the model, normalized.
type Call struct {
	// ID is the provider's call id; every Call gets exactly one Result with it.
	ID string `json:"id"`
	// Tool is the tool name the model used ("edit_file", "str_replace_based_edit_tool").
	Tool string `json:"tool"`
	// Surface is the surface the call arrived through ("generic", "anthropic", ...).
	Surface string `json:"surface"`
	// Op is the normalized operation; Args holds its typed arguments
	// (*ViewArgs for OpView, and so on).
	Op   Op  `json:"op"`
	Args any `json:"args"`
	// Raw is the input exactly as the model sent it.
	Raw Raw `json:"raw,omitempty"`
}

// Raw is input bytes as a model sent them; it marshals as a JSON string (the
// bytes need not be JSON: a freeform patch is not).
type Raw []byte

// MarshalJSON implements json.Marshaler.
func (r Raw) MarshalJSON() ([]byte, error) { return json.Marshal(string(r)) }

// UnmarshalJSON implements json.Unmarshaler.
func (r *Raw) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*r = Raw(s)
	return nil
}

// ViewArgs are the arguments of OpView. Lines are 1-based and End -1 means
// to the end of the file; Start and End both 0 view the whole file.
type ViewArgs struct {
	Path  string `json:"path"`
	Start int    `json:"start,omitempty"`
	End   int    `json:"end,omitempty"`
}

// CreateArgs are the arguments of OpCreate and OpWrite.
type CreateArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// ReplaceArgs are the arguments of OpReplace. Unless All is set, Old must
// occur exactly once.
type ReplaceArgs struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
	All  bool   `json:"all,omitempty"`
}

// InsertArgs are the arguments of OpInsert: Text goes after line Line (0 = at
// the start of the file).
type InsertArgs struct {
	Path string `json:"path"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

// ListArgs are the arguments of OpList. Depth 0 means the default of 2.
type ListArgs struct {
	Path  string `json:"path"`
	Depth int    `json:"depth,omitempty"`
}

// DeleteArgs are the arguments of OpDelete.
type DeleteArgs struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive,omitempty"`
}

// RenameArgs are the arguments of OpRename.
type RenameArgs struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// UndoArgs are the arguments of OpUndo.
type UndoArgs struct {
	Path string `json:"path"`
}

// PatchArgs are the arguments of OpPatch: the whole envelope, as sent.
type PatchArgs struct {
	Text string `json:"text"`
}

// PatchOpArgs are the arguments of OpPatchOp: one operation
// ("create_file", "update_file", "delete_file") with its diff.
type PatchOpArgs struct {
	Type string `json:"type"`
	Path string `json:"path"`
	Diff string `json:"diff,omitempty"`
}

// ValidateArgs are the arguments of OpValidate: none, the task
// environment says what to run.
type ValidateArgs struct{}

// SpawnArgs are the arguments of OpSpawn: a task for a child agent, which
// may name a user-defined agent, narrow the tools, pick another model of
// the same provider, work in an isolated copy of the workspace, and bound
// its own run. Zero budget fields take the spawner's defaults.
type SpawnArgs struct {
	Task      string   `json:"task"`
	Agent     string   `json:"agent,omitempty"`
	Tools     []string `json:"tools,omitempty"`
	Model     string   `json:"model,omitempty"`
	Isolated  bool     `json:"isolated,omitempty"`
	MaxTurns  int      `json:"max_turns,omitempty"`
	MaxTokens int64    `json:"max_tokens,omitempty"`
	MaxCost   float64  `json:"max_cost_usd,omitempty"`
	MaxWallMS int64    `json:"max_wall_ms,omitempty"`
}

// MCPArgs are the arguments of OpMCP: the server's name as configured, the
// tool's name on that server, and the arguments object as the model sent it.
type MCPArgs struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ExecArgs are the arguments of OpExec. Timeout 0 means the shell's default.
type ExecArgs struct {
	Command   string `json:"command"`
	TimeoutMS int64  `json:"timeout_ms,omitempty"`
	// Dir, when set, is the directory the command runs in (relative to the
	// shell's working directory); the shell's own directory is unchanged.
	Dir string `json:"dir,omitempty"`
	// Escalate is the model's request to run the command with more than
	// the sandbox allows (Codex's sandbox_permissions "require_escalated"),
	// and Justification its reason, for whoever approves it. Only an
	// approval layer acts on it (internal/approval): a shell executor runs
	// the command in its own sandbox whatever Escalate says.
	Escalate      bool   `json:"escalate,omitempty"`
	Justification string `json:"justification,omitempty"`
}

// Result is the structured outcome of one Call.
type Result struct {
	CallID string `json:"call_id"`
	Op     Op     `json:"op"`
	// Output is the operation's primary text: file content for a view, a
	// short confirmation for an edit. Bindings decide how to render it.
	Output string `json:"output,omitempty"`
	// File holds the facts of a file view; Entries those of a listing.
	File    *FileView `json:"file,omitempty"`
	Entries []Entry   `json:"entries,omitempty"`
	// Edit locates a successful replace or insert in the new content.
	Edit *EditSpan `json:"edit,omitempty"`
	// Shell facts.
	Stdout   string `json:"stdout,omitempty"`
	Stderr   string `json:"stderr,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Wall is how long a command ran.
	Wall time.Duration `json:"wall_ns,omitempty"`
	// Truncated reports that the executor kept only head and tail of an output.
	Truncated bool `json:"truncated,omitempty"`
	// Changes lists the files this call changed.
	Changes []FileChange `json:"changes,omitempty"`
	// Agent holds the outcome of a sub-agent's run (OpSpawn).
	Agent *AgentRun `json:"agent,omitempty"`
	// MCP holds what an MCP server returned (OpMCP).
	MCP *MCPResult `json:"mcp,omitempty"`
	// Approval records the approval the call needed, asked for and
	// answered (or refused by policy), when it needed one.
	Approval *Approval `json:"approval,omitempty"`
	// Err is set when the call failed; the other fields may still hold
	// partial facts (the output of a timed-out command).
	Err *Error `json:"error,omitempty"`
}

// AgentRun is the outcome of a sub-agent's run. Its usage is the child's
// whole usage, its own children's included; the parent adds it to its own.
type AgentRun struct {
	// Session is the child's session id; Agent the user-defined agent it
	// ran as, if any.
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"`
	Model   string `json:"model"`
	Depth   int    `json:"depth"`
	// Status is the agent.Status the run ended with; Reason says why.
	Status string      `json:"status"`
	Reason string      `json:"reason,omitempty"`
	Text   string      `json:"text,omitempty"`
	Turns  int         `json:"turns"`
	Calls  int         `json:"calls"`
	Usage  model.Usage `json:"usage"`
	// Worktree is the isolated copy the child worked in, and Diff its
	// changes there against the copy's start (the parent's workspace is
	// unchanged).
	Worktree string `json:"worktree,omitempty"`
	Diff     string `json:"diff,omitempty"`
	// Ledger links the child's ledger, when one was written.
	Ledger *LedgerLink `json:"ledger,omitempty"`
}

// LedgerLink points at a sub-agent's ledger by its last checkpoint.
type LedgerLink struct {
	// Dir is the child ledger's directory, relative to the parent's.
	Dir string `json:"dir"`
	// Size and Root are the tree size and root hash (base64) of the
	// child's last checkpoint; Checkpoint is the hex SHA-256 of that
	// checkpoint's bytes (the signed note).
	Size       int64  `json:"size"`
	Root       string `json:"root"`
	Checkpoint string `json:"checkpoint"`
}

// Approval is the record of a call that needed a person's approval: what
// was asked, under which policy, and what was answered, by whom. The
// approval layer (internal/approval) sets it; recorders keep it with the
// call.
type Approval struct {
	// Policy is the session's approval policy ("never", "on-request",
	// "untrusted").
	Policy string `json:"policy"`
	// Kind is what was asked: "escalation" (run the command with more than
	// the sandbox allows), "command" (run a command that is not known to
	// be read-only, under "untrusted") or "edit" (change files, when the
	// session asks before edits). Command is the command of the first
	// two.
	Kind          string `json:"kind"`
	Command       string `json:"command,omitempty"`
	Dir           string `json:"dir,omitempty"`
	Justification string `json:"justification,omitempty"`
	// Paths are the files an edit changes, as the model named them (kind
	// "edit").
	Paths []string `json:"paths,omitempty"`
	// Preview is the hex SHA-256 of the diff the person was shown before
	// an edit (the preview, a unified diff), when there was one;
	// PreviewError why the preview failed, when it did (the person was
	// shown the call's arguments instead).
	Preview      string `json:"preview_sha256,omitempty"`
	PreviewError string `json:"preview_error,omitempty"`
	// Decision is "approved", "approved_for_session", "denied", or
	// "unanswered" when no answer came (the wait was canceled, the
	// approver failed; Reason says which).
	Decision string `json:"decision"`
	// By says who decided: "user" (the approver answered), "session" (an
	// earlier answer of approved_for_session covered it), "policy" (the
	// policy refuses without asking) or "unattended" (no person is there
	// to ask: headless runs).
	By string `json:"by"`
	// Reason is why the call was refused without an answer (the approver
	// failed, the wait was canceled), if it was.
	Reason string `json:"reason,omitempty"`
	// Waited is how long the answer took.
	Waited time.Duration `json:"waited_ns,omitempty"`
	// Escalated reports that the command ran with the wider sandbox.
	Escalated bool `json:"escalated,omitempty"`
}

// MCPResult is what an MCP server answered to a tool call.
type MCPResult struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Content is the result's content list as the server sent it.
	Content json.RawMessage `json:"content,omitempty"`
	// Structured is the result's structuredContent, if any.
	Structured json.RawMessage `json:"structured_content,omitempty"`
}

// IsError reports whether the result is an error result.
func (r *Result) IsError() bool { return r.Err != nil }

// FileView is what a file view read.
type FileView struct {
	Path      string `json:"path"`       // as the model named it
	Content   string `json:"content"`    // the selected lines, byte for byte
	StartLine int    `json:"start_line"` // 1-based number of the first line of Content
	// TotalLines counts the file split on '\n', as editors number it: a
	// final newline is followed by one more, empty, line.
	TotalLines int `json:"total_lines"`
	// FinalNewline reports that the file ends with '\n'.
	FinalNewline bool `json:"final_newline,omitempty"`
	// Binary is set when the file is not text; Content is then empty, no
	// lines are counted and a line range is ignored. Each binding says so
	// in its own words instead of showing the bytes.
	Binary *Binary `json:"binary,omitempty"`
	// Note, when set, says that the view read only the first bytes of a
	// file past the file tools' bound (fs.Options.MaxFileBytes): Content
	// and TotalLines are of those bytes' whole lines, and the note says
	// how to read the rest. Each binding shows it after the lines.
	Note string `json:"note,omitempty"`
}

// Binary describes a file that is not text: a NUL byte or invalid UTF-8 in
// its first BinarySniffLen bytes, the test git and ripgrep make.
type Binary struct {
	Size int64 `json:"size"`
	// MediaType is the type net/http.DetectContentType sees in the file's
	// first bytes ("image/png", "application/octet-stream"), without a
	// charset parameter.
	MediaType string `json:"media_type"`
	// Reason is BinaryNUL or BinaryInvalidUTF8.
	Reason string `json:"reason"`
}

// The reasons a file is binary.
const (
	BinaryNUL         = "nul_byte"     // it contains a NUL byte
	BinaryInvalidUTF8 = "invalid_utf8" // it is not valid UTF-8
)

// BinarySniffLen is how much of a file is examined to tell text from
// binary.
const BinarySniffLen = 8 << 10

// Describe says what a binary file is in one phrase: "4096 bytes,
// application/octet-stream, with NUL bytes".
func (b *Binary) Describe() string {
	why := "with NUL bytes"
	if b.Reason == BinaryInvalidUTF8 {
		why = "not valid UTF-8"
	}
	unit := "bytes"
	if b.Size == 1 {
		unit = "byte"
	}
	return fmt.Sprintf("%d %s, %s, %s", b.Size, unit, b.MediaType, why)
}

// Entry is one entry of a directory listing, with Path relative to the
// listed directory and '/' separated.
type Entry struct {
	Path  string `json:"path"`
	IsDir bool   `json:"is_dir,omitempty"`
	Size  int64  `json:"size"`
}

// EditSpan locates an edit in the new content: Line is the 0-based index of
// the first changed line and NewLines how many lines the new text spans.
// Window holds the new content's lines from WindowStart (0-based) through
// SnippetContext lines past the edit, without the file's final newline, so
// that bindings can show a snippet without the whole file.
type EditSpan struct {
	Line        int    `json:"line"`
	NewLines    int    `json:"new_lines"`
	WindowStart int    `json:"window_start"`
	Window      string `json:"window"`
	// EOF reports that the window runs to the end of the file, so that its
	// last line is the piece after the file's last newline (empty when the
	// file ends with one).
	EOF bool `json:"eof,omitempty"`
}

// SnippetContext is how many lines of context an EditSpan's window holds on
// each side of the edit.
const SnippetContext = 4

// ChangeKind says what happened to a file.
type ChangeKind string

// The kinds of file change.
const (
	ChangeAdd    ChangeKind = "add"
	ChangeUpdate ChangeKind = "update"
	ChangeDelete ChangeKind = "delete"
)

// FileChange records one file's change with the SHA-256 of its content before
// and after (empty when the file did not exist).
type FileChange struct {
	Path   string     `json:"path"` // relative to the workspace root, '/' separated
	Kind   ChangeKind `json:"kind"`
	Before string     `json:"before,omitempty"`
	After  string     `json:"after,omitempty"`
	// MovedTo is set when the file was renamed: Path is where it was,
	// MovedTo where it is now, Before and After its content at each.
	MovedTo string `json:"moved_to,omitempty"`
	// BeforeData and AfterData are the contents Before and After digest,
	// as the executor read and wrote them: set whenever the digest is (an
	// executor that changes a file it cannot read, such as a symlink,
	// leaves both empty). They travel with the result so that a recorder
	// stores exactly the bytes the call saw, never re-reading a path that
	// another call may have changed since. They are not serialized, and,
	// like the rest of a result, not modified once returned.
	BeforeData []byte `json:"-"`
	AfterData  []byte `json:"-"`
	// LinkBefore and LinkAfter are the targets of a symbolic link at Path
	// before and at Path (or MovedTo) after, when there was one and the
	// change's finder read it (a symlink is never followed: a link's
	// change has no digests).
	LinkBefore string `json:"link_before,omitempty"`
	LinkAfter  string `json:"link_after,omitempty"`
	// Type, Mode and Size describe the file as a change found after a
	// command saw it last (after the change, or before a deletion); a
	// file tool's change has Size only where it recorded a file by digest
	// and size (BeforeUnavailable says so): Type
	// is "fifo", "socket" or "device" for a file that is none of a
	// regular file, a directory or a symlink (never opened, so without
	// digests), "unlistable" for a directory whose listing was refused,
	// "too_large" for a directory too large to track (its entries, names
	// and link targets past the tracker's bound), else empty; Mode its permission bits in octal ("0644");
	// Size its size in bytes.
	Type string `json:"type,omitempty"`
	Mode string `json:"mode,omitempty"`
	Size int64  `json:"size,omitempty"`
	// BeforeUnavailable and AfterUnavailable say why a side's digest or
	// content is missing where a regular file was ("unreadable: …", "not
	// kept: …", "the kept copy failed its digest check"), so that a
	// missing content is never mistaken for a missing file.
	BeforeUnavailable string `json:"before_unavailable,omitempty"`
	AfterUnavailable  string `json:"after_unavailable,omitempty"`
	// Files, when non-zero, makes this a bulk change: Files files changed
	// beneath the directory Path ("." for a whole root), recorded as one
	// change instead of one each. After is then the SHA-256 of AfterData,
	// a manifest with a line per file (kind, digests before and after,
	// size, quoted path), and Bytes their total size after the change.
	// A large manifest is in AfterFile instead, AfterData nil.
	Files int   `json:"files,omitempty"`
	Bytes int64 `json:"bytes,omitempty"`
	// AfterFile, when set, holds the after content outside memory, in
	// place of AfterData (which is then nil): a bulk change's manifest,
	// which grows with the files the change lists. Its bytes are those
	// After digests. Like AfterData it is not serialized.
	AfterFile Content `json:"-"`
}

// Content is a content kept outside memory. It never changes: every
// reader it opens reads the same Size bytes, and it stays readable for as
// long as it is referenced.
type Content interface {
	// Open returns a reader of the content from its first byte; each
	// call returns a reader of its own.
	Open() (io.ReadCloser, error)
	// Size is the content's length in bytes.
	Size() int64
}

// Note describes a change that is not one file's text, for a person
// reading a list of changes in place of a diff: a bulk change (Files
// files beneath a directory: its AfterData is the tracker's manifest, a
// line per file with its digests, not the directory's contents), a
// symbolic link (its targets), a FIFO, socket or device, a directory the
// tracker could not list or track. It is "" for a change of one file's
// contents, which a diff shows. Link targets are as recorded: a caller
// that prints to a terminal neutralises the note.
func (c FileChange) Note() string {
	switch {
	case c.Files > 0:
		return fmt.Sprintf("%s changed beneath it, %s after", plural.Count(c.Files, "file"), plural.Count(c.Bytes, "byte"))
	case c.LinkBefore != "" && c.LinkAfter != "" && c.Kind != ChangeDelete:
		return "a link, from " + c.LinkBefore + " to " + c.LinkAfter
	case c.LinkAfter != "" && c.Kind != ChangeDelete:
		return "a link to " + c.LinkAfter
	case c.LinkBefore != "":
		return "a link to " + c.LinkBefore
	}
	switch c.Type {
	case "fifo":
		return "a FIFO"
	case "socket", "device":
		return "a " + c.Type
	case "unlistable":
		return "a directory whose listing was refused"
	case "too_large":
		return "a directory too large to track"
	}
	return ""
}

// OpenAfter returns a reader of the change's after content, from
// AfterFile or AfterData (nil AfterData: no bytes).
func (c FileChange) OpenAfter() (io.ReadCloser, error) {
	if c.AfterFile != nil {
		return c.AfterFile.Open()
	}
	return io.NopCloser(bytes.NewReader(c.AfterData)), nil
}

// AfterSize is the length of the change's after content as held:
// AfterFile's size, else AfterData's.
func (c FileChange) AfterSize() int64 {
	if c.AfterFile != nil {
		return c.AfterFile.Size()
	}
	return int64(len(c.AfterData))
}

// Digest returns the hex SHA-256 of b, the form FileChange uses.
func Digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// ErrorKind classifies a failed call so that bindings can render the message
// their model expects and callers can branch on it.
type ErrorKind string

// The error kinds.
const (
	ErrInvalidInput    ErrorKind = "invalid_input"     // malformed or missing arguments
	ErrUnknownTool     ErrorKind = "unknown_tool"      // the model named a tool that was not offered
	ErrOutsideRoot     ErrorKind = "outside_workspace" // the path leads outside every allowed root
	ErrReadOnly        ErrorKind = "read_only"         // the path is in a read-only root, or the sandbox is read-only
	ErrNotFound        ErrorKind = "not_found"
	ErrExists          ErrorKind = "exists"
	ErrIsDir           ErrorKind = "is_directory"
	ErrNotDir          ErrorKind = "not_directory"
	ErrNoMatch         ErrorKind = "no_match"         // replace: old text not found
	ErrMultipleMatches ErrorKind = "multiple_matches" // replace: old text not unique
	ErrInvalidRange    ErrorKind = "invalid_range"    // a line range or line number out of bounds
	ErrTimeout         ErrorKind = "timeout"
	ErrExit            ErrorKind = "exit_status" // the command ran and exited non-zero
	ErrShell           ErrorKind = "shell"       // the shell session failed
	ErrIO              ErrorKind = "io"
	// ErrStale: an edit of a file that changed since the agent last viewed
	// or wrote it (another agent or a command changed it); the agent views
	// it again before editing.
	ErrStale       ErrorKind = "stale"
	ErrCanceled    ErrorKind = "canceled"
	ErrUnsupported ErrorKind = "unsupported"
	// ErrAgent: a sub-agent's run did not complete (budget, failure, loop).
	ErrAgent ErrorKind = "agent"
	// ErrTool: an external tool (an MCP server's) reported a failure.
	ErrTool ErrorKind = "tool_error"
	// ErrUnavailable: the server behind a tool is not running.
	ErrUnavailable ErrorKind = "unavailable"
	// ErrInternal: the tool failed inside Truss (a panic in its binding or
	// executor, recovered by the agent loop).
	ErrInternal ErrorKind = "internal"
	// ErrNotApproved: the call needed approval and was not approved (the
	// user declined, or nobody can be asked); Result.Approval says more.
	ErrNotApproved ErrorKind = "not_approved"
)

// Error is a typed call failure. Message is a complete sentence for a model or
// a user; Lines carries the match lines of ErrMultipleMatches; Limit the
// bound of ErrInvalidRange.
type Error struct {
	Kind    ErrorKind `json:"kind"`
	Message string    `json:"message"`
	Path    string    `json:"path,omitempty"`
	Lines   []int     `json:"lines,omitempty"`
	// Containing lists the lines that contain a non-unique replace text
	// (for a multi-line text usually none).
	Containing []int `json:"containing,omitempty"`
	Limit      int   `json:"limit,omitempty"`
	// Reason refines the kind: for ErrInvalidRange "start", "end_past",
	// "end_before" or "past_bound" (a range past what a view of a file
	// past the file tools' bound reads; the message says so); for ErrInvalidInput "range_on_directory" or
	// "too_large" (a file past the file tools' bound; Limit the bound);
	// for ErrNotFound "history_dropped" (an undo past what the bounded
	// undo history kept); for ErrReadOnly "sandbox" (a file change
	// refused because the session's sandbox is read-only, not because
	// of the path).
	Reason string `json:"reason,omitempty"`
	Err    error  `json:"-"`
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error of the given kind.
func Errorf(kind ErrorKind, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Message: err.Error(), Err: errors.Unwrap(err)}
}

// KindOf returns the ErrorKind of err, or "" when err is not an *Error.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// Failed returns a Result for call carrying err; a plain error becomes ErrIO.
func Failed(call Call, err error) Result {
	var e *Error
	if !errors.As(err, &e) {
		e = &Error{Kind: ErrIO, Message: err.Error(), Err: err}
	}
	return Result{CallID: call.ID, Op: call.Op, Err: e}
}

// Executor runs calls. Execute must return exactly one Result for the call,
// with CallID set, and must honour ctx. Implementations are safe for
// concurrent use unless they document otherwise.
type Executor interface {
	Execute(ctx context.Context, call Call) Result
}

// ExecutorFunc adapts a function to Executor.
type ExecutorFunc func(ctx context.Context, call Call) Result

// Execute calls f.
func (f ExecutorFunc) Execute(ctx context.Context, call Call) Result { return f(ctx, call) }

// Mux routes calls to executors by operation, like http.ServeMux routes by
// path. The zero value has no routes; a call with an unrouted op gets an
// ErrUnsupported result.
type Mux struct {
	routes map[Op]Executor
}

// Handle routes op to e, replacing any earlier route.
func (m *Mux) Handle(op Op, e Executor) {
	if m.routes == nil {
		m.routes = make(map[Op]Executor)
	}
	m.routes[op] = e
}

// HandleAll routes each of ops to e (an executor's whole list, such as
// fs.Ops).
func (m *Mux) HandleAll(ops []Op, e Executor) {
	for _, op := range ops {
		m.Handle(op, e)
	}
}

// Handles reports whether op has a route.
func (m *Mux) Handles(op Op) bool { _, ok := m.routes[op]; return ok }

// Execute runs call with the executor routed for its op.
func (m *Mux) Execute(ctx context.Context, call Call) Result {
	e, ok := m.routes[call.Op]
	if !ok {
		return Failed(call, Errorf(ErrUnsupported, "operation %s is not available in this session", call.Op))
	}
	if err := ctx.Err(); err != nil {
		return Failed(call, &Error{Kind: ErrCanceled, Message: "the call was canceled before it ran", Err: err})
	}
	r := e.Execute(ctx, call)
	r.CallID, r.Op = call.ID, call.Op
	return r
}

// Preview implements Previewer: the preview of the executor routed for
// the call (looked up through its Wrappers); ErrNoPreview when the call
// has no route or its executor cannot preview.
func (m *Mux) Preview(ctx context.Context, call Call) (string, error) {
	e, ok := m.routes[call.Op]
	if !ok {
		return "", ErrNoPreview
	}
	return Preview(ctx, e, call)
}

// Concurrent reports whether the call may run at the same time as other
// concurrent calls of a turn (the executor reads only, or runs a whole
// agent of its own); Mutates reports whether it may change files. Mux
// forwards both to the executor routed for the call.
func (m *Mux) Concurrent(call Call) bool {
	e, ok := m.routes[call.Op]
	return ok && IsConcurrent(e, call)
}

// Mutates implements MutatingExecutor: an unrouted call changes nothing.
func (m *Mux) Mutates(call Call) bool {
	e, ok := m.routes[call.Op]
	return ok && Mutates(e, call)
}

// ConcurrentExecutor is an Executor that tells which calls may run at the
// same time as the other concurrent calls of a turn: calls that only read,
// and calls that run a whole agent of their own. The agent loop runs the
// calls of a turn at once when every one of them is concurrent, else in
// order. An executor without the method runs every call alone.
type ConcurrentExecutor interface {
	Executor
	Concurrent(Call) bool
}

// MutatingExecutor is an Executor that tells which calls may change files.
// An executor without the method may change files with any call; false is
// a promise that the call changes nothing (a view, a listing, an MCP tool
// annotated read-only).
type MutatingExecutor interface {
	Executor
	Mutates(Call) bool
}

// Wrapper is an Executor that wraps another, such as a recorder: the
// optional capabilities of the executor it wraps are looked up through it
// when it has none of its own.
type Wrapper interface {
	Executor
	Unwrap() Executor
}

// IsConcurrent reports whether e says call may run concurrently with other
// calls (ConcurrentExecutor, looked up through Wrappers); false when it
// does not say.
func IsConcurrent(e Executor, call Call) bool {
	for e != nil {
		if c, ok := e.(ConcurrentExecutor); ok {
			return c.Concurrent(call)
		}
		w, ok := e.(Wrapper)
		if !ok {
			break
		}
		e = w.Unwrap()
	}
	return false
}

// Mutates reports whether call may change files on e (MutatingExecutor,
// looked up through Wrappers); true when e does not say.
func Mutates(e Executor, call Call) bool {
	for e != nil {
		if m, ok := e.(MutatingExecutor); ok {
			return m.Mutates(call)
		}
		w, ok := e.(Wrapper)
		if !ok {
			break
		}
		e = w.Unwrap()
	}
	return true
}

// Previewer is an Executor that can say, before running a call that
// changes files, what the call would change: Preview returns a unified
// diff of the change ("--- a/PATH", "+++ b/PATH" and hunks per file,
// "/dev/null" for a file that is created or deleted), computed from the
// files as they are now and exactly as the call would change them if it
// ran now, so that the diff of the result's changes is the preview when
// nothing changed in between. Preview writes nothing and takes no lock
// for longer than it reads; it reads the files with the executor's own
// safety (no link leading outside a root followed, no FIFO or device
// opened, reads capped). It fails with the error the call itself would
// fail with (a *Error: the text to replace is not found, the path is
// read-only), or ErrNoPreview when it cannot preview this call.
// Approval gates use it to show a person an edit before it is made.
type Previewer interface {
	Executor
	Preview(ctx context.Context, call Call) (string, error)
}

// ErrNoPreview is the error of a preview that no executor can compute
// for the call (its executor is not a Previewer, or does not preview
// this operation).
var ErrNoPreview = errors.New("this operation has no preview")

// Preview returns the preview of call on e (Previewer, looked up through
// Wrappers), or ErrNoPreview when e does not offer one.
func Preview(ctx context.Context, e Executor, call Call) (string, error) {
	for e != nil {
		if p, ok := e.(Previewer); ok {
			return p.Preview(ctx, call)
		}
		w, ok := e.(Wrapper)
		if !ok {
			break
		}
		e = w.Unwrap()
	}
	return "", ErrNoPreview
}
