package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/trussdev/truss/examples"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/provider/chatcompat"
	"github.com/trussdev/truss/internal/provider/ollama"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/surface/generic"
	"github.com/trussdev/truss/internal/tool"
	"github.com/trussdev/truss/internal/tool/fs"
	"github.com/trussdev/truss/internal/tool/shell"
)

// registry lists the surfaces this build offers.
func registry() surface.Registry {
	return surface.Registry{generic.Name: generic.Bindings}
}

// providerFlags select a provider and a model.
type providerFlags struct {
	provider   string
	model      string
	surface    string
	script     string // sim: the script file
	simDialect string // sim: which dialect the in-process server speaks
}

func (p *providerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.provider, "provider", "", "model provider: ollama, chat, openai or sim (default: from the environment)")
	fs.StringVar(&p.model, "model", "", "model name (default: $TRUSS_MODEL)")
	fs.StringVar(&p.surface, "surface", "auto", "tool surface: auto picks the model's trained surface; generic forces Truss's function tools")
	fs.StringVar(&p.script, "script", "", "with --provider sim: the script the simulated model plays (default: the demo fix)")
	fs.StringVar(&p.simDialect, "sim-dialect", "chat", "with --provider sim: the dialect it speaks (chat or ollama)")
}

// resolve fills in the provider and model from the environment.
func (p *providerFlags) resolve() error {
	if p.provider == "" {
		switch {
		case os.Getenv("OPENAI_BASE_URL") != "":
			p.provider = "chat"
		case os.Getenv("OPENAI_API_KEY") != "":
			p.provider = "openai"
		case os.Getenv("OLLAMA_HOST") != "":
			p.provider = "ollama"
		case os.Getenv("ANTHROPIC_API_KEY") != "":
			p.provider = "anthropic"
		default:
			return usagef("no model provider configured: set OLLAMA_HOST (Ollama), OPENAI_BASE_URL (an OpenAI-compatible server) or OPENAI_API_KEY (OpenAI), or pass --provider; `truss demo` needs none")
		}
	}
	if p.model == "" {
		p.model = os.Getenv("TRUSS_MODEL")
	}
	if p.model == "" {
		switch p.provider {
		case "sim":
			p.model = "sim-coder"
		case "openai":
			p.model = "gpt-4.1"
		default:
			return usagef("no model given for provider %s: pass --model or set TRUSS_MODEL", p.provider)
		}
	}
	return nil
}

// newProvider builds the adapter. For "sim" it starts the simulated model on
// a loopback port for the life of ctx.
func (p *providerFlags) newProvider(ctx context.Context, retry provider.RetryPolicy) (provider.Provider, error) {
	switch p.provider {
	case "ollama":
		return &ollama.Client{Host: ollama.HostURL(os.Getenv("OLLAMA_HOST")), Retry: retry}, nil
	case "chat", "openai-compatible":
		base := os.Getenv("OPENAI_BASE_URL")
		if base == "" {
			return nil, usagef("provider chat needs OPENAI_BASE_URL, the server's /v1 URL (for example http://127.0.0.1:8000/v1)")
		}
		return chatcompat.New(chatcompat.Config{BaseURL: base, APIKey: os.Getenv("OPENAI_API_KEY"), Retry: retry}), nil
	case "openai":
		key := os.Getenv("OPENAI_API_KEY")
		if key == "" {
			return nil, usagef("provider openai needs OPENAI_API_KEY")
		}
		base := os.Getenv("OPENAI_BASE_URL")
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		return chatcompat.New(chatcompat.Config{BaseURL: base, APIKey: key, Retry: retry}), nil
	case "anthropic":
		if os.Getenv("ANTHROPIC_API_KEY") == "" {
			return nil, usagef("provider anthropic needs ANTHROPIC_API_KEY")
		}
		return nil, usagef("provider anthropic is not in this build; use ollama, chat, openai or sim")
	case "sim":
		script := examples.DemoScript
		if p.script != "" {
			b, err := os.ReadFile(p.script)
			if err != nil {
				return nil, usagef("--script: %v", err)
			}
			script = b
		}
		s, err := sim.ParseScript(script)
		if err != nil {
			return nil, usagef("%v", err)
		}
		base, err := sim.New(s).Listen(ctx)
		if err != nil {
			return nil, err
		}
		switch p.simDialect {
		case "chat":
			return chatcompat.New(chatcompat.Config{BaseURL: base + "/v1", Retry: retry}), nil
		case "ollama":
			return &ollama.Client{Host: base, Retry: retry}, nil
		}
		return nil, usagef("--sim-dialect must be chat or ollama, not %q", p.simDialect)
	}
	return nil, usagef("unknown provider %q: choose ollama, chat, openai or sim", p.provider)
}

