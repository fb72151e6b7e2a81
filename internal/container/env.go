package container

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/hostfs"
)

// The labels every container of a session carries.
const (
	// LabelSession names the session (Config.Session).
	LabelSession = "truss.session"
	// LabelOwnerPID, LabelOwnerStart, LabelOwnerBoot and LabelOwnerHost
	// identify the owning process: its pid, its start time in clock ticks
	// since boot (/proc/PID/stat), the kernel's boot ID and the host name.
	// A pid reused by another process has another start time.
	LabelOwnerPID   = "truss.owner.pid"
	LabelOwnerStart = "truss.owner.start"
	LabelOwnerBoot  = "truss.owner.boot"
	LabelOwnerHost  = "truss.owner.host"
	// LabelState is the host directory the container shares with Truss
	// (the shells' saved state); Reap removes it with the container.
	LabelState = "truss.state"
	labelProbe = "truss.probe"
)

// DefaultWorkdir is where the workspace is mounted when the image names no
// working directory.
const DefaultWorkdir = "/workspace"

// Limits are a container's resource limits; zero fields mean no limit.
type Limits struct {
	// CPUs is the number of CPUs (--cpus).
	CPUs float64 `json:"cpus,omitempty"`
	// Memory is the memory limit in bytes (--memory).
	Memory int64 `json:"memory,omitempty"`
	// Pids bounds the processes and threads alive at once (--pids-limit).
	Pids int `json:"pids,omitempty"`
	// OpenFiles bounds each process's open descriptors (--ulimit nofile);
	// at most the host's hard limit.
	OpenFiles uint64 `json:"open_files,omitempty"`
}

// Config is one session environment.
type Config struct {
	// Image is the image reference; it must be present in the engine's
	// store (Start never pulls; Engine.Ensure does).
	Image string
	// Workspace is the host directory mounted read-write in the container.
	Workspace string
	// Workdir is where the workspace is mounted; "" means the image's
	// working directory, else DefaultWorkdir.
	Workdir string
	// Network gives the container the engine's default network; without
	// it the container has none.
	Network bool
	// Limits are the container's resource limits.
	Limits Limits
	// Session names the session (a label, and part of the container's name).
	Session string
	// Env are variables set in the container (NAME=VALUE), over the image's.
	Env []string
	// Protected are host paths inside the workspace mounted read-only over
	// themselves in the container (the repository's .git, the project's
	// .truss), as the host sandbox keeps them; a path outside the
	// workspace, missing, or a symbolic link is left out.
	Protected []string
	// Hidden are host paths inside the workspace the container must not
	// read (the signing key, the saved sessions, should the workspace hold
	// them): an empty read-only file system is mounted over a directory,
	// an empty file over a file. A path outside the workspace or missing is
	// left out (the container sees nothing of the host outside its mounts).
	Hidden []string
	// Extra are more host directories mounted in the container (a
	// grading's report directory), each at its Target, after the
	// workspace's mounts. A Source that is not a directory (a link
	// included) or a Target that is not absolute is an error.
	Extra []Mount
	// User overrides the user the container runs as ("UID:GID"); "" means
	// the host user, so that files written in the workspace are the host
	// user's (rootless Podman: --userns=keep-id; rootless Docker: the
	// container's root; otherwise --user UID:GID).
	User string
}

