package trusscli

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"github.com/trussdev/truss/internal/cli"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/harness"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/suggest"
	"github.com/trussdev/truss/internal/termsafe"
)

// providerFlags select a provider and a model.
type providerFlags struct {
	provider    string
	model       string
	surface     string
	script      string // sim: the script file, or harness.DemoScript
	simDialect  string // sim: which dialect the in-process server speaks
	serverTools cli.Multi
	stateful    bool // responses: chain turns with previous_response_id
	ctxEdit     bool // anthropic: context editing (clear old tool results)
	// A cloud platform's region and project (vertex), a versioned API's
	// version (azure).
	region, project, apiVersion string
}

func (p *providerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.provider, "provider", "", "model provider: "+harness.ProviderNames()+" (default: from the environment)")
	fs.StringVar(&p.model, "model", "", "model name (default: $TRUSS_MODEL)")
	fs.StringVar(&p.surface, "surface", "auto", "tool surface: auto picks the model's trained surface; generic forces Truss's function tools")
	fs.StringVar(&p.script, "script", "", "with --provider sim: the script the simulated model plays (docs/simulator.md)")
	fs.StringVar(&p.simDialect, "sim-dialect", "", "with --provider sim: the dialect it speaks ("+harness.DialectNames()+"); by default the one --surface needs, else the model's (sim-gpt*: responses), else anthropic")
	fs.BoolVar(&p.stateful, "stateful", false, "with the Responses API: chain turns with previous_response_id (the server stores them) instead of replaying the conversation")
	fs.BoolVar(&p.ctxEdit, "context-editing", false, "with Anthropic's API: let the server clear old tool results as the context fills (context management; the memory tool's are kept), besides Truss's own compaction")
	fs.StringVar(&p.region, "region", "", "with --provider vertex, vertex-gemini or bedrock: the cloud region (default: vertex $CLOUD_ML_REGION; vertex-gemini $GOOGLE_CLOUD_LOCATION or $CLOUD_ML_REGION; bedrock $AWS_REGION, $AWS_DEFAULT_REGION or the profile's)")
	fs.StringVar(&p.project, "project", "", "with --provider vertex or vertex-gemini: the Google Cloud project (default: vertex $ANTHROPIC_VERTEX_PROJECT_ID; both $GOOGLE_CLOUD_PROJECT, $GCLOUD_PROJECT, or the credential file's)")
	fs.StringVar(&p.apiVersion, "api-version", "", "with --provider azure: the API version (v1, preview, or a dated one for the route of resources without the v1 API; default: $AZURE_OPENAI_API_VERSION, else v1)")
	fs.Var(&p.serverTools, "server-tool", "enable a provider-executed tool (anthropic: web_search, web_fetch, code_execution); recorded as unverified (repeatable)")
}

// options checks the provider's flags and sets its options: a server
// tool not among harness.ServerToolNames is a usage error, with the one
// it most likely meant.
func (p *providerFlags) options(o *harness.Options) error {
	names := harness.ServerToolNames()
	for _, t := range p.serverTools {
		if !slices.Contains(names, t) {
			msg := fmt.Sprintf("--server-tool %q is not one of %s or %s", t, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
			if near := suggest.Nearest(t, names); near != "" {
				msg += "; did you mean " + near + "?"
			}
			return cli.UsageError{Msg: msg}
		}
	}
	o.Provider, o.Model, o.Surface, o.Script, o.SimDialect = p.provider, p.model, p.surface, p.script, p.simDialect
	o.ServerTools, o.Stateful, o.ContextEditing = p.serverTools, p.stateful, p.ctxEdit
	o.Region, o.Project, o.APIVersion = p.region, p.project, p.apiVersion
	return nil
}

// workspaceFlags configure the workspace and its tools.
type workspaceFlags struct {
	root      string
	ro, rw    cli.Multi
	timeout   time.Duration
	allowEnv  cli.Multi
	memoryDir string
	sandbox   string // --sandbox
	network   string // --network
	fallback  string // --sandbox-fallback
	memory    string // --memory
	disk      string // --disk-budget
	env       string // --env
	engine    string // --engine
	workdir   string // --env-workdir
	// --approval-edits: whether a person is asked before each file edit
	// ("" for the user's configuration, else accept).
	approvalEdits string
}

func (w *workspaceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.root, "root", ".", "workspace root")
	fs.Var(&w.ro, "add-dir-ro", "an extra read-only root (repeatable)")
	fs.Var(&w.rw, "add-dir", "an extra read-write root (repeatable)")
	fs.DurationVar(&w.timeout, "timeout", harness.DefaultShellTimeout, "per-command timeout of the shell")
	fs.Var(&w.allowEnv, "allow-env", "pass this variable to commands although Truss withholds it (ANTHROPIC_*, OPENAI_*, OLLAMA_*, TRUSS_*, or a name containing KEY, SECRET or TOKEN) (repeatable)")
	fs.StringVar(&w.memoryDir, "memory-dir", "", "the memory tool's directory (default: one per project under the user's data directory)")
	fs.StringVar(&w.approvalEdits, "approval-edits", "", "whether a person is asked before each file edit, shown its diff: ask, or accept (edits are made without asking); default accept, or the user's approval_edits. Only a session someone answers can ask: with ask, truss run, exec, tool call and mcp serve refuse to start, and so does --approval never")
	w.registerSandbox(fs)
	w.registerEnv(fs)
}