// pickSurface resolves --surface for the provider and model.
func (p *providerFlags) pickSurface() (*surface.Set, surface.Profile, error) {
	prof := surface.DefaultProfiles().Lookup(p.provider, p.model)
	reg := registry()
	name, err := reg.Choose(p.surface, prof)
	if err != nil {
		return nil, prof, usageError{err.Error()}
	}
	set, err := reg.Build(name)
	return set, prof, err
}

// workspaceFlags configure the workspace and its tools.
type workspaceFlags struct {
	root     string
	ro, rw   multi
	timeout  time.Duration
	allowEnv multi
}

func (w *workspaceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.root, "root", ".", "workspace root")
	fs.Var(&w.ro, "add-dir-ro", "an extra read-only root (repeatable)")
	fs.Var(&w.rw, "add-dir", "an extra read-write root (repeatable)")
	fs.DurationVar(&w.timeout, "timeout", shell.DefaultTimeout, "per-command timeout of the shell")
	fs.Var(&w.allowEnv, "allow-env", "pass this secret-looking variable (name contains KEY, SECRET or TOKEN) to the shell (repeatable)")
}

// tools is the executors of one session.
type tools struct {
	ws    *fs.Workspace
	shell *shell.Session
	mux   tool.Mux
}

func (w *workspaceFlags) open() (*tools, error) {
	var extra []fs.RootSpec
	for _, d := range w.ro {
		extra = append(extra, fs.RootSpec{Path: d, ReadOnly: true})
	}
	for _, d := range w.rw {
		extra = append(extra, fs.RootSpec{Path: d})
	}
	ws, err := fs.Open(w.root, extra...)
	if err != nil {
		return nil, err
	}
	t := &tools{ws: ws, shell: shell.New(shell.Config{Dir: ws.Dir(), Timeout: w.timeout, AllowEnv: w.allowEnv})}
	fx := &fs.Executor{W: ws}
	for _, op := range fs.Ops {
		t.mux.Handle(op, fx)
	}
	for _, op := range shell.Ops {
		t.mux.Handle(op, t.shell)
	}
	return t, nil
}

func (t *tools) Close() {
	t.shell.Close()
	t.ws.Close()
}

// declarer is a provider that can show its wire form of tool declarations.
type declarer interface {
	DeclareTools([]model.ToolSpec) (json.RawMessage, error)
}

func cmdTools(args []string, stdout, stderr io.Writer) error {
	fset := newFlagSet("tools", stderr)
	var p providerFlags
	p.register(fset)
	if err := parse(fset, args); err != nil {
		return err
	}
	if err := p.resolve(); err != nil {
		return err
	}
	set, prof, err := p.pickSurface()
	if err != nil {
		return err
	}
	var d declarer
	switch p.provider {
	case "ollama":
		d = &ollama.Client{}
	case "chat", "openai", "openai-compatible", "sim":
		d = chatcompat.New(chatcompat.Config{BaseURL: "http://127.0.0.1/v1"})
		if p.provider == "sim" && p.simDialect == "ollama" {
			d = &ollama.Client{}
		}
	default:
		return usagef("provider %s is not in this build", p.provider)
	}
	raw, err := d.DeclareTools(set.Specs())
	if err != nil {
		return err
	}
	// The declarations are printed as the request carries them, key order
	// included; only indentation is added.
	out, err := json.Marshal(struct {
		Provider     string          `json:"provider"`
		Model        string          `json:"model"`
		Surface      string          `json:"surface"`
		ProfileGuess bool            `json:"profile_guess"`
		Tools        json.RawMessage `json:"tools"`
	}{p.provider, p.model, set.Surface, prof.Guess, raw})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err = stdout.Write(buf.Bytes())
	return err
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }
