// Package sandbox confines every process a tool starts with the kernel's own
// mechanisms, under a policy: read-only, workspace-write (the default) or
// full access, with the network off (the default) or on.
//
// Truss never sandboxes itself. The persistent shell is started through a
// Launcher that re-executes the truss binary (or truss-sandbox, never from
// a place commands can write, and always through a descriptor opened when
// the sandbox was made) as a helper ("truss __sandbox-exec") in a new
// session, without a controlling terminal, and in new user, mount, PID,
// network, IPC and UTS namespaces. The helper, alone in those namespaces,
// joins the session's cgroups (pids, memory, a low CPU weight), makes its
// mounts private, mounts a fresh /proc (so the harness's processes and
// their environment are invisible) and a devpts of its own (the user's
// terminals are not there to be opened), binds the protected paths (a
// workspace's .git) read-only, covers the hidden ones, sets resource
// limits, applies a Landlock ruleset (read everywhere, write only the
// writable roots; no signals outside the sandbox), loads a seccomp filter
// (no other architecture's calls, no ptrace, no io_uring, no mounts or
// unmounts, no namespaces, no typing into a terminal), closes every
// descriptor but the standard streams, and only then executes bash. With
// the network off, the network namespace has only its loopback, up: TCP
// and UDP work inside it and reach nothing outside; /tmp is the sandbox's
// own, and /run, the SSH agent's directory and every Unix socket of the
// host's are covered, so the sandbox's own Unix servers work and the
// host's cannot be reached. Everything the shell runs inherits all of
// it, and when the shell is killed at a timeout, the PID namespace takes
// every process it started down with it. A watcher ends a fork bomb or a
// command past the disk budget as soon as it sees one, and Guard tells
// the shell which limit a command broke.
//
// What a host can enforce varies: Probe reports it and Plan turns a Policy
// into the mechanisms that will run, refusing to start when the policy
// cannot be enforced unless the caller accepts a named weaker mode. The
// Enforced string names what actually runs; it goes into the ledger.
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mode is what a sandboxed process may write.
type Mode string

// The modes.
const (
	ReadOnly       Mode = "read-only"       // read everywhere, write nowhere (but the session's temporary directory)
	WorkspaceWrite Mode = "workspace-write" // read everywhere, write the workspace, the temporary directory and configured roots
	FullAccess     Mode = "full"            // no file system restriction
)

// ParseMode reads a --sandbox value.
func ParseMode(s string) (Mode, error) {
	switch Mode(s) {
	case ReadOnly, WorkspaceWrite, FullAccess:
		return Mode(s), nil
	}
	return "", fmt.Errorf("unknown sandbox mode %q: choose read-only, workspace-write or full", s)
}

// Fallback names a weaker mode the user accepts when the host cannot
// enforce the policy fully.
type Fallback string

// The fallbacks.
const (
	// NoFallback refuses to start when anything is missing.
	NoFallback Fallback = ""
	// FallbackLandlock runs without namespaces: Landlock, seccomp and
	// resource limits only (no private /proc, no network namespace, no
	// read-only .git, no PID namespace).
	FallbackLandlock Fallback = "landlock-only"
	// FallbackNone runs with no sandbox at all.
	FallbackNone Fallback = "none"
)

// ParseFallback reads a --sandbox-fallback value.
func ParseFallback(s string) (Fallback, error) {
	switch Fallback(s) {
	case NoFallback, FallbackLandlock, FallbackNone:
		return Fallback(s), nil
	}
	return "", fmt.Errorf("unknown sandbox fallback %q: choose landlock-only or none", s)
}

// Overlay is a directory of commands' own over a read-only lower layer
// (Policy.Overlays): Target, Upper and Work in writable roots, Work on
// Upper's file system; Lower is never written.
type Overlay struct {
	Target string `json:"target"`
	Lower  string `json:"lower"`
	Upper  string `json:"upper"`
	Work   string `json:"work"`
}

// Policy is what the user asked for.
type Policy struct {
	Mode    Mode `json:"mode"`
	Network bool `json:"network"` // false: no network but Unix sockets
	// Workspace is the workspace root (writable in workspace-write mode).
	Workspace string `json:"workspace"`
	// Writable are further writable roots (--add-dir, caches).
	Writable []string `json:"writable,omitempty"`
	// Readable are further roots commands read but never write
	// (--add-dir-ro). Everything is readable anyway; they are named so
	// that they stay visible at their paths where the sandbox replaces a
	// directory with one of its own (/tmp).
	Readable []string `json:"readable,omitempty"`
	// Protected are paths kept read-only inside writable roots (a
	// workspace's .git and its resolved gitdir); missing ones are skipped.
	Protected []string `json:"protected,omitempty"`
	// HideShell hides the shell (PID 1 of the sandbox) from its commands:
	// /proc/1 is covered, so none can open the pipe it reads its commands
	// from, or its memory, and have lines of its own run as the shell.
	// For shells whose commands may run code the host must not let
	// command the shell (a grading's setup commands run the graded
	// patch's build scripts); the price is the shell's own /dev/fd/N
	// redirections (`done < <(cmd)` at the shell's top level). Only with
	// namespaces.
	HideShell bool `json:"hide_shell,omitempty"`
	// Hidden are files and directories sandboxed processes must not read
	// at all, though the policy reads everywhere: the ledger's signing key
	// (a process that read it could forge a ledger), the saved sessions
	// and the user's credentials (DefaultHiddenCredentials). A directory
	// is covered by an empty read-only one, a file by an empty file, each
	// when a shell's helper starts (symbolic links followed); a path
	// missing then is skipped: a command can make one only where it may
	// write (then what it reads is its own), and a file that appears
	// later is hidden from the shells started after it. Covers cannot be
	// taken off by any command, an escalation's included (seccomp refuses
	// every unmount and mount). Only with namespaces.
	Hidden []string `json:"hidden,omitempty"`
	// Covered are directories commands see empty and read-only but for
	// the paths the policy keeps visible in them — the workspace, the
	// writable and the readable roots — bound back at their places, as
	// the private /tmp keeps them (their symbolic links to places outside
	// them are made again): a directory of many runs' workspaces, of which
	// each run's commands must see their own and no other's. A missing
	// one, or one under the private /tmp, is skipped. Like Hidden, only
	// with namespaces, and no command can take a cover off.
	Covered []string `json:"covered,omitempty"`
	// Overlays are directories in writable roots that commands see as a
	// read-only lower layer (a trusted cache of the host's) with what they
	// write going to an upper layer of their own: warm, and no command
	// writes the lower one. Only with namespaces, and where the kernel
	// mounts overlayfs in a user namespace (Linux 5.11); elsewhere each
	// Target is the empty directory it was.
	Overlays []Overlay `json:"overlays,omitempty"`
	// TempDir is the session's temporary directory, always writable.
	TempDir string `json:"temp_dir"`
	// Limits are the resource limits of every sandboxed process.
	Limits Limits `json:"limits"`
}

// Limits are resource limits; zero fields take the defaults.
type Limits struct {
	// Pids bounds the processes and threads alive at once (a pids cgroup,
	// else RLIMIT_NPROC, which root ignores); 0 means 4096.
	Pids int `json:"pids"`
	// FileSize bounds the size of a file a process writes (RLIMIT_FSIZE);
	// 0 means 4 GiB.
	FileSize int64 `json:"file_size"`
	// OpenFiles bounds open descriptors per process (RLIMIT_NOFILE); 0
	// means 8192.
	OpenFiles uint64 `json:"open_files"`
	// Memory bounds the memory of the session's commands together (a
	// memory cgroup, else RLIMIT_DATA per process); 0 means 4 GiB or half
	// the machine's memory, whichever is less; negative means no limit.
	Memory int64 `json:"memory"`
	// DiskBudget bounds the bytes the session's commands write to disk,
	// all together; a command that writes past it is killed. 0 means half
	// the free space of the workspace's file system when the session
	// starts, at most 64 GiB; negative means no budget.
	DiskBudget int64 `json:"disk_budget"`
	// CPUWeight is the commands' share of the CPU against a sibling group
	// of the default weight, 100 (cgroup v2's cpu.weight, 1–10000; v1's
	// cpu.shares scaled to 1024). 0 means DefaultCPUWeight, a tenth: an
	// agent's commands yield to the user's own work. A grading, which
	// measures tests, sets 100.
	CPUWeight int `json:"cpu_weight,omitempty"`
}

