package container

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/trussdev/truss/internal/hostfs"
)

// ProbeImage is the image Check runs its trial containers from: an empty
// file system imported from a tarball Truss makes (no pull).
const ProbeImage = "localhost/truss-probe:1"

// probeCommand does not exist in the probe image: a container whose
// runtime got as far as executing it (exit status 127) started with the
// settings tried.
const probeCommand = "/.truss-probe-absent"

// Report is what Check found: the engine, the settings chosen, and every
// trial with its outcome. `truss env check` prints it.
type Report struct {
	Engine        string   `json:"engine"`
	Version       string   `json:"version"`
	Runtime       string   `json:"runtime"`
	CgroupManager string   `json:"cgroup_manager"`
	CgroupVersion string   `json:"cgroup_version"`
	Rootless      bool     `json:"rootless"`
	Chosen        Settings `json:"chosen"`
	Trials        []Trial  `json:"trials"`
	// Notes say why the chosen settings differ from the engine's defaults.
	Notes []string `json:"notes,omitempty"`
}

// Trial is one probe container run with some settings.
type Trial struct {
	Settings Settings      `json:"settings"`
	OK       bool          `json:"ok"`
	Error    string        `json:"error,omitempty"`
	Took     time.Duration `json:"took"`
}

// String is the report for a person.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "engine   %s %s (runtime %s, cgroup manager %s, cgroup v%s, rootless %v)\n",
		r.Engine, r.Version, r.Runtime, r.CgroupManager, r.CgroupVersion, r.Rootless)
	for _, t := range r.Trials {
		mark := "ok  "
		if !t.OK {
			mark = "fail"
		}
		fmt.Fprintf(&b, "trial    %s %s (%s)", mark, t.Settings, t.Took.Round(time.Millisecond))
		if t.Error != "" {
			fmt.Fprintf(&b, ": %s", t.Error)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "chosen   %s\n", r.Chosen)
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note     %s\n", n)
	}
	return b.String()
}

// NoSettingsError says that no candidate settings started a container.
type NoSettingsError struct{ Report Report }

func (e *NoSettingsError) Error() string {
	last := ""
	if n := len(e.Report.Trials); n > 0 {
		last = ": last: " + e.Report.Trials[n-1].Error
	}
	return fmt.Sprintf("%s cannot start a container with any of %d candidate settings%s", e.Report.Engine, len(e.Report.Trials), last)
}

// Check finds settings that start a container on this host: it imports
// the probe image if missing, then runs a probe container with candidate
// settings (the current ones first; then other OCI runtimes and cgroup
// managers; ulimits from the host's hard limits, then conservative ones,
// then none; with and without an init process) until one starts. The
// engine keeps the settings chosen. The report lists every trial.
func (e *Engine) Check(ctx context.Context) (Report, error) {
	r := Report{Engine: e.Name, Version: e.Version, Runtime: e.Runtime, CgroupManager: e.CgroupManager,
		CgroupVersion: e.CgroupVersion, Rootless: e.Rootless}
	if err := e.ensureProbeImage(ctx); err != nil {
		return r, err
	}
	for _, s := range e.candidates() {
		t := e.trial(ctx, s)
		r.Trials = append(r.Trials, t)
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		if t.OK {
			r.Chosen = s
			r.Notes = notes(e, s)
			if len(s.Ulimits) > 0 {
				// Say whether the ulimits are needed: the same without them.
				bare := s
				bare.Ulimits = nil
				bt := e.trial(ctx, bare)
				r.Trials = append(r.Trials, bt)
				if bt.OK {
					r.Notes = append(r.Notes, "the engine's default ulimits also work here; the explicit ones are kept")
				} else {
					r.Notes = append(r.Notes, "without them: "+bt.Error)
				}
			}
			e.mu.Lock()
			e.settings = s
			rc := r
			e.checked = &rc
			e.mu.Unlock()
			return r, nil
		}
	}
	return r, &NoSettingsError{Report: r}
}

// Checked returns the last Check's report, if any.
func (e *Engine) Checked() (Report, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.checked == nil {
		return Report{}, false
	}
	return *e.checked, true
}

func notes(e *Engine, s Settings) []string {
	var n []string
	if s.Runtime != "" && s.Runtime != e.Runtime {
		n = append(n, fmt.Sprintf("OCI runtime %s instead of the default %s, which could not start a container here", s.Runtime, e.Runtime))
	}
	if s.CgroupManager != "" && s.CgroupManager != e.CgroupManager {
		n = append(n, fmt.Sprintf("cgroup manager %s instead of the default %s", s.CgroupManager, e.CgroupManager))
	}
	if len(s.Ulimits) > 0 {
		n = append(n, fmt.Sprintf("explicit ulimits %s, at this host's hard limits (open files %s, processes %s, pid_max %s)",
			strings.Join(s.Ulimits, " "), hardLimit(syscall.RLIMIT_NOFILE), hardLimit(rlimitNproc), readTrim("/proc/sys/kernel/pid_max")))
	}
	if !s.Init {
		n = append(n, "no init process: the engine's init could not start")
	}
	return n
}

