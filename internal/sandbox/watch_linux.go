package sandbox

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LimitError is a limit of the sandbox a command broke: the Guard's
// answer. Limit names it ("processes", "memory", "disk").
type LimitError struct {
	Limit string
	msg   string
}

func (e *LimitError) Error() string { return e.msg }

// How the watcher decides that a fork bomb is one: the pids cgroup
// refused forks in forkPolls of the last forkWindow polls, or forkBurst
// at once. A build that brushes the limit once is left alone.
const (
	watchEvery = 100 * time.Millisecond
	diskEvery  = 250 * time.Millisecond
	forkWindow = 10
	forkPolls  = 3
	forkBurst  = 64
	// diskSlack is what a command may write past the disk budget once it
	// was reached (the shell's own bookkeeping writes a little).
	diskSlack = 1 << 20
)

// watcher watches the session's cgroups while it lives: it ends a fork
// bomb as soon as the pids limit is hit repeatedly, and a command that
// writes past the disk budget, by killing everything in the sandbox;
// Guard then says why.
type watcher struct {
	pids   *group // the group with the pids controller, nil for none
	memory *group
	any    *group // a group every sandboxed process is in
	lim    Limits
	kill   func() // kills everything in the sandbox

	mu       sync.Mutex
	reason   *LimitError // a kill not yet reported
	pidsSeen int64       // pids.events "max" already reported
	oomSeen  int64       // oom_kill already reported

	written int64         // bytes written by processes gone
	perPid  map[int]int64 // bytes written by processes alive, last seen
	overAt  int64         // the total at the last kill for the budget

	// the watch loop's own
	pidsLast int64
	hitPolls uint64 // a bit per poll, the newest lowest: forks were refused
}

func newWatcher(groups []*group, lim Limits, kill func()) *watcher {
	w := &watcher{lim: lim, kill: kill, perPid: map[int]int64{}}
	for _, g := range groups {
		if g.has(ctrlPids) {
			w.pids = g
		}
		if g.has(ctrlMemory) {
			w.memory = g
		}
		if w.any == nil {
			w.any = g
		}
	}
	if w.pids != nil {
		w.pidsLast = w.pidsMax()
		w.pidsSeen = w.pidsLast
	}
	w.oomSeen = w.oomKills()
	return w
}

func (w *watcher) pidsMax() int64 {
	return readCounter(filepath.Join(w.pids.dir, "pids.events"), "max")
}

// oomKills is how many processes the memory cgroup's limit killed.
func (w *watcher) oomKills() int64 {
	if w.memory == nil {
		return 0
	}
	if w.memory.v2 {
		return readCounter(filepath.Join(w.memory.dir, "memory.events"), "oom_kill")
	}
	return readCounter(filepath.Join(w.memory.dir, "memory.oom_control"), "oom_kill")
}

// run polls until stop is closed.
func (w *watcher) run(stop <-chan struct{}) {
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	lastDisk := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if w.pids != nil {
			n := w.pidsMax()
			w.hitPolls = (w.hitPolls << 1) & (1<<forkWindow - 1)
			if n > w.pidsLast {
				w.hitPolls |= 1
			}
			burst := n-w.pidsLast >= forkBurst
			w.pidsLast = n
			if burst || bits.OnesCount64(w.hitPolls) >= forkPolls {
				w.hitPolls = 0
				w.stop(&LimitError{Limit: "processes", msg: fmt.Sprintf("the command kept hitting the sandbox's limit of %d processes (a fork bomb?) and was killed as soon as it did", w.lim.Pids)})
				w.mu.Lock()
				w.pidsSeen = w.pidsMax()
				w.mu.Unlock()
				continue
			}
		}
		if time.Since(lastDisk) >= diskEvery {
			lastDisk = time.Now()
			w.mu.Lock()
			err := w.checkDisk()
			w.mu.Unlock()
			if err != nil {
				w.stop(err)
			}
		}
	}
}

// checkDisk accounts what was written and reports a write past the
// budget. w.mu is held.
func (w *watcher) checkDisk() *LimitError {
	if w.lim.DiskBudget <= 0 || w.any == nil {
		return nil
	}
	w.account()
	total := w.total()
	if total <= max(w.lim.DiskBudget, w.overAt+diskSlack) {
		return nil
	}
	w.overAt = total
	return &LimitError{Limit: "disk", msg: fmt.Sprintf("the session's commands have written %s to disk, past the session's budget of %s; the command was killed, and so will be any command that writes more than %s more", FormatSize(total), FormatSize(w.lim.DiskBudget), FormatSize(diskSlack))}
}

func (w *watcher) stop(reason *LimitError) {
	w.mu.Lock()
	w.reason = reason
	w.mu.Unlock()
	w.kill()
}

// account reads what the sandbox's processes have written: write_bytes
// of each, which includes what its reaped children wrote. A process that
// is gone leaves its last count.
func (w *watcher) account() {
	alive := map[int]bool{}
	for _, pid := range procs(w.any.dir) {
		alive[pid] = true
		if n, ok := writeBytes(pid); ok {
			w.perPid[pid] = n
		}
	}
	for pid, n := range w.perPid {
		if !alive[pid] {
			w.written += n
			delete(w.perPid, pid)
		}
	}
}

func (w *watcher) total() int64 {
	t := w.written
	for _, n := range w.perPid {
		t += n
	}
	return t
}

// writeBytes reads the bytes a process (and the children it reaped) made
// the kernel write to storage.
func writeBytes(pid int) (int64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// guard reports a limit broken since the last call: a kill by the watch
// loop, a fork the pids cgroup refused, a process the memory limit killed.
func (w *watcher) guard() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	if w.reason != nil {
		errs = append(errs, w.reason)
	}
	if w.pids != nil {
		if n := w.pidsMax(); n > w.pidsSeen {
			w.pidsSeen = n
			if len(errs) == 0 {
				errs = append(errs, &LimitError{Limit: "processes", msg: fmt.Sprintf("the command reached the sandbox's limit of %d processes", w.lim.Pids)})
			}
		}
	}
	if err := w.checkDisk(); err != nil && w.reason == nil {
		errs = append(errs, err) // written since the last poll
	}
	if n := w.oomKills(); n > w.oomSeen {
		w.oomSeen = n
		errs = append(errs, &LimitError{Limit: "memory", msg: fmt.Sprintf("a process of the command was killed for exceeding the sandbox's memory limit of %s", FormatSize(w.lim.Memory))})
	}
	w.reason = nil
	for _, err := range errs {
		if le, ok := err.(*LimitError); ok && le.Limit == "disk" {
			// The budget's slack counts from what the killed command had
			// written when it was gone, not from what the poll that
			// caught it saw: writes in flight at the kill would
			// otherwise use up the slack of the next command.
			w.account()
			w.overAt = max(w.overAt, w.total())
		}
	}
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return errors.Join(errs...)
}