// The defaults of Limits.
const (
	DefaultCPUWeight  = 10
	DefaultPids       = 4096
	DefaultFileSize   = 4 << 30
	DefaultOpenFiles  = 8192
	DefaultMemory     = 4 << 30
	DefaultDiskBudget = 64 << 30
)

// norm fills in the defaults; workspace is where the disk budget is
// measured from.
func (l Limits) norm(workspace string) Limits {
	if l.Pids == 0 {
		l.Pids = DefaultPids
	}
	if l.CPUWeight <= 0 {
		l.CPUWeight = DefaultCPUWeight
	}
	l.CPUWeight = min(l.CPUWeight, 10000)
	if l.FileSize == 0 {
		l.FileSize = DefaultFileSize
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultOpenFiles
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
		if total := totalMemory(); total > 0 && total/2 < l.Memory {
			l.Memory = total / 2
		}
	}
	if l.DiskBudget == 0 {
		l.DiskBudget = DefaultDiskBudget
		if free := freeSpace(workspace); free > 0 && free/2 < l.DiskBudget {
			l.DiskBudget = free / 2
		}
	}
	return l
}

// tmpSize is the size of the sandbox's own /tmp and /dev/shm: they hold
// memory, so the memory limit bounds them, and the disk budget as well
// when it is smaller (0: no bound of either).
func (l Limits) tmpSize() int64 {
	var n int64
	for _, v := range []int64{l.Memory, l.DiskBudget} {
		if v > 0 && (n == 0 || v < n) {
			n = v
		}
	}
	return n
}

// ParseSize reads a size: a number of bytes with an optional unit (K, M,
// G, T; KB/KiB alike, powers of 1024), or "none" (-1, no limit).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "none" || t == "off" {
		return -1, nil
	}
	mult := int64(1)
units:
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"t", 1 << 40}, {"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}, {"", 1}} {
		for _, form := range []string{u.suffix + "ib", u.suffix + "b", u.suffix} {
			if v, ok := strings.CutSuffix(t, form); ok && form != "" && form != "ib" {
				t, mult = strings.TrimSpace(v), u.m
				break units
			}
		}
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || !(n*float64(mult) >= 1 && n*float64(mult) <= 1<<62) { // NaN fails too
		return 0, fmt.Errorf("bad size %q: write a positive number of bytes with an optional unit (512M, 2G) or none", s)
	}
	return int64(n * float64(mult)), nil
}