// candidates lists the settings Check tries, the current ones first.
func (e *Engine) candidates() []Settings {
	cur := e.Settings()
	runtimes := []string{cur.Runtime}
	if e.Name == Podman {
		for _, rt := range []string{"runc", "crun"} {
			if rt != cur.Runtime && rt != e.Runtime {
				if _, err := hostfs.LookPath(rt, e.lookPath()); err == nil {
					runtimes = append(runtimes, rt)
				}
			}
		}
	}
	managers := []string{cur.CgroupManager}
	if e.Name == Podman {
		for _, m := range []string{"cgroupfs", "systemd"} {
			if m != cur.CgroupManager && m != e.CgroupManager {
				managers = append(managers, m)
			}
		}
	}
	ulimits := [][]string{cur.Ulimits, hostUlimits(), {"nofile=1024:1024", "nproc=4096:4096"}, nil}
	var out []Settings
	seen := map[string]bool{}
	for _, init := range []bool{true, false} {
		for _, rt := range runtimes {
			for _, m := range managers {
				for _, u := range ulimits {
					s := Settings{Runtime: rt, CgroupManager: m, Ulimits: u, Init: init}
					if k := s.String(); !seen[k] {
						seen[k] = true
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

// trial runs the probe container with s.
func (e *Engine) trial(ctx context.Context, s Settings) Trial {
	start := time.Now()
	args := append(e.globals(s), "run", "--rm", "--pull", "never", "--network", "none", "--label", labelProbe+"=1")
	args = append(args, runFlags(s)...)
	args = append(args, ProbeImage, probeCommand)
	cmd := exec.CommandContext(ctx, e.Path, args...)
	_, err := e.run(ctx, nil, cmd)
	t := Trial{Settings: s, Took: time.Since(start)}
	var ce *CommandError
	switch {
	case err == nil:
		t.OK = true // cannot happen with an absent command, but it started
	case errors.As(err, &ce) && ce.ExitCode == 127:
		t.OK = true // the runtime set everything up and tried the command
	case errors.As(err, &ce) && s.Init && ce.ExitCode != 125 && initExecFailed(ce.Stderr):
		t.OK = true // the init process ran and tried the command
	case errors.As(err, &ce):
		t.Error = firstLine(ce.Stderr)
	default:
		t.Error = err.Error()
	}
	return t
}

// initExecFailed tells whether an init process (catatonit, tini) reported
// that it could not execute the absent probe command.
func initExecFailed(stderr string) bool {
	return strings.Contains(stderr, "No such file or directory") &&
		(strings.Contains(stderr, "catatonit") || strings.Contains(stderr, "tini") || strings.Contains(stderr, probeCommand))
}

// runFlags are the settings' flags of `run`.
func runFlags(s Settings) []string {
	var f []string
	for _, u := range s.Ulimits {
		f = append(f, "--ulimit", u)
	}
	if s.Init {
		f = append(f, "--init")
	}
	return f
}

// ensureProbeImage imports the probe image (an empty root with /tmp) when
// the engine does not have it.
func (e *Engine) ensureProbeImage(ctx context.Context) error {
	if _, err := e.output(ctx, "image", "inspect", "--format", "{{.Id}}", ProbeImage); err == nil {
		return nil
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"tmp/", "proc/", "dev/", "sys/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o1777, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	cmd := e.command(ctx, "import", "--change", "LABEL "+labelProbe+"=1", "-", ProbeImage)
	if _, err := e.run(ctx, buf.Bytes(), cmd); err != nil {
		return fmt.Errorf("import the probe image: %w", err)
	}
	return nil
}

// rlimitNproc is RLIMIT_NPROC on Linux.
const rlimitNproc = 6

// hostUlimits are ulimits at the host's hard limits, the processes' also
// at most pid_max (runc cannot set a higher one here): an engine's
// defaults above the hard limits fail without CAP_SYS_RESOURCE. The pids
// cgroup, not RLIMIT_NPROC, bounds a session's processes.
func hostUlimits() []string {
	var u []string
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Max != ^uint64(0) {
		u = append(u, fmt.Sprintf("nofile=%d:%d", lim.Max, lim.Max))
	}
	if syscall.Getrlimit(rlimitNproc, &lim) == nil {
		n := lim.Max
		if pm, err := strconv.ParseUint(readTrim("/proc/sys/kernel/pid_max"), 10, 64); err == nil && pm < n {
			n = pm
		}
		if n != ^uint64(0) {
			u = append(u, fmt.Sprintf("nproc=%d:%d", n, n))
		}
	}
	return u
}

func hardLimit(res int) string {
	var lim syscall.Rlimit
	if syscall.Getrlimit(res, &lim) != nil {
		return "?"
	}
	if lim.Max == ^uint64(0) {
		return "unlimited"
	}
	return strconv.FormatUint(lim.Max, 10)
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:] // engines print progress first and the error last
	}
	return s
}
