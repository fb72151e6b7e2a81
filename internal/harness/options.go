package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/approval"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/mcp/client"
	"github.com/trussdev/truss/internal/model"
	"github.com/trussdev/truss/internal/sandbox"
	"github.com/trussdev/truss/internal/sim"
	"github.com/trussdev/truss/internal/surface"
	"github.com/trussdev/truss/internal/tool/shell"
	"github.com/trussdev/truss/internal/validate"
)

// Options configure a session. They are plain values: zero values take the
// defaults, the project's configuration (.truss/config.toml) and the
// environment, as `truss run` does without flags.
type Options struct {
	// Version is Truss's version, recorded in the ledger and sent to MCP
	// servers.
	Version string

	// Provider names the provider (Providers(): "anthropic", "openai",
	// "chat", "ollama", "sim"); "" picks it from the environment. Model is
	// the model ("" for $TRUSS_MODEL, else the provider's default).
	Provider string
	Model    string
	// Interactive is set by an interactive session, whose model changes
	// within it (/model): advice that would name a command line's flag
	// for another provider says to start a session with it instead.
	Interactive bool
	// Surface is the tool surface: "" or "auto" picks the model's trained
	// surface, "generic" forces Truss's function tools.
	Surface string
	// Script is the simulated model's script file (DemoScript for the
	// bundled demo fix), SimDialect the dialect it speaks ("" for
	// anthropic), SimRoot the workspace it names files in.
	Script     string
	SimDialect string
	SimRoot    string
	// SimScript, when set, is the simulated model's script itself,
	// parsed: it is played instead of Script's file (a benchmark's
	// per-instance script).
	SimScript *sim.Script
	// ServerTools are provider-executed tools to enable (Anthropic's
	// web_search, ...); Stateful chains Responses API turns with
	// previous_response_id.
	ServerTools []string
	Stateful    bool
	// Region and Project are a cloud platform's (Vertex AI's) location
	// and project, before its variables; APIVersion the API version of a
	// versioned API (Azure OpenAI's), before AZURE_OPENAI_API_VERSION.
	// A provider that takes none of them refuses them.
	Region, Project, APIVersion string
	// ContextEditing asks Anthropic's API to clear old tool results
	// itself as the context fills (context management,
	// clear_tool_uses; the memory tool's results are kept), on top of
	// Truss's own compaction. Other dialects ignore it.
	ContextEditing bool
	// ReasoningEffort, ThinkingTokens and ContextTokens override the
	// model profile's settings: "" / nil / 0 keep the profile's (a
	// ThinkingTokens of 0 turns thinking off).
	ReasoningEffort string
	ThinkingTokens  *int
	ContextTokens   int

	// Root is the workspace root ("" for the current directory, or the
	// resumed session's); ReadOnlyDirs and WritableDirs are extra roots.
	Root         string
	ReadOnlyDirs []string
	WritableDirs []string
	// ShellTimeout is a command's timeout (0: shell.DefaultTimeout);
	// AllowEnv names variables commands get although Truss withholds them.
	ShellTimeout time.Duration
	AllowEnv     []string
	// MemoryDir is the memory tool's directory ("" for one per project
	// under the user's data directory).
	MemoryDir string
	// CacheName names the workspace's build caches instead of its path
	// (one cache for every demo, though each has a new directory).
	CacheName string
	// PrivateCaches gives the commands of a workspace-write session build
	// and package caches of its own instead of the workspace's (or
	// CacheName's), which every session of it shares: a writable layer in
	// the session's temporary directory, removed with the session, over
	// the trusted caches read-only (Go's build cache through a cache
	// program reading the user's Go build cache and Truss's warm one in
	// place; pip's and npm's as overlays of the user's). Nothing a command
	// writes to a cache — a planted Go build cache entry included — is
	// seen by another session, and the trusted caches are never written.
	// CacheName is then unused. A read-only session's commands always
	// have caches of this kind (they write nothing of the workspace's).
	PrivateCaches bool
	// TempDir is the directory the session makes its temporary directory
	// and its private directory in ("" for os.TempDir): a directory of a
	// benchmark's own, which the sandbox of every other run covers.
	TempDir string
	// Sandbox is what commands may do.
	Sandbox SandboxOptions

	// Budget bounds each Run; MaxResultChars the tool result text the
	// model reads (0: 30,000).
	Budget         agent.Budget
	MaxResultChars int

	// SessionDir is where sessions are stored ("" for the user's
	// session directory). Resume continues the session with this id.
	// NoSession saves no session (and so writes no ledger unless
	// LedgerDir is set); NoLedger writes no ledger.
	SessionDir string
	Resume     string
	NoSession  bool
	NoLedger   bool
	// LedgerDir, with NoSession, is the directory of the session's ledger
	// (which must not hold one yet): a ledger without a session store.
	LedgerDir string
	// Ledger, when set, is the ledger the session records into instead
	// of one it creates (LedgerDir and the session store's are then
	// unused): session.start … session.end and a checkpoint after every
	// Run go into it. The session does not close it: Close drains the
	// session's recorder and leaves the writer open to its owner, who
	// may append further entries (a benchmark's verdict) and closes it.
	Ledger *ledger.Writer
	// KeyDir holds the signing key ("" for the installation's).
	KeyDir string

	// Validation configures the project's checks and the verification
	// boundary.
	Validation ValidationOptions
	// Spawn configures sub-agents.
	Spawn SpawnOptions
	// MCP configures the MCP servers whose tools the model is offered.
	MCP MCPOptions

	// Observers get every event of every Run, after the session's own
	// recorders (the observer contract of agent.Observer holds).
	Observers []agent.Observer
	// ObserveChild, when set, returns an observer of a sub-agent's events
	// (name is its session id below the top agent's, "call_1.call_2").
	ObserveChild func(name string) agent.Observer
	// OnRetry is told of each retry of a model request; OnWarning of
	// anything the user should know (an untrusted configuration, a model
	// without a profile, a request near the context limit, an MCP server's
	// trouble, a ledger or session that could not be written). Either may
	// be nil.
	OnRetry   func(attempt int, wait time.Duration, err error)
	OnWarning func(msg string)

	// NoModel opens the workspace, its executors and its records without a
	// model: Run fails, Execute and ServeMCP work (truss tool call, truss
	// mcp serve).
	NoModel bool
	// Tools, when set, is the tool set instead of the surface's (truss
	// tool call offers every version of a surface's tools).
	Tools *surface.Set
	// Serve, when set, makes the session an MCP server's: Truss's tools
	// for an MCP client (ServeMCP), recorded with this transport ("stdio",
	// "http ADDR"). It implies NoModel.
	Serve string

	// Approval is when a person is asked before a command runs
	// (approval.Never, the default, OnRequest, Untrusted); Approver asks
	// (nil: approval.Headless, which refuses what needs approval without
	// waiting). Under a policy other than never the shell tools offer to
	// run a command escalated, outside the sandbox, once approved.
	Approval approval.Policy
	Approver approval.Approver
	// ApprovalEdits is whether the Approver is asked before every file
	// edit, shown its diff (approval.EditsAsk), or not
	// (approval.EditsAccept); "" takes the user's configuration
	// (approval_edits), else accept. With ask, Open fails with a
	// ConfigError when nobody can answer (the Approver is nil or
	// approval.Unattended) or the policy is never (docs/approvals.md).
	ApprovalEdits approval.EditPolicy
	// Env is the task environment the tools run in: "host" (the sandbox)
	// or "image:REF" (a container from the OCI image REF, which must be in
	// the engine's store; docs/environments.md). "" takes the project's
	// configuration ([env] image, obeyed only when trusted), else the
	// host.
	Env string
	// Engine is the container engine for an image: "podman", "docker", or
	// "" for the configuration's, else the first that works.
	Engine string
	// EnvWorkdir is where the workspace is mounted in the container: ""
	// for the configuration's, else the image's working directory, else
	// /workspace (SWE-bench's images: /testbed).
	EnvWorkdir string

	// failAt makes Open fail at the named step (tests of the error paths).
	failAt string
	// sequentialStart prepares the ledger before Open returns, as before
	// the first request left first (the tests' comparison; prepare.go).
	sequentialStart bool
	// prepGate, when set, holds the preparation until it is closed (tests
	// of what must wait for it).
	prepGate chan struct{}
}

