package compact

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/model"
)

func user(s string) model.Item { return model.Item{Kind: model.KindUser, Text: s} }
func say(resp, s string) model.Item {
	return model.Item{Kind: model.KindAssistant, Text: s, Response: resp}
}
func call(resp, id string) model.Item {
	return model.Item{Kind: model.KindToolCall, Response: resp, Call: &model.ToolCall{ID: id, Name: "bash", Input: `{"command":"ls"}`}}
}
func result(id, text string) model.Item {
	return model.Item{Kind: model.KindToolResult, Result: &model.ToolResult{CallID: id, Name: "bash", Text: text}}
}

// TestBoundaries: a transcript is cut only between whole turns.
func TestBoundaries(t *testing.T) {
	items := []model.Item{
		user("task"),                                           // 0
		say("r1", "looking"), call("r1", "a"), call("r1", "b"), // 1-3: one response, two parallel calls
		result("a", "A"), result("b", "B"), // 4-5
		{Kind: model.KindReasoning, Response: "r2"}, call("r2", "c"), // 6-7
		result("c", "C"),    // 8
		say("r3", "done"),   // 9
		user("and now?"),    // 10
		call("r4", "d"),     // 11: answered below, after an interleaved user message
		user("interjected"), // 12
		result("d", "D"),    // 13
	}
	want := []int{1, 6, 9, 10, 11, 14}
	if got := Boundaries(items); !slices.Equal(got, want) {
		t.Errorf("Boundaries = %v, want %v", got, want)
	}
	// A call never answered closes every boundary after it.
	if got := Boundaries([]model.Item{user("t"), call("r", "x"), say("r2", "?")}); !slices.Equal(got, []int{1}) {
		t.Errorf("with an open call: %v", got)
	}
}

func TestNeeded(t *testing.T) {
	tests := []struct {
		last      model.Usage
		added     []model.Item
		window    int
		threshold float64
		want      bool
	}{
		{model.Usage{InputTokens: 800}, nil, 1000, 0, false},
		{model.Usage{InputTokens: 851}, nil, 1000, 0, true},
		{model.Usage{InputTokens: 100, CacheReadTokens: 700, CacheWriteTokens: 51}, nil, 1000, 0, true},
		{model.Usage{InputTokens: 800, OutputTokens: 500}, nil, 1000, 0, false}, // output is counted through added
		{model.Usage{InputTokens: 800}, []model.Item{result("a", strings.Repeat("x", 208))}, 1000, 0, true},
		{model.Usage{InputTokens: 700}, nil, 1000, 0.5, true},
		{model.Usage{}, []model.Item{user(strings.Repeat("x", 3400))}, 1000, 0, false},
		{model.Usage{}, []model.Item{user(strings.Repeat("x", 3404))}, 1000, 0, true},
		{model.Usage{InputTokens: 1 << 40}, nil, 0, 0, false}, // unknown window
	}
	for i, tc := range tests {
		if got := Needed(tc.last, tc.added, tc.window, tc.threshold); got != tc.want {
			t.Errorf("case %d: Needed = %v (estimate %d)", i, got, Estimate(tc.last, tc.added))
		}
	}
}

// fakeModel answers summary requests and records them.
type fakeModel struct {
	text string
	err  error
	reqs []*model.Request
}

func (f *fakeModel) Name() string { return "fake" }
func (f *fakeModel) Turn(_ context.Context, req *model.Request, _ func(model.Delta)) (*model.Response, error) {
	f.reqs = append(f.reqs, req)
	if f.err != nil {
		return nil, f.err
	}
	return &model.Response{ID: "sum", Items: []model.Item{say("sum", f.text)}, StopReason: model.StopEndTurn, Usage: model.Usage{InputTokens: 90, OutputTokens: 10}}, nil
}

// long returns a transcript of a task and n turns of one call each, each
// result of size bytes.
func long(n, size int) []model.Item {
	items := []model.Item{user("TASK: fix the parser")}
	for i := range n {
		id := fmt.Sprintf("c%d", i)
		resp := fmt.Sprintf("r%d", i)
		items = append(items, say(resp, "step"), call(resp, id), result(id, strings.Repeat("o", size)))
	}
	return items
}