// Mount is a bind mount of a container.
type Mount struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// Facts are what the ledger's session start records about an environment.
type Facts struct {
	Engine        string `json:"engine"`
	EngineVersion string `json:"engine_version"`
	// Runtime and CgroupManager are the ones in effect (chosen or default).
	Runtime       string   `json:"runtime,omitempty"`
	CgroupManager string   `json:"cgroup_manager,omitempty"`
	Rootless      bool     `json:"rootless"`
	Settings      Settings `json:"settings"`
	// Image is the reference asked for; ImageID its config digest
	// ("sha256:…"); RepoDigests the repository digests the engine knows
	// for it (none for an image that never came from a registry).
	Image       string   `json:"image"`
	ImageID     string   `json:"image_id"`
	RepoDigests []string `json:"repo_digests,omitempty"`
	ContainerID string   `json:"container_id"`
	Workdir     string   `json:"workdir"`
	Mounts      []Mount  `json:"mounts"`
	Network     bool     `json:"network"`
	Limits      Limits   `json:"limits"`
	// User is how the host user's identity was kept ("--user 0:0",
	// "--userns=keep-id", "rootless").
	User   string            `json:"user"`
	Labels map[string]string `json:"labels"`
	// Seccomp says which seccomp profile the container runs with: the
	// engine's default with TraceCalls refused, or why not.
	Seccomp string `json:"seccomp,omitempty"`
	// Supervisor is the program the container's supervisor (PID 1) runs:
	// the running program, and how it is started in the container.
	Supervisor string `json:"supervisor,omitempty"`
}

// Env is a running session environment: one container. Close removes it.
type Env struct {
	engine  *Engine
	id      string
	workdir string
	ws      string
	state   string
	user    string // Config.User: the state's files are given to it
	facts   Facts

	mu      sync.Mutex
	closed  bool
	nshells int
}

// ImageNotFoundError says the image is not in the engine's store.
type ImageNotFoundError struct {
	Engine, Image string
	Err           error
}

func (e *ImageNotFoundError) Error() string {
	return fmt.Sprintf("image %s is not in %s's store (a session's image is never pulled; run `%s pull %s` first): %v", e.Image, e.Engine, e.Engine, e.Image, e.Err)
}

func (e *ImageNotFoundError) Unwrap() error { return e.Err }

// imageInfo is what Start reads of an image.
type imageInfo struct {
	ID          string
	RepoDigests []string
	WorkingDir  string
}

// Inspect reads an image's ID, repository digests and working directory.
func (e *Engine) inspectImage(ctx context.Context, ref string) (imageInfo, error) {
	out, err := e.output(ctx, "image", "inspect", ref)
	if err != nil {
		return imageInfo{}, &ImageNotFoundError{Engine: e.Name, Image: ref, Err: err}
	}
	var all []struct {
		ID          string   `json:"Id"`
		RepoDigests []string `json:"RepoDigests"`
		Config      struct {
			WorkingDir string `json:"WorkingDir"`
		} `json:"Config"`
	}
	if err := json.Unmarshal(out, &all); err != nil || len(all) != 1 {
		return imageInfo{}, fmt.Errorf("inspect image %s: %d images, %v", ref, len(all), err)
	}
	raw := all[0]
	id := raw.ID
	if !strings.Contains(id, ":") {
		id = "sha256:" + id // Podman prints the bare hex
	}
	return imageInfo{ID: id, RepoDigests: raw.RepoDigests, WorkingDir: raw.Config.WorkingDir}, nil
}