// SandboxOptions configure the sandbox of the session's commands.
type SandboxOptions struct {
	// Mode is what commands may write ("": the project's configuration,
	// else sandbox.WorkspaceWrite).
	Mode sandbox.Mode
	// Network allows network access (nil: the project's configuration,
	// else off).
	Network *bool
	// Fallback accepts a weaker mode where the host cannot enforce one.
	Fallback sandbox.Fallback
	// Memory and DiskBudget limit the commands together, in bytes (0:
	// the default; -1: no limit).
	Memory, DiskBudget int64
	// Hidden are further paths no command may read, list or write
	// (sandbox.Policy.Hidden): a benchmark's hidden tests, its task file
	// and its results.
	Hidden []string
	// Covered are further directories commands see empty but for what the
	// sandbox keeps in them, the workspace and its caches, bound back
	// (sandbox.Policy.Covered): a benchmark's directory of every run's
	// workspace, where a run sees only its own.
	Covered []string
}

// NoChecksNote is what a user is told when a session opens with
// validation on but no checks, configured or detected (Info.Validation
// false): before the work, not found missing after it.
const NoChecksNote = "checks: none configured or detected here, so Truss will not verify the work; give --test-cmd CMD, or test under [validate] in .truss/config.toml"

// ValidationOptions configure the project's checks.
type ValidationOptions struct {
	// Off offers no validate tool and runs no checks.
	Off bool
	// TestCmd is the test command ("" for the configured or detected
	// one); SetupCmds run before it.
	TestCmd   string
	SetupCmds []string
	// OnDemand runs the verification boundary only when Validate is
	// called, not at the end of every Run.
	OnDemand bool
	// Background (the interactive session) runs the boundary after a Run
	// only when the task changed files (or when changes are not tracked),
	// in the background: Run returns at once with the Check, which the
	// next Run, Validate or Close cancels if it still runs. Validate runs
	// it on demand.
	Background bool
}

