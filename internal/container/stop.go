package container

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// stopScript stops every process in the container but PID 1, the
// supervisor, and itself, and reports what is left. It runs as the
// container's root, through the engine's exec, so it can signal
// processes that changed user. Each round first stops every other
// process (SIGSTOP: a stopped process cannot fork), then kills them,
// until a round finds none left alive; zombies are dead already.
//
// Its last line is "stopped", or "left PID…" when processes survived
// every round.
const stopScript = `self=$$
for round in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  left=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    if [ "$p" = 1 ] || [ "$p" = "$self" ]; then continue; fi
    # A process is alive while any of its threads is: a leader that
    # exited (SYS_exit in the main thread) shows Z while others run.
    alive=
    for t in "$d"/task/[0-9]*; do
      st=
      read -r st <"$t/stat" 2>/dev/null || continue
      case ${st##*) } in Z*|X*|'') ;; *) alive=1; break;; esac
    done
    [ -n "$alive" ] && left="$left $p"
  done
  [ -z "$left" ] && break
  kill -STOP $left 2>/dev/null
  kill -KILL $left 2>/dev/null
done
if [ -n "$left" ]; then echo "left$left"; else echo stopped; fi`

// Halt kills every process in the container at once, PID 1 included
// (the engine kills the container; the kernel then kills everything in
// its PID namespace, whatever a process did to itself or to others:
// threads of a leader that exited, a traced or replaced init), and waits
// until the container has stopped. The container keeps its file system;
// Resume starts it again. Nothing runs in a halted container, so nothing
// of it can change the workspace while the verification boundary's
// checks, in a fresh container (Engine.Start), read it. Shells open
// before Halt are dead; their sessions start new ones after Resume.
func (v *Env) Halt(ctx context.Context) error {
	v.mu.Lock()
	closed := v.closed
	v.mu.Unlock()
	if closed {
		return errors.New("the container is removed")
	}
	if _, err := v.engine.output(ctx, "kill", "--signal", "KILL", v.id); err != nil {
		// Stopped already is fine; anything else is an error.
		if st, ierr := v.status(ctx); ierr != nil || st == "running" || st == "paused" {
			return fmt.Errorf("kill container %.12s: %w", v.id, err)
		}
	}
	if _, err := v.engine.output(ctx, "wait", v.id); err != nil {
		return fmt.Errorf("wait for container %.12s to stop: %w", v.id, err)
	}
	if st, err := v.status(ctx); err != nil {
		return err
	} else if st == "running" || st == "paused" {
		return fmt.Errorf("container %.12s is still %s after being killed", v.id, st)
	}
	return nil
}

// Resume starts a halted container again: its init and a new supervisor
// (the image's entrypoint as Start set it), in the file system the
// container had. A running container is left alone.
func (v *Env) Resume(ctx context.Context) error {
	st, err := v.status(ctx)
	if err != nil {
		return err
	}
	if st != "running" {
		if _, err := v.engine.output(ctx, "start", v.id); err != nil {
			return fmt.Errorf("start container %.12s again: %w", v.id, err)
		}
	}
	return v.waitSupervisor(ctx)
}

// status is the container's state as the engine says it ("running",
// "exited", …).
func (v *Env) status(ctx context.Context) (string, error) {
	out, err := v.engine.output(ctx, "container", "inspect", "--format", "{{.State.Status}}", v.id)
	if err != nil {
		return "", fmt.Errorf("inspect container %.12s: %w", v.id, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// ErrProcessesLeft is returned by StopAll when processes of the
// container survived every round of killing.
var ErrProcessesLeft = errors.New("processes in the container survived being killed")

// StopAll kills every process in the container except its init, so that
// nothing a command started (a background job, a daemon, a process that
// changed user) runs any more: the verification boundary's checks then
// run alone. It goes through the engine (an exec as the container's
// root), never through the supervisor's control FIFO or the state
// directory, which every process in the container can open, read and
// write: a process left behind could steal or answer what goes there.
//
// The supervisor is spared (see stopScript), so the next shell starts as
// before. Shells open before StopAll are dead; their sessions start new
// ones. An error means the container cannot be trusted to run
// checks: ErrProcessesLeft (wrapped) when processes survived, or the
// engine's failure.
func (v *Env) StopAll(ctx context.Context) error {
	// A killed process can take a while to be gone (a loaded host, an
	// exit that waits on I/O): the script is run again until nothing is
	// left or stopAllWait has passed.
	deadline := time.Now().Add(stopAllWait)
	for {
		err := v.stopOnce(ctx)
		if !errors.Is(err, ErrProcessesLeft) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stopAllWait bounds how long StopAll waits for killed processes to go.
const stopAllWait = 15 * time.Second

// stopOnce runs stopScript once.
func (v *Env) stopOnce(ctx context.Context) error {
	// By absolute path: a command (root in the container) can put a bash
	// of its own first on the image's PATH.
	args := append([]string{"exec", "--user", "0", v.id}, "/bin/bash", "-c", stopScript, "truss-stop")
	out, err := v.engine.output(ctx, args...)
	if err != nil {
		return fmt.Errorf("stop the processes in container %.12s: %w", v.id, err)
	}
	last := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(last, '\n'); i >= 0 {
		last = last[i+1:]
	}
	switch {
	case last == "stopped":
		return nil
	case strings.HasPrefix(last, "left"):
		return fmt.Errorf("%w: processes%s", ErrProcessesLeft, strings.TrimPrefix(last, "left"))
	}
	return fmt.Errorf("stop the processes in container %.12s: unexpected answer %q", v.id, last)
}