// TestCompact: the summary request is the replaced prefix and the prompt,
// with the session's system text and tools; the new transcript is the
// pinned items, the summary and the kept tail; the record names what was
// replaced.
func TestCompact(t *testing.T) {
	items := long(10, 400)                                          // about 100 tokens a turn
	items = slices.Insert(items, 16, user("also keep the old API")) // the live request, in the middle
	before := slices.Clone(items)
	fm := &fakeModel{text: "  We found the bug.  "}
	c := &Compactor{Provider: fm, Model: "m", System: "SYS", KeepTokens: 350,
		Tools: func() []model.ToolSpec { return []model.ToolSpec{{Kind: model.ToolFunction, Name: "bash"}} }}
	out, rec, err := c.Compact(t.Context(), items, ReasonAuto)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(items, before) {
		t.Fatal("Compact changed its input")
	}
	req := fm.reqs[0]
	if req.System != "SYS" || req.Model != "m" || len(req.Tools) != 1 || req.MaxTokens != 8192 {
		t.Errorf("request %+v", req)
	}
	if last := req.Items[len(req.Items)-1]; last.Kind != model.KindUser || last.Text != Prompt || !reflect.DeepEqual(req.Items[:len(req.Items)-1], items[:rec.Cut]) {
		t.Errorf("the summary request is not the prefix and the prompt")
	}
	// 350 tokens keep the last three turns (about 101 tokens each).
	if rec.Cut != len(items)-9 {
		t.Errorf("cut at %d of %d", rec.Cut, len(items))
	}
	want := append([]model.Item{items[0], items[16], summaryItem("We found the bug.", 9)}, items[rec.Cut:]...)
	if !reflect.DeepEqual(out, want) {
		t.Errorf("new transcript:\n%v\nwant\n%v", out, want)
	}
	if !IsSummary(out[2]) || IsSummary(out[0]) {
		t.Error("IsSummary")
	}
	if !slices.Equal(rec.Pinned, []int{0, 16}) || rec.Replaced != rec.Cut-2 || rec.Summary != "We found the bug." || rec.Usage.InputTokens != 90 || rec.Response == nil {
		t.Errorf("record %+v", rec)
	}
	if len(rec.Calls) != 7 || rec.Calls[0] != "c0" || len(rec.Responses) != 7 || rec.Responses[6] != "r6" {
		t.Errorf("replaced calls %v responses %v", rec.Calls, rec.Responses)
	}
	if lines := strings.Count(string(rec.Items), "\n"); lines != rec.Replaced || len(rec.Digest) != 64 || rec.TokensAfter >= rec.TokensBefore {
		t.Errorf("%d item lines, digest %q, tokens %d -> %d", lines, rec.Digest, rec.TokensBefore, rec.TokensAfter)
	}

	// A second compaction summarizes the first summary with the rest; the
	// old summary is not pinned.
	more := append(slices.Clone(out), long(6, 400)[1:]...)
	out2, rec2, err := c.Compact(t.Context(), more, ReasonAuto)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec2.Pinned, []int{0, 1}) || out2[0].Text != items[0].Text || out2[1].Text != "also keep the old API" || !IsSummary(out2[2]) {
		t.Errorf("second compaction pinned %v: %v", rec2.Pinned, out2[:3])
	}
	for _, it := range out2[3:] {
		if IsSummary(it) {
			t.Error("the first summary was kept")
		}
	}
}

