package tui

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// workspaceFiles are what fileSession lists.
var workspaceFiles = []string{"calc.go", "calc_test.go", "go.mod", "internal/", "internal/tui/", "internal/tui/model.go", "internal/tui/render.go", "internal/termsafe/termsafe.go"}

// fileSession is the fake session with a FileLister; it records the
// prefixes asked for.
type fileSession struct {
	*fakeSession
	asked []string
}

func (f *fileSession) Files(ctx context.Context, prefix string) ([]string, error) {
	f.mu.Lock()
	f.asked = append(f.asked, prefix)
	f.mu.Unlock()
	var out []string
	for _, p := range workspaceFiles {
		if strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out, ctx.Err()
}

// menuLabels returns the labels of the menu's items, the selected one
// marked with "*".
func menuLabels(m *uiModel) []string {
	if m.menu == nil {
		return nil
	}
	var out []string
	for i, it := range m.menu.items {
		if i == m.menu.sel {
			out = append(out, "*"+it.label)
		} else {
			out = append(out, it.label)
		}
	}
	return out
}

// TestCommandMenu: typing / shows the commands that match, from the
// command table; Up and Down move in it, Tab completes the selected one,
// Enter on a name typed in part runs the selected command, Esc closes it.
func TestCommandMenu(t *testing.T) {
	for _, tc := range []struct {
		name  string
		keys  []string // "text:…" types text
		menu  []string // the menu after the keys
		input string   // the input after the keys
	}{
		{"slash lists all", []string{"text:/"}, func() []string {
			var all []string
			for i, c := range commandTable {
				l := c.usage()
				if i == 0 {
					l = "*" + l
				}
				all = append(all, l)
			}
			return all
		}(), "/"},
		{"prefix", []string{"text:/s"}, []string{"*/surface [NAME]", "/sandbox [MODE]"}, "/s"},
		{"down moves", []string{"text:/s", "down"}, []string{"/surface [NAME]", "*/sandbox [MODE]"}, "/s"},
		{"up wraps", []string{"text:/s", "up"}, []string{"/surface [NAME]", "*/sandbox [MODE]"}, "/s"},
		{"tab completes with a space for an argument", []string{"text:/s", "down", "tab"}, nil, "/sandbox "},
		{"tab completes a command without argument", []string{"text:/com", "tab"}, nil, "/compact"},
		{"exact match selected", []string{"text:/new"}, []string{"*/new"}, "/new"},
		{"no match", []string{"text:/zz"}, nil, "/zz"},
		{"an argument closes it", []string{"text:/model g"}, nil, "/model g"},
		{"esc closes it", []string{"text:/c", "esc"}, nil, "/c"},
		{"not after a task's text", []string{"text:fix /s"}, nil, "fix /s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, 100, 30, false)
			for _, k := range tc.keys {
				if text, ok := strings.CutPrefix(k, "text:"); ok {
					d.typeText(text)
				} else {
					d.press(k)
				}
			}
			if got := menuLabels(d.m); !slices.Equal(got, tc.menu) {
				t.Errorf("menu %q, want %q", got, tc.menu)
			}
			if got := d.m.ta.Value(); got != tc.input {
				t.Errorf("input %q, want %q", got, tc.input)
			}
			if tc.menu != nil {
				f := d.frame()
				for _, l := range tc.menu[:min(len(tc.menu), maxMenuShown)] {
					if !strings.Contains(f, strings.TrimPrefix(l, "*")) {
						t.Errorf("the frame lacks %q:\n%s", l, f)
					}
				}
			}
		})
	}
}

// TestCommandMenuEnterRunsTheSelected: /co and Enter runs /compact (the
// first match), not an unknown command /co.
func TestCommandMenuEnterRunsTheSelected(t *testing.T) {
	d := newDriver(t, 100, 30, false)
	d.typeText("/co")
	d.press("enter")
	d.wait()
	if d.f.compacts != 1 {
		t.Fatalf("compact ran %d times:\n%s", d.f.compacts, d.frame())
	}
	if f := d.frame(); strings.Contains(f, "Unknown command") {
		t.Errorf("/co was sent as typed:\n%s", f)
	}
}

