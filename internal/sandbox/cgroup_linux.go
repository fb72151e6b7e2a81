package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The cgroup controllers a session's group uses.
const (
	ctrlPids   = "pids"
	ctrlMemory = "memory"
	ctrlCPU    = "cpu"
)

// probeController finds where this process may make a child cgroup with a
// controller: its own cgroup v2 directory when the controller is enabled
// for children there, else its directory in the controller's v1
// hierarchy. It returns the parent directory, or why there is none.
func probeController(ctrl string) (string, string) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", "cannot read /proc/self/cgroup: " + err.Error()
	}
	var candidates []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			dir := filepath.Join("/sys/fs/cgroup", parts[2])
			if c, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control")); err == nil && hasField(strings.ReplaceAll(strings.TrimSpace(string(c)), " ", ","), ctrl) {
				candidates = append(candidates, dir)
			}
		case hasField(parts[1], ctrl):
			candidates = append(candidates, filepath.Join("/sys/fs/cgroup", ctrl, parts[2]))
		}
	}
	var errs []string
	for _, dir := range candidates {
		probe := filepath.Join(dir, "truss-probe-"+randHex())
		if err := os.Mkdir(probe, 0o755); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		os.Remove(probe)
		return dir, ""
	}
	if len(candidates) == 0 {
		return "", "no " + ctrl + " cgroup controller is available to this process"
	}
	return "", "cannot make a " + ctrl + " cgroup: " + strings.Join(errs, "; ")
}

func hasField(list, name string) bool {
	for _, f := range strings.Split(list, ",") {
		if f == name {
			return true
		}
	}
	return false
}

// group is the session's cgroup in one hierarchy: one directory with
// every controller on cgroup v2, one per controller on v1.
type group struct {
	dir   string
	v2    bool
	ctrls []string
}

func (g *group) has(ctrl string) bool {
	for _, c := range g.ctrls {
		if c == ctrl {
			return true
		}
	}
	return false
}

// makeGroups makes the session's cgroups under the parents the plan names
// and sets their limits. On failure nothing is left behind.
func makeGroups(m Mechanisms, lim Limits) ([]*group, error) {
	parents := map[string][]string{} // parent dir → controllers
	var order []string
	for _, c := range []struct{ ctrl, parent string }{{ctrlPids, m.Cgroup}, {ctrlMemory, m.MemoryCgroup}, {ctrlCPU, m.CPUCgroup}} {
		if c.parent == "" {
			continue
		}
		if _, ok := parents[c.parent]; !ok {
			order = append(order, c.parent)
		}
		parents[c.parent] = append(parents[c.parent], c.ctrl)
	}
	name := "truss-" + strconv.Itoa(os.Getpid()) + "-" + randHex()
	var groups []*group
	fail := func(err error) ([]*group, error) {
		for _, g := range groups {
			os.Remove(g.dir)
		}
		return nil, err
	}
	for _, parent := range order {
		g := &group{dir: filepath.Join(parent, name), ctrls: parents[parent]}
		if err := os.Mkdir(g.dir, 0o755); err != nil {
			return fail(fmt.Errorf("make the cgroup %s: %w", g.dir, err))
		}
		groups = append(groups, g)
		var st unix.Statfs_t
		g.v2 = unix.Statfs(g.dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
		set := func(file, v string) error {
			if err := os.WriteFile(filepath.Join(g.dir, file), []byte(v), 0o644); err != nil {
				return fmt.Errorf("set %s: %w", file, err)
			}
			return nil
		}
		for _, c := range g.ctrls {
			var err error
			switch {
			case c == ctrlPids:
				err = set("pids.max", strconv.Itoa(lim.Pids))
			case c == ctrlMemory && g.v2:
				if err = set("memory.max", strconv.FormatInt(lim.Memory, 10)); err == nil {
					set("memory.swap.max", "0") // absent without swap accounting
				}
			case c == ctrlMemory:
				err = set("memory.limit_in_bytes", strconv.FormatInt(lim.Memory, 10))
				set("memory.memsw.limit_in_bytes", strconv.FormatInt(lim.Memory, 10)) // absent without swap accounting
			case c == ctrlCPU && g.v2:
				err = set("cpu.weight", strconv.Itoa(lim.CPUWeight))
			case c == ctrlCPU:
				err = set("cpu.shares", strconv.Itoa(max(2, lim.CPUWeight*1024/100)))
			}
			if err != nil {
				return fail(err)
			}
		}
	}
	return groups, nil
}

// readCounter reads "NAME N" from a flat keyed cgroup file; 0 when absent.
func readCounter(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// procs lists the processes of a cgroup.
func procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// killAll kills every process of the group and waits, briefly, until it
// has none (a fork bomb forks while it is being killed; every shell is
// the first process of its PID namespace, and killing it takes the
// namespace down).
func killAll(g *group) error {
	if g.v2 {
		if err := os.WriteFile(filepath.Join(g.dir, "cgroup.kill"), []byte("1"), 0o644); err == nil {
			return waitEmpty(g)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ps := procs(g.dir)
		if len(ps) == 0 {
			return nil
		}
		for _, pid := range ps {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return errors.New("processes are left in " + g.dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitEmpty(g *group) error {
	deadline := time.Now().Add(5 * time.Second)
	for len(procs(g.dir)) > 0 {
		if time.Now().After(deadline) {
			return errors.New("processes are left in " + g.dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
