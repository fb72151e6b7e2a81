package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/trussdev/truss/internal/tool"
)

// fakeEditor stands for the file executors: it records the calls it ran
// and previews each as "diff N of ID", N its version, which a test bumps
// to stand for a file changed by someone else; previewErr makes every
// preview fail.
type fakeEditor struct {
	mu         sync.Mutex
	ran        []string
	previews   int
	version    int
	previewErr error
}

func (f *fakeEditor) Execute(_ context.Context, c tool.Call) tool.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, c.ID)
	return tool.Result{CallID: c.ID, Op: c.Op, Output: "edited"}
}

func (f *fakeEditor) Preview(_ context.Context, c tool.Call) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.previews++
	if f.previewErr != nil {
		return "", f.previewErr
	}
	return fmt.Sprintf("diff %d of %s\n", f.version, c.ID), nil
}

func (f *fakeEditor) bump() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version++
}

func (f *fakeEditor) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ran...)
}

// wrapper stands for a recorder between the gate and the executors: the
// preview is found through it.
type wrapper struct{ e tool.Executor }

func (w wrapper) Execute(ctx context.Context, c tool.Call) tool.Result { return w.e.Execute(ctx, c) }
func (w wrapper) Unwrap() tool.Executor                                { return w.e }

// editCalls are one call of every operation that changes files, as the
// surfaces decode them, with the paths and a word of the summary the
// question shows.
var editCalls = []struct {
	call    tool.Call
	paths   []string
	summary string
}{
	{tool.Call{ID: "create", Tool: "write_file", Surface: "generic", Op: tool.OpCreate, Args: &tool.CreateArgs{Path: "n.go", Content: "package n\n"}}, []string{"n.go"}, "create n.go (10 bytes)"},
	{tool.Call{ID: "write", Tool: "str_replace_based_edit_tool", Surface: "anthropic", Op: tool.OpWrite, Args: &tool.CreateArgs{Path: "a.go", Content: "x"}}, []string{"a.go"}, "write a.go (1 byte)"},
	{tool.Call{ID: "replace", Tool: "edit_file", Surface: "generic", Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "a.go", Old: "1", New: "2"}}, []string{"a.go"}, "replace text in a.go"},
	{tool.Call{ID: "insert", Tool: "str_replace_based_edit_tool", Surface: "anthropic", Op: tool.OpInsert, Args: &tool.InsertArgs{Path: "a.go", Line: 3, Text: "x\ny"}}, []string{"a.go"}, "insert 2 lines after line 3 of a.go"},
	{tool.Call{ID: "delete", Tool: "delete_file", Surface: "generic", Op: tool.OpDelete, Args: &tool.DeleteArgs{Path: "d", Recursive: true}}, []string{"d"}, "delete d and everything in it"},
	{tool.Call{ID: "rename", Tool: "rename_file", Surface: "generic", Op: tool.OpRename, Args: &tool.RenameArgs{From: "a.go", To: "b.go"}}, []string{"a.go", "b.go"}, "rename a.go to b.go"},
	{tool.Call{ID: "undo", Tool: "str_replace_editor", Surface: "anthropic", Op: tool.OpUndo, Args: &tool.UndoArgs{Path: "a.go"}}, []string{"a.go"}, "undo the last edit of a.go"},
	{tool.Call{ID: "patch", Tool: "apply_patch", Surface: "codex", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: "*** Begin Patch\n*** Update File: a.go\n*** Move to: c.go\n@@\n-1\n+2\n*** Add File: n.go\n+x\n*** End Patch"}}, []string{"a.go", "c.go", "n.go"}, "apply a patch to a.go, c.go, n.go"},
	{tool.Call{ID: "patch_op", Tool: "apply_patch", Surface: "openai", Op: tool.OpPatchOp, Args: &tool.PatchOpArgs{Type: "update_file", Path: "a.go", Diff: "@@\n-1\n+2\n"}}, []string{"a.go"}, "apply a patch operation: update_file a.go"},
	// A name is shown with every byte of it, escaped where it cannot be
	// shown: the screen clear and the bidi override are visible, not
	// removed or obeyed; Paths keep the name as it is.
	{tool.Call{ID: "escaped", Tool: "edit_file", Surface: "generic", Op: tool.OpReplace, Args: &tool.ReplaceArgs{Path: "new\x1b[2J\u202e.txt", Old: "1", New: "2"}}, []string{"new\x1b[2J\u202e.txt"}, `replace text in new\x1b[2J\u202e.txt`},
	{tool.Call{ID: "escaped_patch", Tool: "apply_patch", Surface: "codex", Op: tool.OpPatch, Args: &tool.PatchArgs{Text: "*** Begin Patch\n*** Add File: a\rb.go\n+x\n*** End Patch"}}, []string{"a\rb.go"}, `apply a patch to a\rb.go`},
	{tool.Call{ID: "escaped_rename", Tool: "rename_file", Surface: "generic", Op: tool.OpRename, Args: &tool.RenameArgs{From: "a.go", To: "b.go "}}, []string{"a.go", "b.go "}, `rename a.go to b.go\x20`},
}