// TestFileCompletion: @prefix asks the session's FileLister off the UI's
// goroutine and shows the paths that match; Tab completes (a directory
// without the space, so that it goes on); typing on filters what is known
// while a newer answer is on its way; a session without a FileLister
// completes nothing.
func TestFileCompletion(t *testing.T) {
	d := newDriver(t, 100, 30, false)
	fs := &fileSession{fakeSession: d.f}
	d.m.sess = fs
	d.typeText("explain @")
	d.waitFor("the first answer", func() bool { return d.m.menu != nil })
	d.typeText("ca")
	// Known paths are filtered at once, before the answer for "ca".
	if got := menuLabels(d.m); !slices.Equal(got, []string{"*@calc.go", "@calc_test.go"}) {
		t.Fatalf("menu after @ca: %q", got)
	}
	d.press("down")
	d.press("tab")
	if got := d.m.ta.Value(); got != "explain @calc_test.go " {
		t.Fatalf("input after tab: %q", got)
	}
	if d.m.menu != nil {
		t.Errorf("the menu stays open after a file was completed: %q", menuLabels(d.m))
	}
	d.typeText("and @int")
	d.waitFor("the answer for int", func() bool { return d.m.menu != nil && d.m.comp.answered == "int" })
	d.press("tab")
	if got := d.m.ta.Value(); got != "explain @calc_test.go and @internal/" {
		t.Fatalf("input after tab on a directory: %q", got)
	}
	d.waitFor("the answer for internal/", func() bool { return d.m.comp.answered == "internal/" })
	if got := menuLabels(d.m); len(got) != 4 || got[0] != "*@internal/tui/" {
		t.Errorf("menu in internal/: %q", got)
	}
	if f := d.frame(); !strings.Contains(f, "› @internal/tui/") || !strings.Contains(f, "  @internal/termsafe/termsafe.go") {
		t.Errorf("the frame does not show the menu:\n%s", f)
	}

	// Without a FileLister: no lookup, no menu.
	plain := newDriver(t, 100, 30, false)
	plain.typeText("explain @ca")
	plain.press("tab")
	if plain.m.menu != nil || plain.m.ta.Value() != "explain @ca" {
		t.Errorf("a session without a FileLister completed: %q", plain.m.ta.Value())
	}
}

// TestStaleFilesAreIgnored: an answer to a lookup a newer one replaced is
// dropped, and one lookup per prefix is made.
func TestStaleFilesAreIgnored(t *testing.T) {
	d := newDriver(t, 100, 30, false)
	d.m.sess = &fileSession{fakeSession: d.f}
	d.typeText("@c")
	d.typeText("a")
	seq := d.m.comp.seq
	d.m.Update(filesMsg{seq: seq - 1, prefix: "c", files: []string{"cmd/", "calc.go"}})
	if d.m.comp.answered == "c" || d.m.menu != nil {
		t.Fatalf("a stale answer was taken: %q", menuLabels(d.m))
	}
	d.m.Update(filesMsg{seq: seq, prefix: "ca", files: []string{"calc.go", "\x1b]0;x\x07.go"}})
	if got := menuLabels(d.m); !slices.Equal(got, []string{"*@calc.go"}) {
		t.Errorf("menu %q", got)
	}
	if !slices.Equal(d.m.comp.files, []string{"calc.go"}) {
		t.Errorf("a name that cannot be shown as it is was offered: %q", d.m.comp.files)
	}
}

// modelSession is the fake session with a ModelLister and a
// ModelSwitcher.
type modelSession struct {
	*fakeSession
	listed int
}

func (s *modelSession) Models(ctx context.Context) ([]string, error) {
	s.listed++
	return []string{"sim-small", "sim-model", "sim-large\x1b]0;x\x07"}, ctx.Err()
}

func (s *modelSession) SetModel(ctx context.Context, name string) error {
	if name == "nope" {
		return errors.New("unknown model nope")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status.Model = name
	return ctx.Err()
}

// TestModelPicker: /model lists the provider's models numbered, the
// current one marked; /model N switches to the Nth, /model NAME to NAME;
// a number not listed is refused; without a ModelLister /model says what
// it can do.
func TestModelPicker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		lister bool
		sends  []string
		model  string   // the session's model at the end
		want   []string // in the frame
		not    []string
	}{
		{"list", true, []string{"/model"}, "sim-model",
			[]string{"Models of the provider (/model N or /model NAME switches):", "    1  sim-small", "●   2  sim-model  (current)", "    3  sim-large<U+001B>]0;x<U+0007>"}, nil},
		{"pick by number", true, []string{"/model", "/model 1"}, "sim-small", []string{"Model: sim-small", "sim-small · generic"}, nil},
		{"pick by name", true, []string{"/model sim-large"}, "sim-large", []string{"Model: sim-large"}, nil},
		{"number not listed", true, []string{"/model", "/model 4"}, "sim-model", []string{"No model 4: /model lists the models to choose from."}, nil},
		{"number before a list", true, []string{"/model 1"}, "sim-model", []string{"No model 1"}, nil},
		{"an unknown name", true, []string{"/model nope"}, "sim-model", []string{"/model: unknown model nope"}, nil},
		{"cannot list", false, []string{"/model"}, "sim-model", []string{"Model: sim-model", "/model NAME switches to NAME", "cannot list"}, []string{"Models of the provider"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDriver(t, 100, 40, false)
			ms := &modelSession{fakeSession: d.f}
			if tc.lister {
				d.m.sess = ms
			}
			for _, s := range tc.sends {
				d.send(s)
				if d.m.busy != "" {
					d.wait()
				}
			}
			if got := d.f.Status().Model; got != tc.model {
				t.Errorf("model %q, want %q", got, tc.model)
			}
			f := d.frame()
			for _, w := range tc.want {
				if !strings.Contains(f, w) {
					t.Errorf("the frame lacks %q:\n%s", w, f)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(f, w) {
					t.Errorf("the frame holds %q:\n%s", w, f)
				}
			}
		})
	}
}