// FormatSize writes a size in the largest unit that keeps it readable.
func FormatSize(n int64) string {
	switch {
	case n < 0:
		return "none"
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// DefaultPolicy is workspace-write with the network off for a workspace:
// its .git protected, and a temporary directory. Nothing of the host's
// beyond the workspace is writable: the user's build and package caches
// stay read-only (a command that wrote them could change what later builds
// on the host compile); whoever composes a session adds the caches that
// are the session's own to Writable.
func DefaultPolicy(workspace, tempDir string) Policy {
	return Policy{Mode: WorkspaceWrite, Workspace: workspace, TempDir: tempDir, Protected: GitPaths(workspace)}
}

// credentialPaths are the user's credentials below the home directory,
// hidden from commands by default: keys, cloud and cluster credentials,
// registry and package-index tokens, password files.
var credentialPaths = []string{
	".ssh", ".gnupg", ".password-store", ".local/share/keyrings",
	".aws", ".azure", ".config/gcloud", ".oci", ".kube", ".config/doctl", ".config/hcloud",
	".netrc", ".git-credentials", ".config/git/credentials", ".config/gh", ".config/hub",
	".docker/config.json", ".config/containers/auth.json",
	".npmrc", ".yarnrc.yml", ".pypirc", ".gem/credentials", ".cargo/credentials", ".cargo/credentials.toml",
	".m2/settings-security.xml", ".terraform.d/credentials.tfrc.json", ".vault-token",
	".pgpass", ".my.cnf", ".s3cfg", ".boto", ".config/rclone/rclone.conf",
	// NATS: nsc's NKey seeds and credentials, the nats CLI's contexts.
	".nkeys", ".local/share/nats", ".config/nats",
	// Other agents' and assistants' sign-ins.
	".claude/.credentials.json", ".codex/auth.json", ".config/op",
	".gemini/oauth_creds.json", ".gemini/google_accounts.json", ".config/github-copilot", ".codeium",
	// Encryption identities.
	".config/sops/age", ".config/age", ".authinfo", ".authinfo.gpg",
	// Package indexes, build tools and platforms.
	".m2/settings.xml", ".gradle/gradle.properties", ".composer/auth.json", ".config/composer/auth.json",
	".nuget/NuGet/NuGet.Config", ".config/NuGet/NuGet.Config", ".huggingface/token", ".cache/huggingface/token",
	".kaggle/kaggle.json", ".terraformrc", ".pulumi/credentials.json", ".databrickscfg", ".fly",
	".config/glab-cli", ".vercel", ".local/share/com.vercel.cli", ".wrangler", ".config/.wrangler",
	".config/configstore/firebase-tools.json", ".config/heroku", ".netlify/config.json",
	".config/stripe", ".config/ngrok", ".ngrok2", ".cloudflared", ".config/io.datasette.llm", ".continue",
	".config/helm", ".minikube", ".bundle/config", ".config/pip/pip.conf", ".pip/pip.conf", ".circleci",
	".supabase", ".ollama/id_ed25519", ".tsh", ".config/discord", ".Xauthority",
	// Browsers' profiles (cookies, saved passwords).
	".mozilla", ".config/google-chrome", ".config/chromium", ".config/BraveSoftware", ".config/microsoft-edge",
	// What the user typed: shell and client histories.
	".bash_history", ".zsh_history", ".zhistory", ".histfile", ".local/share/atuin", ".local/share/fish/fish_history", ".psql_history", ".mysql_history",
	".python_history", ".node_repl_history", ".sqlite_history", ".rediscli_history",
}

// DefaultHiddenCredentials returns the user's credential files and
// directories below home (~/.ssh, ~/.aws, ~/.config/gcloud, ~/.azure,
// ~/.kube, ~/.netrc, ~/.git-credentials, ~/.docker/config.json, ~/.npmrc,
// ~/.pgpass, ~/.gnupg, ~/.config/gh, ~/.pypirc, ~/.cargo/credentials,
// ~/.terraform.d/credentials.tfrc.json and the like), for Policy.Hidden.
// Whoever composes a session adds them, with the paths the user's
// configuration adds, less those it releases; none are skipped here for
// being missing (the helper skips those when it starts). The list is
// fresh: callers may change it.
func DefaultHiddenCredentials(home string) []string {
	if home == "" {
		return nil
	}
	out := make([]string, 0, len(credentialPaths))
	for _, rel := range credentialPaths {
		out = append(out, filepath.Join(home, rel))
	}
	return out
}

// GitPaths returns the .git of a workspace and, when .git is a "gitdir:"
// pointer file (a worktree or submodule), the directory it names.
func GitPaths(workspace string) []string {
	g := filepath.Join(workspace, ".git")
	fi, err := os.Lstat(g)
	if err != nil {
		return nil
	}
	out := []string{g}
	if fi.Mode().IsRegular() {
		if b, err := os.ReadFile(g); err == nil {
			if dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
				dir = strings.TrimSpace(dir)
				if !filepath.IsAbs(dir) {
					dir = filepath.Join(workspace, dir)
				}
				out = append(out, filepath.Clean(dir))
			}
		}
	}
	return out
}

// writable returns the roots a process may write under the policy.
func (p Policy) writable() []string {
	var out []string
	if p.TempDir != "" {
		out = append(out, p.TempDir)
	}
	if p.Mode == WorkspaceWrite {
		if p.Workspace != "" {
			out = append(out, p.Workspace)
		}
		out = append(out, p.Writable...)
	}
	return out
}

// Host is what this machine can enforce.
type Host struct {
	OS string `json:"os"`
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int    `json:"landlock_abi"`
	LandlockErr string `json:"landlock_error,omitempty"`
	// UserNS reports that an unprivileged process can create user (and
	// with them mount, PID, network, IPC and UTS) namespaces.
	UserNS    bool   `json:"user_namespaces"`
	UserNSErr string `json:"user_namespaces_error,omitempty"`
	Seccomp   bool   `json:"seccomp"`
	// Cgroup is where a pids cgroup can be made ("" when none can).
	Cgroup    string `json:"cgroup,omitempty"`
	CgroupErr string `json:"cgroup_error,omitempty"`
	// MemoryCgroup and CPUCgroup are where a memory and a cpu cgroup can
	// be made ("" when none can).
	MemoryCgroup    string `json:"memory_cgroup,omitempty"`
	MemoryCgroupErr string `json:"memory_cgroup_error,omitempty"`
	CPUCgroup       string `json:"cpu_cgroup,omitempty"`
	CPUCgroupErr    string `json:"cpu_cgroup_error,omitempty"`
}

// Mechanisms are what a Plan runs.
type Mechanisms struct {
	Namespaces bool `json:"namespaces"`
	Landlock   int  `json:"landlock_abi"` // the ABI used, 0 for none
	Seccomp    bool `json:"seccomp"`
	// Cgroup, MemoryCgroup and CPUCgroup are the parents of the session's
	// pids, memory and cpu cgroups ("" for none).
	Cgroup       string `json:"cgroup,omitempty"`
	MemoryCgroup string `json:"memory_cgroup,omitempty"`
	CPUCgroup    string `json:"cpu_cgroup,omitempty"`
	Rlimits      bool   `json:"rlimits"`
}

// Plan is a policy with the mechanisms that enforce it on this host.
type Plan struct {
	Policy     Policy     `json:"policy"`
	Mechanisms Mechanisms `json:"mechanisms"`
	// Weaker names the fallback accepted, when one was needed.
	Weaker Fallback `json:"weaker,omitempty"`
	// Missing lists what the policy wanted and the host lacks.
	Missing []string `json:"missing,omitempty"`
}

// Active reports whether processes run through the helper at all.
func (pl *Plan) Active() bool {
	m := pl.Mechanisms
	return m.Namespaces || m.Landlock > 0 || m.Seccomp
}

// Enforced describes the mode actually enforced, for the session header
// and the ledger: "workspace-write, network off (namespaces, landlock
// v7, seccomp, pids cgroup, rlimits)", or "none (not enforced)".
func (pl *Plan) Enforced() string {
	if !pl.Active() {
		if pl.Policy.Mode == FullAccess && pl.Policy.Network {
			return "full, network on (no sandbox requested)"
		}
		return "none (not enforced)"
	}
	net := "network off"
	if pl.Policy.Network {
		net = "network on"
	}
	var ms []string
	m := pl.Mechanisms
	if m.Namespaces {
		ms = append(ms, "namespaces")
	}
	if m.Landlock > 0 {
		ms = append(ms, fmt.Sprintf("landlock ABI v%d", m.Landlock))
	}
	if m.Seccomp {
		ms = append(ms, "seccomp")
	}
	var cgs []string
	for _, c := range []struct{ name, dir string }{{"pids", m.Cgroup}, {"memory", m.MemoryCgroup}, {"cpu", m.CPUCgroup}} {
		if c.dir != "" {
			cgs = append(cgs, c.name)
		}
	}
	if len(cgs) > 0 {
		ms = append(ms, strings.Join(cgs, "+")+" cgroup")
	}
	if m.Rlimits {
		ms = append(ms, "rlimits")
	}
	s := fmt.Sprintf("%s, %s (%s)", pl.Policy.Mode, net, strings.Join(ms, ", "))
	if pl.Weaker != NoFallback {
		s += fmt.Sprintf("; weaker mode %s accepted: no %s", pl.Weaker, strings.Join(pl.Missing, ", no "))
	}
	return s
}

// MakePlan decides how to enforce a policy on a host. It fails, naming what
// is missing and the fallbacks that would accept it, when the policy cannot
// be fully enforced and fallback does not accept the shortfall.
func MakePlan(p Policy, h Host, fallback Fallback) (*Plan, error) {
	p.Limits = p.Limits.norm(p.Workspace)
	pl := &Plan{Policy: p}
	if p.Mode == FullAccess && p.Network {
		return pl, nil // nothing to enforce
	}
	needFS := p.Mode != FullAccess
	var missing []string
	if !h.UserNS {
		missing = append(missing, "namespaces ("+orUnknown(h.UserNSErr)+")")
	}
	if needFS && h.LandlockABI < 1 {
		missing = append(missing, "landlock ("+orUnknown(h.LandlockErr)+")")
	}
	if !p.Network && !h.Seccomp {
		missing = append(missing, "seccomp")
	}
	pl.Missing = missing
	if len(missing) > 0 {
		switch fallback {
		case FallbackNone:
			pl.Weaker = FallbackNone
			return pl, nil
		case FallbackLandlock:
			if needFS && h.LandlockABI < 1 {
				return nil, fmt.Errorf("cannot enforce the %s sandbox on this host even without namespaces: no %s; run with --sandbox-fallback none to run unsandboxed, or --sandbox full", p.Mode, strings.Join(missing, ", no "))
			}
			pl.Weaker = FallbackLandlock
		default:
			return nil, fmt.Errorf("cannot enforce the %s sandbox on this host: no %s; run `truss sandbox check` for details, or accept a weaker mode with --sandbox-fallback landlock-only (or none)", p.Mode, strings.Join(missing, ", no "))
		}
	}
	pl.Mechanisms = Mechanisms{
		Namespaces: h.UserNS,
		Seccomp:    h.Seccomp,
		Rlimits:    true,
	}
	if h.Cgroup != "" {
		pl.Mechanisms.Cgroup = h.Cgroup
	}
	if h.MemoryCgroup != "" && p.Limits.Memory > 0 {
		pl.Mechanisms.MemoryCgroup = h.MemoryCgroup
	}
	pl.Mechanisms.CPUCgroup = h.CPUCgroup
	if needFS {
		pl.Mechanisms.Landlock = min(h.LandlockABI, maxLandlockABI)
	}
	return pl, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unavailable"
	}
	return s
}