// Start starts the session's container and returns the environment. The
// workspace must exist. When the engine cannot start a container with its
// settings, Start runs Check once and tries again with the settings found.
// A failed Start leaves no container behind.
func (e *Engine) Start(ctx context.Context, cfg Config) (*Env, error) {
	if cfg.Image == "" {
		return nil, errors.New("no image given")
	}
	if err := ValidateReference(cfg.Image); err != nil {
		return nil, err
	}
	ws, err := filepath.Abs(cfg.Workspace)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(ws); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s is not a directory", ws)
	}
	// With the workdir given, the image is inspected while the container
	// starts; else its working directory is needed first.
	type inspected struct {
		img imageInfo
		err error
	}
	inspect := make(chan inspected, 1)
	go func() {
		img, err := e.inspectImage(ctx, cfg.Image)
		inspect <- inspected{img, err}
	}()
	var img imageInfo
	workdir := cfg.Workdir
	if workdir == "" {
		r := <-inspect
		if r.err != nil {
			return nil, r.err
		}
		img, inspect = r.img, nil
		workdir = img.WorkingDir
	}
	if workdir == "" || workdir == "/" {
		workdir = DefaultWorkdir
	}
	if !path.IsAbs(workdir) {
		return nil, fmt.Errorf("the workdir %q is not an absolute path", workdir)
	}
	workdir = path.Clean(workdir)
	// --mount splits its value at commas.
	for _, p := range []string{ws, workdir} {
		if strings.Contains(p, ",") {
			return nil, fmt.Errorf("the path %q contains a comma, which a bind mount cannot name", p)
		}
	}
	owner, err := self()
	if err != nil {
		return nil, err
	}
	sup, err := findSupervisor()
	if err != nil {
		return nil, err
	}
	state, err := makeStateDir(ws)
	if err != nil {
		return nil, err
	}
	env := &Env{engine: e, workdir: workdir, ws: ws, state: state, user: cfg.User}
	if err := syscall.Mkfifo(filepath.Join(state, "ctl"), 0o600); err != nil {
		os.RemoveAll(state)
		return nil, fmt.Errorf("make the supervisor's FIFO: %w", err)
	}
	rw := filepath.Join(state, stateRW)
	if err := os.Mkdir(rw, 0o700); err != nil {
		os.RemoveAll(state)
		return nil, fmt.Errorf("make the state directory: %w", err)
	}
	if cfg.User != "" {
		// The container runs as another user: the state directory must be
		// that user's (the shells' FIFOs are made in it later).
		for _, p := range []string{state, filepath.Join(state, "ctl"), rw} {
			if err := chownUser(p, cfg.User); err != nil {
				os.RemoveAll(state)
				return nil, err
			}
		}
	}
	// The engine's seccomp profile less the calls that reach into another
	// process (TraceCalls), in the state directory.
	profile, seccompNote := e.seccomp()
	seccompFlags, err := writeProfile(state, profile)
	if err != nil {
		os.RemoveAll(state)
		return nil, err
	}
	labels := owner.labels()
	labels[LabelSession] = cfg.Session
	labels[LabelState] = state
	// The state directory is the host's, read-only in the container (its
	// FIFOs still carry data); only its rw subdirectory is the
	// container's to write.
	mounts := []Mount{{Source: ws, Target: workdir}, {Source: state, Target: state, ReadOnly: true}, {Source: rw, Target: rw}}
	for _, m := range sup.mounts {
		if m.Target == workdir || strings.HasPrefix(workdir+"/", m.Target+"/") || strings.HasPrefix(m.Target, workdir+"/") {
			os.RemoveAll(state)
			return nil, fmt.Errorf("the workdir %s overlaps %s, where the container's supervisor is mounted", workdir, supervisorDir)
		}
	}
	var hidden []string // --mount values
	var hiddenMounts []Mount
	for _, p := range cfg.Hidden {
		fi, err := os.Lstat(p)
		cp, ok := env.ContainerPath(p)
		if err != nil || !ok || strings.Contains(p, ",") {
			continue
		}
		if cp == workdir {
			return nil, fmt.Errorf("the workspace %s is itself hidden from commands (%s)", ws, p)
		}
		if fi.IsDir() {
			hidden = append(hidden, "type=tmpfs,dst="+cp+",tmpfs-size=4096,ro")
			hiddenMounts = append(hiddenMounts, Mount{Source: "tmpfs", Target: cp, ReadOnly: true})
		} else {
			hidden = append(hidden, "type=bind,src=/dev/null,dst="+cp+",ro")
			hiddenMounts = append(hiddenMounts, Mount{Source: "/dev/null", Target: cp, ReadOnly: true})
		}
	}
	for _, m := range cfg.Extra {
		fi, err := os.Lstat(m.Source)
		if err != nil || !fi.IsDir() || !filepath.IsAbs(m.Source) || !path.IsAbs(m.Target) || strings.Contains(m.Source+m.Target, ",") {
			os.RemoveAll(state)
			return nil, fmt.Errorf("a container's extra mount %s at %s: not an absolute directory and target (a link is refused): %v", m.Source, m.Target, err)
		}
		mounts = append(mounts, Mount{Source: filepath.Clean(m.Source), Target: path.Clean(m.Target), ReadOnly: m.ReadOnly})
	}
	for _, p := range cfg.Protected {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || strings.Contains(p, ",") {
			continue
		}
		if cp, ok := env.ContainerPath(p); ok && cp != workdir {
			mounts = append(mounts, Mount{Source: filepath.Clean(p), Target: cp, ReadOnly: true})
		}
	}
	user := e.userFlags(cfg.User)

	try := func(s Settings) (string, error) {
		args := append(e.globals(s), "run", "-d", "--pull", "never", "--name", containerName(cfg.Session))
		keys := make([]string, 0, len(labels))
		for k := range labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			args = append(args, "--label", k+"="+labels[k])
		}
		if !cfg.Network {
			args = append(args, "--network", "none")
		}
		// No process gains privileges through a setuid program of the
		// image (sudo, su, a setuid copy a command made), and none can
		// make device nodes or raw sockets.
		args = append(append(args, lockdown...), seccompFlags...)
		args = append(args, runFlags(sessionSettings(s, cfg.Limits.OpenFiles))...)
		args = append(args, limitFlags(cfg.Limits)...)
		args = append(args, user...)
		for _, m := range mounts {
			ro := ""
			if m.ReadOnly {
				ro = ",ro"
			}
			args = append(args, "--mount", "type=bind,src="+m.Source+",dst="+m.Target+ro)
		}
		for _, h := range hidden {
			args = append(args, "--mount", h)
		}
		for _, m := range sup.mounts {
			args = append(args, "--mount", "type=bind,src="+m.Source+",dst="+m.Target+",ro")
		}
		for _, v := range cfg.Env {
			args = append(args, "--env", v)
		}
		// The supervisor is PID 1 (no engine's init: it reaps orphans
		// itself) and starts the shells; the container lives until it is
		// removed.
		args = append(args, "-w", workdir, "--entrypoint", sup.argv[0], cfg.Image)
		args = append(append(args, sup.argv[1:]...), state)
		out, err := e.run(ctx, nil, exec.CommandContext(ctx, e.Path, args...))
		return strings.TrimSpace(string(out)), err
	}
	s := e.Settings()
	id, err := try(s)
	if err != nil && ctx.Err() == nil && settingsFailure(err) {
		e.removeQuiet(context.WithoutCancel(ctx), id, labels)
		if _, cerr := e.Check(ctx); cerr == nil && e.Settings().String() != s.String() {
			s = e.Settings()
			id, err = try(s)
		}
	}
	if err != nil {
		e.removeQuiet(context.WithoutCancel(ctx), id, labels)
		os.RemoveAll(state)
		if inspect != nil {
			if r := <-inspect; r.err != nil {
				return nil, r.err // the image is missing: say so
			}
		}
		var ce *CommandError
		if errors.As(err, &ce) && ce.ExitCode == 127 {
			return nil, fmt.Errorf("image %s has no bash: the session's shell needs bash: %w", cfg.Image, err)
		}
		return nil, fmt.Errorf("start a container from %s: %w", cfg.Image, err)
	}
	if inspect != nil {
		r := <-inspect
		if r.err != nil {
			e.removeQuiet(context.WithoutCancel(ctx), id, labels)
			os.RemoveAll(state)
			return nil, r.err
		}
		img = r.img
	}
	env.id = id
	env.facts = Facts{Engine: e.Name, EngineVersion: e.Version, Runtime: or(s.Runtime, e.Runtime),
		CgroupManager: or(s.CgroupManager, e.CgroupManager), Rootless: e.Rootless, Settings: sessionSettings(s, cfg.Limits.OpenFiles),
		Image: cfg.Image, ImageID: img.ID, RepoDigests: img.RepoDigests, ContainerID: id, Workdir: workdir,
		Mounts: append(slices.Clip(mounts), hiddenMounts...), Network: cfg.Network, Limits: cfg.Limits, User: strings.Join(user, " "), Labels: labels,
		Seccomp: seccompNote, Supervisor: sup.note}
	if env.facts.User == "" {
		env.facts.User = "rootless"
	}
	if err := env.waitSupervisor(ctx); err != nil {
		e.removeQuiet(context.WithoutCancel(ctx), id, labels)
		os.RemoveAll(state)
		return nil, err
	}
	return env, nil
}