// SpawnOptions configure sub-agents.
type SpawnOptions struct {
	// Off offers no spawn tool.
	Off bool
	// MaxDepth is how deep agents nest (0: 2); MaxParallel how many
	// children one agent runs at once (0: 4); MaxTurns a child's turn
	// limit unless its call or definition sets one (0: 30).
	MaxDepth, MaxParallel, MaxTurns int
}

// MCPOptions configure the MCP servers.
type MCPOptions struct {
	// Off starts no servers.
	Off bool
	// Servers are added to the configuration's; one replaces a configured
	// server of the same name.
	Servers []MCPServer
	// Wait is how long the first turn waits for servers to start (nil:
	// the configuration's startup_wait, else DefaultMCPWait).
	Wait *time.Duration
}

// MCPServer configures one MCP server: Command (with Args, Env and Dir)
// for a stdio server, or URL (with Headers) for a streamable-HTTP one.
type MCPServer = client.ServerConfig

// DefaultShellTimeout is a command's timeout when Options.ShellTimeout
// is 0.
const DefaultShellTimeout = shell.DefaultTimeout

// DefaultMCPWait is how long the first turn waits for MCP servers.
const DefaultMCPWait = time.Second

// Outcome is what one Run did.
type Outcome struct {
	// Agent is the agent loop's outcome (Usage is the session's so far).
	Agent agent.Outcome
	// Verdict is the verification boundary's; nil when it did not run.
	Verdict *Verdict
	// Background is the boundary running in the background
	// (ValidationOptions.Background); nil when none was started: the
	// task changed no file, or there are no checks.
	Background *BackgroundCheck
	// Changed is how many of this Run's tool calls changed files, as
	// the change tracker found them; -1 when changes are not tracked.
	Changed int
	// Unreached reports that the first request could not connect, or
	// found a server that is not the API (provider.Unreached): the model
	// was never reached and nothing happened.
	Unreached bool
	// NoResponse reports that the run failed before the model gave any
	// response in this session (Unreached, or an error status: a refused
	// key, an unknown model, a quota): there is nothing to resume, and
	// Close removes a session that Open created, unless a later Run gets a
	// response.
	NoResponse bool
	// SessionID is the session's id ("" when not saved).
	SessionID string
	// LedgerDir is the ledger's directory ("" when none is written);
	// LedgerSize and LedgerRoot the tree size and root hash its last
	// checkpoint signs, after this Run.
	LedgerDir  string
	LedgerSize uint64
	LedgerRoot []byte
	// Usage is the session's usage so far, sub-agents' included.
	Usage model.Usage
}

