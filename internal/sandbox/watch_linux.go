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
	// What each measure of the disk budget stood at when it was last
	// past it; the measure may go that far, and diskSlack more. The
	// files' comes down as they are deleted.
	overWritten, overHeld int64
	space                 *space // the space the session's files take

	// the watch loop's own
	pidsLast int64
	hitPolls uint64 // a bit per poll, the newest lowest: forks were refused
}

// newWatcher watches groups; writable are the roots the sandbox's
// commands can write, whose files the disk budget counts too.
func newWatcher(groups []*group, lim Limits, writable []string, kill func()) *watcher {
	w := &watcher{lim: lim, kill: kill, perPid: map[int]int64{}}
	if lim.DiskBudget > 0 {
		w.space = newSpace(writable, lim.DiskBudget)
	}
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
		if w.pollPids() {
			continue
		}
		if time.Since(lastDisk) >= diskEvery {
			lastDisk = time.Now()
			w.mu.Lock()
			err := w.checkDisk()
			w.mu.Unlock()
			if err != nil {
				w.stop(err)
				w.mu.Lock()
				w.settleDisk()
				w.mu.Unlock()
			}
		}
	}
}

// pollPids is a poll of the pids cgroup by the watch loop: it kills
// everything in the sandbox, and reports true, once the command looks
// like a fork bomb.
func (w *watcher) pollPids() bool {
	if w.pids == nil {
		return false
	}
	n := w.pidsMax()
	w.hitPolls = (w.hitPolls << 1) & (1<<forkWindow - 1)
	if n > w.pidsLast {
		w.hitPolls |= 1
	}
	burst := n-w.pidsLast >= forkBurst
	w.pidsLast = n
	if !burst && bits.OnesCount64(w.hitPolls) < forkPolls {
		return false
	}
	w.hitPolls = 0
	w.stop(&LimitError{Limit: "processes", msg: fmt.Sprintf("the command kept hitting the sandbox's limit of %d processes (a fork bomb?) and was killed as soon as it did", w.lim.Pids)})
	// The forks refused while the kill went on are the bomb's, not the
	// next command's: both counts start again from after it.
	n = w.pidsMax()
	w.pidsLast = n
	w.mu.Lock()
	w.pidsSeen = n
	w.mu.Unlock()
	return true
}

// checkDisk accounts what was written, and the space the session's files
// take, and reports either past the budget. w.mu is held.
func (w *watcher) checkDisk() *LimitError {
	if w.lim.DiskBudget <= 0 || w.any == nil {
		return nil
	}
	w.account()
	written := w.total()
	var held int64
	if w.space != nil {
		held = w.space.check(max(w.lim.DiskBudget, w.overHeld+diskSlack), func() []int { return procs(w.any.dir) })
		w.overHeld = min(w.overHeld, held)
	}
	overW := written > max(w.lim.DiskBudget, w.overWritten+diskSlack)
	overH := held > max(w.lim.DiskBudget, w.overHeld+diskSlack)
	if !overW && !overH {
		return nil
	}
	w.overWritten, w.overHeld = max(w.overWritten, written), max(w.overHeld, held)
	if overH && w.space.unread != "" {
		return &LimitError{Limit: "disk", msg: fmt.Sprintf("the files the session's commands wrote take %s of disk or more, past the session's budget of %s: %s cannot be read, so the free space its file system lost counts as theirs; the command was killed, and so will be any command while it cannot be read and the free space falls", FormatSize(held), FormatSize(w.lim.DiskBudget), w.space.unread)}
	}
	if overH && w.space.deleted != "" {
		return &LimitError{Limit: "disk", msg: fmt.Sprintf("the files the session's commands wrote, and the deleted ones their processes hold, take %s of disk or more, past the session's budget of %s (%s, and while a process does, the free space its file system loses counts as the session's); the command was killed, and so will be any command that makes them take more than %s more", FormatSize(held), FormatSize(w.lim.DiskBudget), w.space.deleted, FormatSize(diskSlack))}
	}
	if overH {
		return &LimitError{Limit: "disk", msg: fmt.Sprintf("the files the session's commands wrote take %s of disk, past the session's budget of %s; the command was killed, and so will be any command that makes them take more than %s more", FormatSize(held), FormatSize(w.lim.DiskBudget), FormatSize(diskSlack))}
	}
	return &LimitError{Limit: "disk", msg: fmt.Sprintf("the session's commands have written %s to disk, past the session's budget of %s; the command was killed, and so will be any command that writes more than %s more", FormatSize(written), FormatSize(w.lim.DiskBudget), FormatSize(diskSlack))}
}

// settleDisk takes both measures again once a command past the budget is
// gone: the budget's slack counts from what it had written, and what its
// files took, when it was gone, not from what the poll that caught it
// saw. Writes in flight at the kill would otherwise use up the slack of
// the next command, or kill it. w.mu is held.
func (w *watcher) settleDisk() {
	w.account()
	w.overWritten = max(w.overWritten, w.total())
	if w.space != nil && len(w.space.roots) > 0 {
		w.overHeld = max(w.overHeld, w.space.rewalk(w.space.fall(false), procs(w.any.dir)))
	}
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
			w.settleDisk()
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