// lockdown are the run flags that take from the container's processes
// what no task needs: gaining privileges by exec (setuid and file
// capabilities), making device nodes, raw sockets, audit writes and
// tracing processes of other users (CAP_SYS_PTRACE). Tracing processes of
// their own user is refused by the seccomp profile (TraceCalls).
var lockdown = []string{"--security-opt", "no-new-privileges", "--cap-drop", "MKNOD", "--cap-drop", "NET_RAW", "--cap-drop", "AUDIT_WRITE", "--cap-drop", "SYS_PTRACE"}

// makeStateDir makes the session's state directory in the first of the
// system's temporary directory and $XDG_RUNTIME_DIR that lies outside the
// workspace ws — by path, links resolved, and by identity (device and
// inode), so that a bind mount of it is found too. The container reaches
// the workspace read-write: a state directory inside it would let
// commands plant the files and links the host later reads and removes
// there. A path with a comma (which a bind mount cannot name) is skipped.
func makeStateDir(ws string) (string, error) {
	var tried []string
	for _, base := range []string{os.TempDir(), os.Getenv("XDG_RUNTIME_DIR")} {
		if base == "" {
			continue
		}
		if strings.Contains(base, ",") || inside(base, ws) {
			tried = append(tried, base)
			continue
		}
		d, err := os.MkdirTemp(base, "truss-env-")
		if err != nil {
			tried = append(tried, base)
			continue
		}
		if inside(d, ws) { // the base changed under us
			os.Remove(d)
			tried = append(tried, base)
			continue
		}
		return d, nil
	}
	return "", fmt.Errorf("no directory outside the workspace %s for the container's state (tried %s): set TMPDIR to one", ws, strings.Join(tried, ", "))
}