// TestGateEdits: under EditsAsk every edit operation, from every surface,
// is asked about with its paths, its summary and its preview, and made or
// not according to the answer; under EditsAccept none is.
func TestGateEdits(t *testing.T) {
	answers := []struct {
		d        Decision
		made     bool
		decision string
	}{
		{Approve, true, "approved"},
		{ApproveSession, true, "approved_for_session"},
		{Deny, false, "denied"},
		{"maybe", false, "denied"},
	}
	for _, ec := range editCalls {
		for _, ans := range answers {
			for _, p := range []Policy{OnRequest, Untrusted} {
				t.Run(fmt.Sprintf("%s/%s/%s", ec.call.ID, p, ans.d), func(t *testing.T) {
					fx := &fakeEditor{}
					a := &scripted{d: ans.d}
					r := Wrap(wrapper{fx}, p, a, nil, WithEdits(EditsAsk)).Execute(t.Context(), ec.call)
					if len(a.seen) != 1 {
						t.Fatalf("asked %d times", len(a.seen))
					}
					q := a.seen[0]
					wantDiff := "diff 0 of " + ec.call.ID + "\n"
					if q.Kind != KindEdit || q.Policy != p || q.CallID != ec.call.ID || q.Tool != ec.call.Tool || q.Surface != ec.call.Surface ||
						q.Op != ec.call.Op || strings.Join(q.Paths, "|") != strings.Join(ec.paths, "|") || q.Summary != ec.summary ||
						q.Diff != wantDiff || q.Detail != "" || q.PreviewError != "" || q.Command != "" {
						t.Errorf("request %+v", q)
					}
					if got := len(fx.calls()) == 1; got != ans.made {
						t.Errorf("made %v, want %v", got, ans.made)
					}
					ap := r.Approval
					if ap == nil || ap.Kind != "edit" || ap.Decision != ans.decision || ap.By != "user" || ap.Policy != string(p) ||
						strings.Join(ap.Paths, "|") != strings.Join(ec.paths, "|") || ap.Preview != tool.Digest([]byte(wantDiff)) || ap.Command != "" {
						t.Errorf("approval %+v", ap)
					}
					if ans.made {
						if r.Err != nil || r.Output != "edited" || r.CallID != ec.call.ID {
							t.Errorf("result %+v", r)
						}
						return
					}
					if r.Err == nil || r.Err.Kind != tool.ErrNotApproved {
						t.Fatalf("refusal %+v", r.Err)
					}
					if ans.d == Deny && (!strings.Contains(r.Err.Message, "The user declined this edit ("+ec.summary+"), so it was not made.") ||
						!strings.Contains(r.Err.Message, "ask the user how to go on")) {
						t.Errorf("refusal text %q", r.Err.Message)
					}
				})
			}
		}
		t.Run(ec.call.ID+"/accept", func(t *testing.T) {
			fx := &fakeEditor{}
			a := &scripted{d: Deny}
			for _, g := range []*Gate{Wrap(fx, OnRequest, a, nil), Wrap(fx, Untrusted, a, nil, WithEdits(EditsAccept))} {
				if r := g.Execute(t.Context(), ec.call); r.Err != nil || r.Approval != nil {
					t.Errorf("%+v", r)
				}
			}
			if len(a.seen) != 0 || len(fx.calls()) != 2 || fx.previews != 0 {
				t.Errorf("asked %d, made %d, previewed %d", len(a.seen), len(fx.calls()), fx.previews)
			}
		})
	}
}