// Verdict is the verification boundary's outcome: the checks' summary and
// their full log.
type Verdict struct {
	validate.Summary
	Log string
	// TestCodeChanged lists the test code (validate.IsTestCode) the
	// session's calls changed: the checks ran the workspace's tests as
	// the model left them, so these files decided the verdict too (a
	// TestMain that exits 0 passes every check). Recorded in the ledger's
	// validation entry and warned about.
	TestCodeChanged []string
	// TestConfigChanged lists the test configuration the session's calls
	// changed in what decides a run (validate.IsTestConfig, and the root
	// file the checks' command was detected from: a Makefile, a
	// package.json's scripts, a go.mod's go, toolchain and replace
	// lines). Recorded as test_config_changed and warned about.
	TestConfigChanged []string
	// TestBinariesConfined reports that every test binary a go test of
	// the checks ran was confined further (sandbox.GoTestExec): none could
	// change a later package's sources, another package's test binary or
	// the build cache while the checks ran. Recorded in the ledger's
	// validation entry as test_binaries_confined.
	TestBinariesConfined bool
}

// Info describes an open session.
type Info struct {
	Provider, Model, Dialect, Surface string
	// Script is the simulated model's script (provider sim): the option,
	// or the one a resumed session saved.
	Script string
	// ProfileGuess reports that the model has no profile: default limits.
	ProfileGuess bool
	// Place is where a cloud platform's requests go: "project P, REGION"
	// on Vertex AI, "REGION" on Bedrock; "" for other providers.
	Place     string
	SessionID string
	// Workspace is the absolute workspace root; Sandbox the sandbox
	// actually enforced.
	Workspace string
	Sandbox   string
	// LedgerDir is the ledger's directory ("" when none is written).
	LedgerDir string
	// Validation reports that the project's checks are known (the
	// boundary runs).
	Validation bool
	// Environment describes the task environment the tools run in when
	// it is an image ("" on the host): the image, its ID, the engine, the
	// workspace's path in the container.
	Environment string
}

// ConfigError is an error in the options or the environment (a missing
// key, an unknown provider, a bad value): the caller's to fix, reported as
// a usage error.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// UsageError reports that a configuration error is the user's to fix, as a
// usage error is (exit status 2).
func (e *ConfigError) UsageError() bool { return true }

func configErrorf(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// IsConfigError reports whether err is a ConfigError.
func IsConfigError(err error) bool {
	var ce *ConfigError
	return errors.As(err, &ce)
}

// ErrClosed is returned by a Run on a closed session.
var ErrClosed = errors.New("harness: the session is closed")