// inside reports whether p is dir or lies below it: by path, links
// resolved, or because p or one of its existing ancestors is dir itself.
func inside(p, dir string) bool {
	rp, rd := hostfs.Resolve(absPath(p)), hostfs.Resolve(absPath(dir))
	if rel, err := filepath.Rel(rd, rp); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return true
	}
	di, err := os.Stat(rd)
	if err != nil {
		return false
	}
	for a := rp; ; {
		if fi, err := os.Stat(a); err == nil && os.SameFile(fi, di) {
			return true
		}
		up := filepath.Dir(a)
		if up == a {
			return false
		}
		a = up
	}
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// settingsFailure tells whether a failed run may succeed with other
// settings: the engine or runtime failed (exit 125 or 126), not the image.
func settingsFailure(err error) bool {
	var ce *CommandError
	if !errors.As(err, &ce) || (ce.ExitCode != 125 && ce.ExitCode != 126) {
		return false
	}
	msg := strings.ToLower(ce.Stderr)
	for _, s := range []string{"rlimit", "cgroup", "oci runtime", "runc", "crun", "init", "permission denied"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// removeQuiet removes a container that failed to start, by ID or, when
// the run printed none, by its labels.
func (e *Engine) removeQuiet(ctx context.Context, id string, labels map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if id == "" {
		out, err := e.output(ctx, "ps", "-a", "-q", "--filter", "label="+LabelState+"="+labels[LabelState])
		if err != nil {
			return
		}
		id = strings.Join(strings.Fields(string(out)), " ")
	}
	for _, one := range strings.Fields(id) {
		e.output(ctx, e.rmArgs(one)...)
	}
}

func (e *Engine) rmArgs(ids ...string) []string {
	if e.Name == Podman {
		return append([]string{"rm", "-f", "-t", "0"}, ids...)
	}
	return append([]string{"rm", "-f"}, ids...)
}

// userFlags keep the host user's identity for files in the workspace.
func (e *Engine) userFlags(override string) []string {
	if override != "" {
		return []string{"--user", override}
	}
	switch {
	case e.Rootless && e.Name == Podman:
		return []string{"--userns=keep-id"}
	case e.Rootless:
		return nil // the container's root is the invoking user
	}
	return []string{"--user", fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())}
}

func limitFlags(l Limits) []string {
	var f []string
	if l.CPUs > 0 {
		f = append(f, "--cpus", strconv.FormatFloat(l.CPUs, 'f', -1, 64))
	}
	if l.Memory > 0 {
		f = append(f, "--memory", strconv.FormatInt(l.Memory, 10))
	}
	if l.Pids > 0 {
		f = append(f, "--pids-limit", strconv.Itoa(l.Pids))
	}
	return f
}

// sessionSettings are the settings a session's container runs with: s
// without the engine's init (the supervisor is PID 1 and reaps orphans
// itself: an init of the engine's, a process of the container's user
// that a command could take over, is what it replaces), the open-files
// limit at most n.
func sessionSettings(s Settings, n uint64) Settings {
	s = withOpenFiles(s, n)
	s.Init = false
	return s
}

// withOpenFiles sets the nofile ulimit to n when n is below the chosen one.
func withOpenFiles(s Settings, n uint64) Settings {
	if n == 0 {
		return s
	}
	out := s
	out.Ulimits = nil
	set := false
	for _, u := range s.Ulimits {
		if v, ok := strings.CutPrefix(u, "nofile="); ok {
			hard, _ := strconv.ParseUint(v[strings.IndexByte(v, ':')+1:], 10, 64)
			if hard == 0 || n < hard {
				u = fmt.Sprintf("nofile=%d:%d", n, n)
			}
			set = true
		}
		out.Ulimits = append(out.Ulimits, u)
	}
	if !set {
		out.Ulimits = append(out.Ulimits, fmt.Sprintf("nofile=%d:%d", n, n))
	}
	return out
}

func containerName(session string) string {
	var b [4]byte
	rand.Read(b[:])
	var clean strings.Builder
	for _, r := range session {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			clean.WriteRune(r)
		}
		if clean.Len() >= 40 {
			break
		}
	}
	if clean.Len() == 0 {
		return "truss-" + hex.EncodeToString(b[:])
	}
	return "truss-" + clean.String() + "-" + hex.EncodeToString(b[:])
}