// TestSince: the first item added after the latest compaction is past the
// turns the summary kept; a transcript without a summary has no such item
// but its first.
func TestSince(t *testing.T) {
	items := long(10, 400)
	if got := Since(items); got != 0 {
		t.Fatalf("no summary: %d", got)
	}
	c := &Compactor{Provider: &fakeModel{text: "sum"}, KeepTokens: 350}
	out, rec, err := c.Compact(t.Context(), items, ReasonAuto)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := Since(out), len(out); got != want {
		t.Errorf("right after the compaction: %d, want %d (every item after the summary predates it)", got, want)
	}
	if kept := len(items) - rec.Cut; kept == 0 {
		t.Fatal("nothing kept")
	}
	more := append(slices.Clone(out), say("r20", "new"), user("next"))
	if got := Since(more); got != len(out) {
		t.Errorf("after a new turn: %d, want %d", got, len(out))
	}
	manual, _, err := c.Compact(t.Context(), more, ReasonManual)
	if err != nil {
		t.Fatal(err)
	}
	if got := Since(manual); got != len(manual) {
		t.Errorf("after a manual compaction: %d of %d", got, len(manual))
	}
	// A summary's own text, without its mark, keeps nothing.
	if got := Since([]model.Item{user("t"), user(SummaryPrefix + "x"), say("r", "a")}); got != 2 {
		t.Errorf("unmarked summary: %d", got)
	}
}

// TestCompactManual: /compact keeps nothing but the pinned items.
func TestCompactManual(t *testing.T) {
	items := long(3, 40)
	c := &Compactor{Provider: &fakeModel{text: "sum"}, KeepTokens: 1 << 20}
	if _, _, err := c.Compact(t.Context(), items, ReasonAuto); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("auto on a short transcript: %v", err)
	}
	out, rec, err := c.Compact(t.Context(), items, ReasonManual)
	if err != nil || len(out) != 2 || rec.Cut != len(items) || rec.Replaced != len(items)-1 {
		t.Fatalf("manual: %v %v %+v", out, err, rec)
	}
	if _, _, err := c.Compact(t.Context(), []model.Item{user("t")}, ReasonManual); !errors.Is(err, ErrNothingToCompact) {
		t.Errorf("a lone task: %v", err)
	}
}

// TestCompactFails: a failed or empty summary leaves the transcript as it
// was and says why.
func TestCompactFails(t *testing.T) {
	items := long(5, 400)
	before := slices.Clone(items)
	for _, fm := range []*fakeModel{{err: errors.New("HTTP 529: overloaded")}, {text: " \n"}} {
		c := &Compactor{Provider: fm, KeepTokens: 100}
		out, rec, err := c.Compact(t.Context(), items, ReasonAuto)
		var se *SummaryError
		if out != nil || rec != nil || !errors.As(err, &se) || !strings.Contains(err.Error(), "the conversation is unchanged") {
			t.Errorf("%v %v %v", out, rec, err)
		}
		if fm.err != nil && !errors.Is(err, fm.err) {
			t.Errorf("the cause is lost: %v", err)
		}
	}
	if !reflect.DeepEqual(items, before) {
		t.Error("the transcript changed")
	}
}

// TestCompactPin: a caller's pin keeps more items.
func TestCompactPin(t *testing.T) {
	items := long(6, 400)
	items[4] = user("NOTE: use tabs")
	c := &Compactor{Provider: &fakeModel{text: "s"}, KeepTokens: 150, Pin: func(it model.Item) bool { return strings.HasPrefix(it.Text, "NOTE:") }}
	out, rec, err := c.Compact(t.Context(), items, ReasonAuto)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Pinned, []int{0, 4}) || out[1].Text != "NOTE: use tabs" {
		t.Errorf("pinned %v", rec.Pinned)
	}
}

// BenchmarkCompact measures what a compaction costs besides the model's
// answer: cutting and rebuilding a 1,000-turn transcript (about 100 KB of
// results a hundred turns) and digesting what it replaced.
func BenchmarkCompact(b *testing.B) {
	items := long(1000, 1000)
	c := &Compactor{Provider: &fakeModel{text: "summary"}, KeepTokens: 20000}
	for b.Loop() {
		if _, _, err := c.Compact(b.Context(), items, ReasonAuto); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNeeded is the check the loop makes before every request.
func BenchmarkNeeded(b *testing.B) {
	added := long(1, 30000)[1:]
	for b.Loop() {
		Needed(model.Usage{InputTokens: 150000, CacheReadTokens: 20000}, added, 200000, 0)
	}
}