// TestGateEditsNotAsked: an edit nobody can answer is refused without
// being asked, with a message that says why, under a headless approver
// (unattended) and under the policy never; nothing is previewed or made.
func TestGateEditsNotAsked(t *testing.T) {
	call := editCalls[2].call
	for _, tc := range []struct {
		name   string
		policy Policy
		a      Approver
		by     string
		want   []string
	}{
		{"headless", OnRequest, Headless{}, "unattended", []string{"The edit needed approval", "this run is unattended and nobody can approve anything in it", "it was not made", "Do not make this change another way"}},
		{"nil approver", Untrusted, nil, "unattended", []string{"unattended"}},
		{"never", Never, &scripted{d: Approve}, "policy", []string{`approval policy "never" asks nobody`, "the edit was not made"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := &fakeEditor{}
			r := Wrap(fx, tc.policy, tc.a, nil, WithEdits(EditsAsk)).Execute(t.Context(), call)
			if r.Err == nil || r.Err.Kind != tool.ErrNotApproved {
				t.Fatalf("%+v", r)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.Err.Message, w) {
					t.Errorf("%q lacks %q", r.Err.Message, w)
				}
			}
			if ap := r.Approval; ap == nil || ap.Decision != "denied" || ap.By != tc.by || ap.Kind != "edit" || ap.Waited != 0 {
				t.Errorf("approval %+v", ap)
			}
			if s, ok := tc.a.(*scripted); ok && len(s.seen) != 0 {
				t.Error("asked")
			}
			if len(fx.calls()) != 0 || fx.previews != 0 {
				t.Errorf("made %v, previewed %d", fx.calls(), fx.previews)
			}
		})
	}
}

// TestGateEditsSessionMemory: "always" for an edit covers every later
// edit of the session, of any file, by any operation, in sub-agents too,
// without a preview; it covers no command, and a command's "always"
// covers no edit.
func TestGateEditsSessionMemory(t *testing.T) {
	fx, box := &fakeEditor{}, &fakeShell{name: "sandbox"}
	a := &scripted{d: ApproveSession}
	mux := &tool.Mux{}
	for _, ec := range editCalls {
		mux.Handle(ec.call.Op, fx)
	}
	mux.Handle(tool.OpExec, box)
	g := Wrap(mux, Untrusted, a, box, WithEdits(EditsAsk))
	// A command's "always" does not cover edits.
	if r := g.Execute(t.Context(), execCall("make", false)); r.Err != nil {
		t.Fatal(r.Err)
	}
	if r := g.Execute(t.Context(), editCalls[0].call); r.Err != nil || r.Approval.By != "user" || len(a.seen) != 2 {
		t.Fatalf("first edit: %+v %+v, asked %d", r.Err, r.Approval, len(a.seen))
	}
	a.d = Deny
	previews := fx.previews
	child := g.Child(mux, box)
	for i, ec := range editCalls[1:] {
		gate := g
		if i%2 == 1 {
			gate = child
		}
		r := gate.Execute(t.Context(), ec.call)
		if r.Err != nil || r.Approval == nil || r.Approval.By != "session" || r.Approval.Decision != "approved_for_session" || r.Approval.Preview != "" {
			t.Errorf("%s: %+v %+v", ec.call.ID, r.Err, r.Approval)
		}
	}
	if len(a.seen) != 2 || fx.previews != previews {
		t.Errorf("asked %d times, previewed %d more", len(a.seen), fx.previews-previews)
	}
	if n := len(fx.calls()); n != len(editCalls) {
		t.Errorf("%d edits made, want %d", n, len(editCalls))
	}
	// An edit's "always" does not cover commands.
	if r := g.Execute(t.Context(), execCall("make install", false)); r.Err == nil || len(a.seen) != 3 {
		t.Errorf("a command ran on an edit's answer: %+v", r)
	}
}

