package container

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// stopScript stops every process in the container but PID 1, the
// supervisor and itself, and reports what is left. It runs as the
// container's root, through the engine's exec, so it can signal
// processes that changed user.
//
// The supervisor is PID 1 itself, or (under the engine's init) the
// oldest process after it: the container's main process, which every
// command's process was started after, and whose death would end the
// container; no command can replace it. Each round first stops every
// other process (SIGSTOP: a stopped process cannot fork), then kills
// them, until a round finds none left alive; zombies are dead already.
//
// Its last line is "stopped", or "left PID…" when processes survived
// every round.
const stopScript = `self=$$
sup=1 oldest=
read -r one </proc/1/comm
if [ "$one" != bash ]; then
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    if [ "$p" = 1 ] || [ "$p" = "$self" ]; then continue; fi
    st=
    read -r st <"$d/stat" 2>/dev/null || continue
    set -- ${st##*) }
    if [ "$2" = 1 ] && { [ -z "$oldest" ] || [ "${20}" -lt "$oldest" ]; }; then sup=$p oldest=${20}; fi
  done
fi
for round in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
  left=
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    if [ "$p" = 1 ] || [ "$p" = "$self" ] || [ "$p" = "$sup" ]; then continue; fi
    st=
    read -r st <"$d/stat" 2>/dev/null || continue
    case ${st##*) } in Z*|X*|'') continue;; esac
    left="$left $p"
  done
  [ -z "$left" ] && break
  kill -STOP $left 2>/dev/null
  kill -KILL $left 2>/dev/null
done
if [ -n "$left" ]; then echo "left$left"; else echo stopped; fi`

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
	args := append([]string{"exec", "--user", "0", v.id}, "bash", "-c", stopScript, "truss-stop")
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