// registerEnv registers the task environment's flags.
func (w *workspaceFlags) registerEnv(fs *flag.FlagSet) {
	fs.StringVar(&w.env, "env", "", "where the tools run: host (the sandbox; the default) or image:REF, a container from the OCI image REF in the engine's store (docs/environments.md; default: .truss/config.toml's [env] image when trusted)")
	fs.StringVar(&w.engine, "engine", "", "the container engine for --env image:REF: podman or docker (default: the first that works; see truss env check)")
	fs.StringVar(&w.workdir, "env-workdir", "", "where the workspace is mounted in the container (default: the image's WORKDIR, else /workspace; SWE-bench's images: /testbed)")
}

// registerSandbox registers the sandbox flags.
func (w *workspaceFlags) registerSandbox(fs *flag.FlagSet) {
	fs.StringVar(&w.sandbox, "sandbox", "", "what commands may write: read-only, workspace-write (the workspace, --add-dir roots, build caches; the default) or full")
	fs.StringVar(&w.network, "network", "", "network access for commands: off (Unix sockets only; the default) or on")
	fs.StringVar(&w.fallback, "sandbox-fallback", "", "accept a weaker mode when this host cannot enforce the sandbox: landlock-only or none")
	fs.StringVar(&w.memory, "memory", "", "memory limit of the session's commands together, e.g. 2G (default 4G or half the RAM; none for no limit)")
	fs.StringVar(&w.disk, "disk-budget", "", "bytes the session's commands may write to disk, e.g. 10G (default half the free space, at most 64G; none for no budget)")
}

// options checks the workspace flags and sets the workspace's options.
func (w *workspaceFlags) options(o *harness.Options) error {
	if w.timeout <= 0 {
		// 0 would be read as the default.
		return cli.Usagef("--timeout must be a positive duration, such as 2m")
	}
	o.Root, o.ReadOnlyDirs, o.WritableDirs = w.root, w.ro, w.rw
	o.ShellTimeout, o.AllowEnv, o.MemoryDir = w.timeout, w.allowEnv, w.memoryDir
	o.Env, o.Engine, o.EnvWorkdir = w.env, w.engine, w.workdir
	if w.approvalEdits != "" {
		e, err := approval.ParseEditPolicy(w.approvalEdits)
		if err != nil {
			return cli.Usagef("--approval-edits: %v", err)
		}
		o.ApprovalEdits = e
	}
	return w.sandboxOptions(&o.Sandbox)
}

// sandboxOptions checks the sandbox flags.
func (w *workspaceFlags) sandboxOptions(so *harness.SandboxOptions) error {
	if w.sandbox != "" {
		mode, err := sandbox.ParseMode(w.sandbox)
		if err != nil {
			return cli.UsageError{Msg: err.Error()}
		}
		so.Mode = mode
	}
	switch w.network {
	case "":
	case "on", "off":
		on := w.network == "on"
		so.Network = &on
	default:
		return cli.Usagef("--network must be on or off, not %q", w.network)
	}
	fb, err := sandbox.ParseFallback(w.fallback)
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	so.Fallback = fb
	for _, f := range []struct {
		flag, v string
		to      *int64
	}{{"--memory", w.memory, &so.Memory}, {"--disk-budget", w.disk, &so.DiskBudget}} {
		if f.v != "" {
			n, err := sandbox.ParseSize(f.v)
			if err != nil {
				return cli.Usagef("%s: %v", f.flag, err)
			}
			*f.to = n
		}
	}
	return nil
}

func cmdTools(args []string, stdout, stderr io.Writer) error {
	fset := cli.NewFlagSet("tools", stderr)
	cli.Describe(fset, "truss tools [flags]", `Prints the exact tool declarations a request to this provider and model carries,
in the provider's wire form: its post-trained tools where it has them, else generic
function tools; the MCP servers' tools and the validate tool where a session would
offer them. context_window and max_output are the limits a session works with: the
model catalog's, a named provider's own, or --context's window.`)
	var p providerFlags
	p.register(fset)
	var mf mcpFlags
	mf.register(fset)
	var sf spawnFlags
	sf.register(fset)
	var vf validateFlags // the validate tool is declared where a session offers it
	vf.registerChecks(fset)
	if err := cli.ParseNone(fset, args); err != nil {
		return err
	}
	o := harness.Options{Version: version, OnWarning: warner(stderr), Validation: vf.options()}
	if err := p.options(&o); err != nil {
		return err
	}
	if err := mf.options(&o.MCP); err != nil {
		return err
	}
	sf.options(&o.Spawn)
	ctx, cancel := cli.SignalContext(stderr)
	defer cancel()
	d, err := harness.Declare(ctx, o)
	if err != nil {
		return err
	}
	// The declarations are printed as the request carries them, key order
	// included; only indentation is added.
	out, err := json.Marshal(struct {
		Provider      string          `json:"provider"`
		Model         string          `json:"model"`
		Surface       string          `json:"surface"`
		ProfileGuess  bool            `json:"profile_guess"`
		ContextWindow int             `json:"context_window"`
		MaxOutput     int             `json:"max_output"`
		Tools         json.RawMessage `json:"tools"`
	}{d.Provider, d.Model, d.Surface, d.ProfileGuess, d.ContextWindow, d.MaxOutput, d.Tools})
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

// warner prints the harness's warnings on w, inert: they quote file and
// server names, an MCP server's output, what commands wrote.
func warner(w io.Writer) func(string) {
	return func(msg string) {
		// A line break in what a warning quotes (a file name) cannot
		// start a line that looks like Truss's own.
		fmt.Fprintf(w, "truss: %s\n", strings.ReplaceAll(termsafe.String(msg), "\n", "\n  │ "))
	}
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", " ") }
