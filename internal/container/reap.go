package container

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Owner identifies a process across pid reuse: a pid, its start time in
// clock ticks since boot, the boot and the host.
type Owner struct {
	PID   int
	Start uint64
	Boot  string
	Host  string
}

// self is the calling process as an Owner.
func self() (Owner, error) { return OwnerOf(os.Getpid()) }

// OwnerOf reads the Owner of a running process from /proc.
func OwnerOf(pid int) (Owner, error) {
	start, err := startTime(pid)
	if err != nil {
		return Owner{}, err
	}
	host, _ := os.Hostname()
	return Owner{PID: pid, Start: start, Boot: readTrim("/proc/sys/kernel/random/boot_id"), Host: host}, nil
}

func (o Owner) labels() map[string]string {
	return map[string]string{
		LabelOwnerPID:   strconv.Itoa(o.PID),
		LabelOwnerStart: strconv.FormatUint(o.Start, 10),
		LabelOwnerBoot:  o.Boot,
		LabelOwnerHost:  o.Host,
	}
}

// startTime is field 22 of /proc/PID/stat (after the command's closing
// parenthesis, which the command name itself may contain).
func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read the start time of process %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("process %d: malformed /proc stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, fmt.Errorf("process %d: short /proc stat", pid)
	}
	return strconv.ParseUint(f[19], 10, 64)
}

// ownerState is what Reap concludes about a container's owner.
type ownerState int

const (
	ownerAlive   ownerState = iota
	ownerGone               // this host, and the process is gone (or the host rebooted)
	ownerUnknown            // another host's, or labels Truss did not write: left alone
)

// judge decides from a container's labels whether its owner is alive.
// here is the calling host's identity (Boot and Host).
func judge(labels map[string]string, here Owner, startOf func(pid int) (uint64, error)) ownerState {
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	start, err2 := strconv.ParseUint(labels[LabelOwnerStart], 10, 64)
	if err != nil || err2 != nil || pid <= 0 || labels[LabelOwnerHost] == "" || labels[LabelOwnerBoot] == "" {
		return ownerUnknown
	}
	if labels[LabelOwnerHost] != here.Host {
		return ownerUnknown
	}
	if labels[LabelOwnerBoot] != here.Boot {
		return ownerGone // the machine rebooted since: every process of then is gone
	}
	got, err := startOf(pid)
	if err != nil || got != start {
		return ownerGone // no such process, or the pid now belongs to another
	}
	return ownerAlive
}

// Reaped is a container Reap removed.
type Reaped struct {
	ID      string
	Session string
	PID     int
}

// Reap removes the containers, with their state directories, of sessions
// whose owning process is gone: those on this host whose owner's pid is
// not running with the recorded start time, or whose boot was an earlier
// one. It never removes a container whose owner is alive, nor one made on
// another host, nor one whose state directory is in another temporary
// directory than this process's (its sessions' to remove, with their
// state; a test's processes each have their own). Every command that
// opens a session calls it first.
func (e *Engine) Reap(ctx context.Context) ([]Reaped, error) {
	out, err := e.output(ctx, "ps", "-a", "-q", "--no-trunc", "--filter", "label="+LabelOwnerPID)
	if err != nil {
		return nil, fmt.Errorf("list Truss's containers: %w", err)
	}
	ids := strings.Fields(string(out))
	if len(ids) == 0 {
		return nil, nil
	}
	here, err := self()
	if err != nil {
		return nil, err
	}
	out, err = e.output(ctx, append([]string{"container", "inspect", "--format", "{{.Id}} {{json .Config.Labels}}"}, ids...)...)
	if err != nil && len(out) == 0 {
		return nil, fmt.Errorf("inspect Truss's containers: %w", err)
	}
	var gone []Reaped
	var states []string
	for _, line := range strings.Split(string(out), "\n") {
		id, js, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		var labels map[string]string
		if json.Unmarshal([]byte(js), &labels) != nil {
			continue
		}
		if judge(labels, here, startTime) != ownerGone || !stateHere(labels[LabelState], os.TempDir()) {
			continue
		}
		pid, _ := strconv.Atoi(labels[LabelOwnerPID])
		gone = append(gone, Reaped{ID: id, Session: labels[LabelSession], PID: pid})
		states = append(states, labels[LabelState])
	}
	if len(gone) == 0 {
		return nil, nil
	}
	rm := make([]string, len(gone))
	for i, g := range gone {
		rm[i] = g.ID
	}
	if _, err := e.output(ctx, e.rmArgs(rm...)...); err != nil {
		return gone, fmt.Errorf("remove the containers of ended sessions: %w", err)
	}
	for _, s := range states {
		removeState(s)
	}
	return gone, nil
}

// stateHere reports whether a container's state directory (its label; ""
// when it has none) is one removeState would remove with tmp as the
// temporary directory.
func stateHere(dir, tmp string) bool {
	return dir == "" || filepath.IsAbs(dir) && filepath.Dir(filepath.Clean(dir)) == filepath.Clean(tmp)
}

// removeState removes a state directory Start made: only a truss-env-*
// directory directly under the temporary directory.
func removeState(dir string) {
	if dir == "" || !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), "truss-env-") ||
		filepath.Dir(filepath.Clean(dir)) != filepath.Clean(os.TempDir()) {
		return
	}
	os.RemoveAll(dir)
}

func newTag() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