// TestGateEditsNoPreview: an edit whose executor cannot preview it, or
// whose preview fails, is asked with its arguments instead of a diff (and
// the preview's error); once approved it runs, so the real execution
// gives the real error.
func TestGateEditsNoPreview(t *testing.T) {
	replace := editCalls[2].call
	for _, tc := range []struct {
		name      string
		exec      tool.Executor
		detail    string
		previewEr string
	}{
		{"no previewer", &fakeShell{name: "editor"}, "-1\n+2\n", ""},
		{"preview fails", &fakeEditor{previewErr: &tool.Error{Kind: tool.ErrNoMatch, Message: "the text to replace was not found in a.go"}}, "-1\n+2\n", "the text to replace was not found in a.go"},
		{"no preview for the op", &fakeEditor{previewErr: tool.ErrNoPreview}, "-1\n+2\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &scripted{d: Approve}
			r := Wrap(tc.exec, OnRequest, a, nil, WithEdits(EditsAsk)).Execute(t.Context(), replace)
			if len(a.seen) != 1 {
				t.Fatalf("asked %d times", len(a.seen))
			}
			q := a.seen[0]
			if q.Diff != "" || q.Detail != tc.detail || q.PreviewError != tc.previewEr || q.Summary != "replace text in a.go" {
				t.Errorf("request %+v", q)
			}
			if r.Err != nil || r.Approval == nil || r.Approval.Preview != "" || r.Approval.PreviewError != tc.previewEr {
				t.Errorf("result %+v %+v", r.Err, r.Approval)
			}
		})
	}
	// The details of each operation, cut at DetailMax.
	for _, c := range []struct {
		args any
		op   tool.Op
		want string
	}{
		{&tool.CreateArgs{Path: "a", Content: "all\nof it"}, tool.OpWrite, "all\nof it"},
		{&tool.InsertArgs{Path: "a", Text: "x\ny"}, tool.OpInsert, "+x\n+y\n"},
		{&tool.ReplaceArgs{Path: "a", Old: "a\nb", New: ""}, tool.OpReplace, "-a\n-b\n+\n"},
		{&tool.DeleteArgs{Path: "a"}, tool.OpDelete, ""},
		{&tool.PatchArgs{Text: "*** Begin Patch"}, tool.OpPatch, "*** Begin Patch"},
		{&tool.PatchOpArgs{Type: "delete_file", Path: "a"}, tool.OpPatchOp, ""},
	} {
		if got := detail(tool.Call{Op: c.op, Args: c.args}); got != c.want {
			t.Errorf("%s: detail %q, want %q", c.op, got, c.want)
		}
	}
	big := strings.Repeat("é", DetailMax)
	if d := detail(tool.Call{Op: tool.OpWrite, Args: &tool.CreateArgs{Content: big}}); len(d) > DetailMax+64 || !strings.Contains(d, "more not shown") || !strings.HasPrefix(big, strings.SplitN(d, "\n…", 2)[0]) {
		t.Errorf("cut detail: %d bytes, ends %q", len(d), d[len(d)-40:])
	}
}

