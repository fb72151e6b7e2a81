package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/hostfs"
)

// promptWithin returns SystemPrompt(root) or fails the test when it does
// not return within a generous deadline: a hang detector, not a timing
// assertion (a blocked open of a FIFO never returns at all).
func promptWithin(t *testing.T, root string) string {
	t.Helper()
	done := make(chan string, 1)
	go func() { done <- agent.SystemPrompt(root, agent.DefaultSystem) }()
	select {
	case s := <-done:
		return s
	case <-time.After(30 * time.Second):
		t.Fatal("SystemPrompt hangs on what a command planted as AGENTS.md")
		return ""
	}
}

// TestSystemPromptRefusesPlantedAgentsMD plants AGENTS.md as a command
// in the sandbox could: links to a secret outside the workspace, to
// Truss's own environment, to /dev/zero, a FIFO, a socket, a directory.
// None of them may reach the prompt, hang or grow the host; each is
// refused with a line in the prompt saying so.
func TestSystemPromptRefusesPlantedAgentsMD(t *testing.T) {
	const secret = "SIGNING-KEY-4f1c9e"
	outside := t.TempDir()
	key := filepath.Join(outside, "ledger.key")
	if err := os.WriteFile(key, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TRUSS_TEST_ENV_SECRET", secret)

	tests := []struct {
		name  string
		plant func(t *testing.T, ws string)
		want  error // what ReadProjectDoc's error wraps
	}{
		{"link to a key outside", func(t *testing.T, ws string) {
			symlink(t, key, filepath.Join(ws, "AGENTS.md"))
		}, hostfs.ErrEscapes},
		{"relative link to a key outside", func(t *testing.T, ws string) {
			rel, err := filepath.Rel(ws, key)
			if err != nil {
				t.Fatal(err)
			}
			symlink(t, rel, filepath.Join(ws, "AGENTS.md"))
		}, hostfs.ErrEscapes},
		{"link beneath the root to a link outside", func(t *testing.T, ws string) {
			symlink(t, key, filepath.Join(ws, "CLAUDE.md"))
			symlink(t, "CLAUDE.md", filepath.Join(ws, "AGENTS.md"))
		}, hostfs.ErrEscapes},
		{"link to the process environment", func(t *testing.T, ws string) {
			symlink(t, "/proc/self/environ", filepath.Join(ws, "AGENTS.md"))
		}, hostfs.ErrEscapes},
		{"link to /dev/zero", func(t *testing.T, ws string) {
			symlink(t, "/dev/zero", filepath.Join(ws, "AGENTS.md"))
		}, hostfs.ErrEscapes},
		{"link beneath the root to a FIFO", func(t *testing.T, ws string) {
			if err := syscall.Mkfifo(filepath.Join(ws, "pipe"), 0o644); err != nil {
				t.Fatal(err)
			}
			symlink(t, "pipe", filepath.Join(ws, "AGENTS.md"))
		}, hostfs.ErrNotRegular},
		{"FIFO", func(t *testing.T, ws string) {
			if err := syscall.Mkfifo(filepath.Join(ws, "AGENTS.md"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, hostfs.ErrNotRegular},
		{"directory", func(t *testing.T, ws string) {
			if err := os.Mkdir(filepath.Join(ws, "AGENTS.md"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, hostfs.ErrNotRegular},
		{"socket", func(t *testing.T, ws string) {
			fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fd) })
			t.Chdir(ws) // a relative name: a temporary directory's path can pass a socket's 108 bytes
			if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: "AGENTS.md"}); err != nil {
				t.Fatal(err)
			}
		}, hostfs.ErrNotRegular},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			tc.plant(t, ws)
			p := promptWithin(t, ws)
			if strings.Contains(p, secret) {
				t.Fatalf("the secret reached the system prompt:\n%s", p)
			}
			if strings.Contains(p, "# Project instructions (AGENTS.md)") {
				t.Errorf("a planted AGENTS.md was taken as instructions:\n%s", p)
			}
			if !strings.Contains(p, "[AGENTS.md was not read: ") {
				t.Errorf("the refusal is not in the prompt:\n%s", p)
			}
			if len(p) > 4096 {
				t.Errorf("prompt of %d bytes for a refused AGENTS.md", len(p))
			}
			_, err := agent.ReadProjectDoc(ws)
			if !errors.Is(err, tc.want) || !hostfs.Refused(err) {
				t.Errorf("ReadProjectDoc: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestSystemPromptProjectDoc: a regular AGENTS.md goes in whole up to 32
// KiB; a larger one is cut there (on a rune boundary) with a note; a
// missing or empty one adds nothing.
func TestSystemPromptProjectDoc(t *testing.T) {
	big := strings.Repeat("é", agent.ProjectDocMaxBytes/2) + "TAIL-NOT-INCLUDED"
	odd := "x" + strings.Repeat("é", agent.ProjectDocMaxBytes/2) // a rune cut at the limit
	tests := []struct {
		name      string
		content   *string
		wantIn    []string
		wantOut   []string
		truncated bool
	}{
		{"missing", nil, nil, []string{"AGENTS.md"}, false},
		{"empty", ptr("  \n"), nil, []string{"AGENTS.md"}, false},
		{"small", ptr("Run make test.\n"), []string{"# Project instructions (AGENTS.md)\n\nRun make test.\n"}, []string{"not read", "only its first"}, false},
		{"exactly the limit", ptr(strings.Repeat("a", agent.ProjectDocMaxBytes)), []string{strings.Repeat("a", agent.ProjectDocMaxBytes)}, []string{"only its first"}, false},
		{"over the limit", &big, []string{"only its first 32768 bytes are included"}, []string{"TAIL-NOT-INCLUDED"}, true},
		{"a rune across the limit", &odd, []string{"only its first 32768 bytes"}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			if tc.content != nil {
				if err := os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte(*tc.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := promptWithin(t, ws)
			for _, w := range tc.wantIn {
				if !strings.Contains(p, w) {
					t.Errorf("prompt lacks %.80q", w)
				}
			}
			for _, w := range tc.wantOut {
				if strings.Contains(p, w) {
					t.Errorf("prompt has %.80q", w)
				}
			}
			if !utf8.ValidString(p) {
				t.Error("prompt is not valid UTF-8")
			}
			doc, err := agent.ReadProjectDoc(ws)
			if err != nil {
				t.Fatal(err)
			}
			if doc.Truncated != tc.truncated || len(doc.Text) > agent.ProjectDocMaxBytes {
				t.Errorf("doc: truncated %v, %d bytes; want truncated %v, at most %d", doc.Truncated, len(doc.Text), tc.truncated, agent.ProjectDocMaxBytes)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// TestSystemPromptFollowsLinkBeneathRoot: `AGENTS.md -> CLAUDE.md`, as
// repositories keep one file for both tools, is read like the file it
// names (relative, through a subdirectory too), as the model's own file
// tools would read it; the user is told nothing then.
func TestSystemPromptFollowsLinkBeneathRoot(t *testing.T) {
	for _, tc := range []struct{ name, target, file string }{
		{"sibling", "CLAUDE.md", "CLAUDE.md"},
		{"in a subdirectory", "docs/agents/AGENTS.md", "docs/agents/AGENTS.md"},
		{"through a linked subdirectory", "shared/CLAUDE.md", "real/CLAUDE.md"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			f := filepath.Join(ws, tc.file)
			if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("Run make check before you finish.\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.file != tc.target {
				symlink(t, "real", filepath.Join(ws, "shared"))
			}
			symlink(t, tc.target, filepath.Join(ws, "AGENTS.md"))
			p := agent.NewPrompt(ws, agent.DefaultSystem)
			if !strings.Contains(p.Text, "# Project instructions (AGENTS.md)\n\nRun make check before you finish.\n") {
				t.Errorf("the linked AGENTS.md is not in the prompt:\n%s", p.Text)
			}
			if p.Refused != nil || p.Notice() != "" {
				t.Errorf("refused %v, notice %q", p.Refused, p.Notice())
			}
		})
	}
}

// TestPromptNotice: what the user is told of AGENTS.md — its refusal
// (with the reason) and its truncation; nothing for a missing or whole one.
func TestPromptNotice(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "notes.md")
	if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		plant func(ws string)
		want  string
	}{
		{"missing", func(string) {}, ""},
		{"whole", func(ws string) { os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("hi\n"), 0o644) }, ""},
		{"outside", func(ws string) { symlink(t, outside, filepath.Join(ws, "AGENTS.md")) }, "AGENTS.md was not read: open "},
		{"truncated", func(ws string) {
			os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte(strings.Repeat("a", agent.ProjectDocMaxBytes+5)), 0o644)
		}, "AGENTS.md is 32773 bytes; only its first 32768 bytes are in the model's instructions."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			tc.plant(ws)
			got := agent.NewPrompt(ws, agent.DefaultSystem).Notice()
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) || tc.name == "outside" && !strings.Contains(got, "AGENTS.md: is outside the root; the model is told so.") {
				t.Errorf("notice %q, want %q", got, tc.want)
			}
		})
	}
}

// TestProjectDocClaudeFallback: a workspace with a CLAUDE.md and no
// AGENTS.md has its CLAUDE.md read, named as such; AGENTS.md wins where
// both are; an AGENTS.md that is refused (a link outside) is told, not
// passed over for CLAUDE.md; a CLAUDE.md linked outside is refused too.
func TestProjectDocClaudeFallback(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(outside, []byte("SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		files   map[string]string // a value "->X" is a link to X
		wantIn  []string
		wantOut []string
		refused bool
	}{
		{"CLAUDE.md alone", map[string]string{"CLAUDE.md": "Use pnpm.\n"}, []string{"# Project instructions (CLAUDE.md)\n\nUse pnpm.\n"}, []string{"AGENTS.md"}, false},
		{"both", map[string]string{"AGENTS.md": "From agents.\n", "CLAUDE.md": "From claude.\n"}, []string{"# Project instructions (AGENTS.md)\n\nFrom agents."}, []string{"From claude."}, false},
		{"AGENTS.md refused", map[string]string{"AGENTS.md": "->" + outside, "CLAUDE.md": "From claude.\n"}, []string{"[AGENTS.md was not read: "}, []string{"From claude.", "SECRET"}, true},
		{"CLAUDE.md refused", map[string]string{"CLAUDE.md": "->" + outside}, []string{"[CLAUDE.md was not read: "}, []string{"SECRET"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			for name, body := range tc.files {
				var err error
				if target, ok := strings.CutPrefix(body, "->"); ok {
					err = os.Symlink(target, filepath.Join(ws, name))
				} else {
					err = os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			p := agent.NewPrompt(ws, agent.DefaultSystem)
			for _, w := range tc.wantIn {
				if !strings.Contains(p.Text, w) {
					t.Errorf("prompt lacks %q:\n%s", w, p.Text)
				}
			}
			for _, w := range tc.wantOut {
				if strings.Contains(p.Text, w) {
					t.Errorf("prompt has %q:\n%s", w, p.Text)
				}
			}
			if (p.Refused != nil) != tc.refused {
				t.Errorf("refused: %v", p.Refused)
			}
			if tc.refused && !strings.HasPrefix(p.Notice(), p.Doc.Name+" was not read: ") {
				t.Errorf("notice %q", p.Notice())
			}
		})
	}
}