// ID is the container's ID.
func (v *Env) ID() string { return v.id }

// Engine is the engine the container runs on.
func (v *Env) Engine() *Engine { return v.engine }

// Workdir is the workspace's path in the container.
func (v *Env) Workdir() string { return v.workdir }

// Workspace is the workspace's path on the host.
func (v *Env) Workspace() string { return v.ws }

// StateDir is a host directory mounted at the same path in the container,
// owned by the Env and removed at Close: the shells' FIFOs and start
// scripts, read-only to the container, and its subdirectory rw, where the
// container writes the shells' statuses and saved state.
func (v *Env) StateDir() string { return v.state }

// Facts are the environment's provenance for the ledger.
func (v *Env) Facts() Facts { return v.facts }

// ContainerPath maps a host path inside the workspace to its path in the
// container; ok is false for a path outside the workspace.
func (v *Env) ContainerPath(host string) (p string, ok bool) {
	rel, err := filepath.Rel(v.ws, filepath.Clean(host))
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", false
	}
	return path.Join(v.workdir, filepath.ToSlash(rel)), true
}

// HostPath maps a path in the container inside the workdir to its host
// path; ok is false for a path outside the workdir.
func (v *Env) HostPath(inContainer string) (p string, ok bool) {
	c := path.Clean(inContainer)
	if c == v.workdir {
		return v.ws, true
	}
	rel, found := strings.CutPrefix(c, v.workdir+"/")
	if !found || v.workdir == "/" {
		return "", false
	}
	return filepath.Join(v.ws, filepath.FromSlash(rel)), true
}