// TestGateEditsStale: when the files change while the person decides, so
// that the preview approved is no longer the change the edit would make,
// the edit is refused as stale and not made.
func TestGateEditsStale(t *testing.T) {
	fx := &fakeEditor{}
	a := ApproverFunc(func(context.Context, Request) (Decision, error) {
		fx.bump() // another agent edits the file while the person reads the diff
		return Approve, nil
	})
	r := Wrap(fx, OnRequest, a, nil, WithEdits(EditsAsk)).Execute(t.Context(), editCalls[2].call)
	if r.Err == nil || r.Err.Kind != tool.ErrStale || !strings.Contains(r.Err.Message, "no longer make the change the user approved") {
		t.Fatalf("%+v", r.Err)
	}
	if r.Approval == nil || r.Approval.Decision != "approved" || !strings.Contains(r.Approval.Reason, "changed while the user decided") {
		t.Errorf("approval %+v", r.Approval)
	}
	if len(fx.calls()) != 0 {
		t.Error("the edit was made")
	}
}

// TestGateEditsCancel: cancelling an edit while its question is open ends
// the wait at once, makes nothing and records the question as unanswered,
// also when the approver ignores its context.
func TestGateEditsCancel(t *testing.T) {
	for _, honours := range []bool{true, false} {
		fx := &fakeEditor{}
		asked := make(chan Request, 1)
		stuck := make(chan struct{})
		defer close(stuck)
		a := ApproverFunc(func(ctx context.Context, r Request) (Decision, error) {
			asked <- r
			if honours {
				<-ctx.Done()
				return "", ctx.Err()
			}
			<-stuck
			return Approve, nil
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan tool.Result)
		go func() { done <- Wrap(fx, OnRequest, a, nil, WithEdits(EditsAsk)).Execute(ctx, editCalls[0].call) }()
		if q := <-asked; q.Kind != KindEdit || q.Diff == "" {
			t.Errorf("question %+v", q)
		}
		cancel()
		r := <-done
		if r.Err == nil || r.Err.Kind != tool.ErrCanceled || !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Err.Message, "the edit was not made") {
			t.Errorf("honours=%v: %+v", honours, r.Err)
		}
		if r.Approval == nil || r.Approval.Decision != "unanswered" || r.Approval.Kind != "edit" {
			t.Errorf("honours=%v: %+v", honours, r.Approval)
		}
		if len(fx.calls()) != 0 {
			t.Errorf("honours=%v: made %v", honours, fx.calls())
		}
	}
}

// TestGateEditsQueue: an edit's question reaches a user interface through
// the Queue with its diff, and the answer given there decides.
func TestGateEditsQueue(t *testing.T) {
	fx := &fakeEditor{}
	q := NewQueue()
	go func() {
		qu := <-q.Questions()
		if qu.Kind == KindEdit && strings.HasPrefix(qu.Diff, "diff 0 of replace") {
			qu.Answer(Deny)
			return
		}
		qu.Answer(Approve)
	}()
	r := Wrap(fx, OnRequest, q, nil, WithEdits(EditsAsk)).Execute(t.Context(), editCalls[2].call)
	if r.Err == nil || r.Approval.Decision != "denied" || len(fx.calls()) != 0 {
		t.Errorf("%+v %+v", r.Err, r.Approval)
	}
}

func TestParseEditPolicy(t *testing.T) {
	for _, p := range EditPolicies {
		if got, err := ParseEditPolicy(string(p)); got != p || err != nil {
			t.Errorf("%s: %v %v", p, got, err)
		}
	}
	if _, err := ParseEditPolicy("always"); err == nil || !strings.Contains(err.Error(), "ask") || !strings.Contains(err.Error(), "accept") {
		t.Errorf("always: %v", err)
	}
}

func TestIsEdit(t *testing.T) {
	for _, ec := range editCalls {
		if !IsEdit(ec.call.Op) {
			t.Errorf("%s is not an edit", ec.call.Op)
		}
	}
	for _, op := range []tool.Op{tool.OpView, tool.OpList, tool.OpExec, tool.OpMemoryCreate, tool.OpMemoryReplace, tool.OpMemoryDelete, tool.OpSpawn, tool.OpMCP, tool.OpValidate} {
		if IsEdit(op) {
			t.Errorf("%s is an edit", op)
		}
	}
}