// landlockPathSockets is the Landlock ABI that restricts connecting to
// Unix sockets named in the file system.
const landlockPathSockets = 9

// Protection is one way out of the sandbox, and whether a plan closes it
// on this host.
type Protection struct {
	Name     string `json:"name"`
	Enforced bool   `json:"enforced"`
	// How is the mechanism that closes it, or why it is open.
	How string `json:"how"`
}

// Protections lists each way out of the sandbox a plan closes, or leaves
// open, on host h (the host the plan was made for).
func (pl *Plan) Protections(h Host) []Protection {
	m, p := pl.Mechanisms, pl.Policy
	active := pl.Active()
	var out []Protection
	add := func(name string, ok bool, how string) {
		out = append(out, Protection{Name: name, Enforced: ok, How: how})
	}
	none := "no sandbox"
	if !active {
		for _, n := range []string{"helper", "terminal", "unix sockets", "abstract sockets", "signals", "descriptors", "namespaces", "architectures", "memory", "cpu", "processes", "file size", "disk budget"} {
			add(n, false, none)
		}
		return out
	}
	helper, herr := helperCheck(p)
	add("helper", herr == nil, helper)
	switch {
	case m.Seccomp && m.Namespaces:
		add("terminal", true, "a new session without a controlling terminal; a devpts of its own (the user's /dev/pts/N are not there); TIOCSTI and TIOCLINUX refused (seccomp)")
	case m.Seccomp:
		add("terminal", true, "a new session without a controlling terminal; TIOCSTI and TIOCLINUX refused (seccomp); but the user's /dev/pts/N can be opened by path (no namespaces)")
	default:
		add("terminal", false, "a new session without a controlling terminal, but TIOCSTI is not refused on a terminal a command opens (no seccomp)")
	}
	switch {
	case p.Network:
		add("unix sockets", false, "the network is on")
	case m.Namespaces:
		add("unix sockets", true, "a mount namespace: /run and /var/run covered, /tmp of its own, the SSH agent's directory and every socket of the host's covered; the sandbox's own sockets work")
	case m.Landlock >= landlockPathSockets:
		add("unix sockets", true, fmt.Sprintf("Landlock v%d refuses sockets named in the file system outside the sandbox", m.Landlock))
	case m.Seccomp:
		add("unix sockets", true, fmt.Sprintf("seccomp refuses connect() and datagram sockets (Landlock v%d cannot tell the sandbox's own sockets apart; v%d can); socketpair works", m.Landlock, landlockPathSockets))
	default:
		add("unix sockets", false, "no seccomp and no Landlock v9")
	}
	switch {
	case p.Network:
		add("abstract sockets", false, "the network is on")
	case m.Namespaces:
		add("abstract sockets", true, "a network namespace of its own")
	case m.Landlock >= 6:
		add("abstract sockets", true, "Landlock scope")
	default:
		add("abstract sockets", false, "no network namespace and no Landlock v6")
	}
	switch {
	case m.Namespaces:
		add("signals", true, "a PID namespace of its own")
	case m.Landlock >= 6:
		add("signals", true, "Landlock scope")
	default:
		add("signals", false, "no PID namespace and no Landlock v6: commands can signal the user's processes")
	}
	add("descriptors", true, "every descriptor but 0, 1 and 2 is closed before the command runs")
	if m.Seccomp {
		add("namespaces", true, "seccomp refuses unshare, setns and clone with namespace flags; clone3 answers ENOSYS")
		add("architectures", true, "seccomp kills system calls of any architecture but the native one; x32 calls fail")
	} else {
		add("namespaces", false, "no seccomp")
		add("architectures", false, "no seccomp")
	}
	switch {
	case p.Limits.Memory < 0:
		add("memory", false, "no limit requested")
	case m.MemoryCgroup != "":
		add("memory", true, fmt.Sprintf("memory cgroup: %s for the session", FormatSize(p.Limits.Memory)))
	default:
		add("memory", false, fmt.Sprintf("RLIMIT_DATA %s per process only (no memory cgroup: %s)", FormatSize(p.Limits.Memory), orUnknown(h.MemoryCgroupErr)))
	}
	switch {
	case m.CPUCgroup != "" && p.Limits.nice() > 0:
		add("cpu", true, fmt.Sprintf("cpu cgroup at a weight of %d against the default 100; niced", p.Limits.CPUWeight))
	case m.CPUCgroup != "":
		add("cpu", true, fmt.Sprintf("cpu cgroup at a weight of %d against the default 100", p.Limits.CPUWeight))
	case p.Limits.nice() > 0:
		add("cpu", false, "niced only (no cpu cgroup: "+orUnknown(h.CPUCgroupErr)+")")
	default:
		add("cpu", false, "the default weight (no cpu cgroup: "+orUnknown(h.CPUCgroupErr)+")")
	}
	switch {
	case m.Cgroup != "":
		add("processes", true, fmt.Sprintf("pids cgroup: %d; a command that keeps hitting it is killed", p.Limits.Pids))
	case os.Getuid() == 0:
		add("processes", false, "RLIMIT_NPROC only, which root ignores (no pids cgroup: "+orUnknown(h.CgroupErr)+")")
	default:
		add("processes", true, fmt.Sprintf("RLIMIT_NPROC %d (no pids cgroup: %s)", p.Limits.Pids, orUnknown(h.CgroupErr)))
	}
	add("file size", true, "RLIMIT_FSIZE "+FormatSize(p.Limits.FileSize))
	switch {
	case p.Limits.DiskBudget < 0:
		add("disk budget", false, "no budget requested")
	case m.Cgroup != "" || m.MemoryCgroup != "" || m.CPUCgroup != "":
		add("disk budget", true, FormatSize(p.Limits.DiskBudget)+" written per session; a command past it is killed")
	default:
		add("disk budget", false, "no cgroup to account the session's writes by")
	}
	return out
}

// nice is the niceness of sandboxed processes: at a weight under the
// default, 10 (their CPU time yields to the user's programs when the
// machine is busy); at the default weight or more, 0.
func (l Limits) nice() int {
	if l.CPUWeight > 0 && l.CPUWeight < 100 {
		return 10
	}
	return 0
}