// Close removes the container (killing everything in it) and the state
// directory. It works after ctx is cancelled (the removal gets its own
// 30-second budget) and is idempotent.
func (v *Env) Close(ctx context.Context) error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	v.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := v.engine.output(ctx, v.engine.rmArgs(v.id)...)
	if err != nil {
		// Gone already (removed by hand, or reaped) is fine.
		if _, ierr := v.engine.output(ctx, "container", "inspect", "--format", "{{.Id}}", v.id); ierr == nil {
			return fmt.Errorf("remove container %s: %w", v.id, err)
		}
	}
	os.RemoveAll(v.state)
	return nil
}

// waitSupervisor waits until the container's supervisor reads its
// control FIFO; a container that exited instead is reported with its
// output.
func (v *Env) waitSupervisor(ctx context.Context) error {
	ctl := filepath.Join(v.state, "ctl")
	deadline := time.Now().Add(shellStartTimeout)
	next := time.Now().Add(300 * time.Millisecond)
	for {
		f, err := openFIFO(ctl, os.O_WRONLY|syscall.O_NONBLOCK)
		if err == nil {
			f.Close()
			return nil
		}
		if !errors.Is(err, syscall.ENXIO) {
			return fmt.Errorf("the supervisor's FIFO: %w", err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(next) {
			next = time.Now().Add(300 * time.Millisecond)
			out, err := v.engine.output(ctx, "container", "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}", v.id)
			if f := strings.Fields(string(out)); err == nil && len(f) == 2 && f[0] != "running" && f[0] != "created" {
				logs, _ := v.engine.output(ctx, "logs", v.id)
				msg := strings.TrimSpace(string(logs))
				if f[1] == "127" || strings.Contains(msg, "No such file") || strings.Contains(msg, "not found") {
					return fmt.Errorf("image %s has no bash: the session's shell needs bash (the container exited with status %s: %s)", v.facts.Image, f[1], msg)
				}
				return fmt.Errorf("the container exited with status %s before its shell could start (the image needs bash on its PATH): %s", f[1], or(msg, "no output"))
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the container's supervisor did not start within %s", shellStartTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// own gives the state's files to the container's user when it is not the
// host user (Config.User).
func (v *Env) own(paths ...string) error {
	if v.user == "" {
		return nil
	}
	for _, p := range paths {
		if err := chownUser(p, v.user); err != nil {
			return err
		}
	}
	return nil
}

// chownUser gives path (a file or an empty directory Truss just made in
// the state directory) to user ("UID" or "UID:GID"); a link there is
// changed itself, never followed.
func chownUser(path, user string) error {
	u, g, _ := strings.Cut(user, ":")
	uid, err := strconv.Atoi(u)
	if err != nil {
		return fmt.Errorf("the user %q is not UID[:GID] in numbers, which the state directory needs", user)
	}
	gid := -1
	if g != "" {
		if gid, err = strconv.Atoi(g); err != nil {
			return fmt.Errorf("the user %q is not UID[:GID] in numbers", user)
		}
	}
	if err := os.Lchown(path, uid, gid); err != nil {
		return fmt.Errorf("give the state directory to user %s: %w", user, err)
	}
	return nil
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
