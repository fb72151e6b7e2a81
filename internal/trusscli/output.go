package trusscli

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// errOutputClosed is the cause of a run stopped because its output was
// closed (the reader of a pipe went away: `truss run … | head`).
var errOutputClosed = errors.New("the output was closed")

// exitOutputClosed is the exit status of such a run: that of a program
// stopped by SIGPIPE, as a pipeline expects.
const exitOutputClosed = 141

// output is a command's stdout and stderr, watched: a write that finds the
// reader gone stops the run as a cancel does, instead of SIGPIPE killing
// Truss with the session unsaved, the ledger unsealed and temporary files
// left behind.
type output struct {
	stdout, stderr io.Writer
	stop           context.CancelCauseFunc
}

// watchOutput returns a context that ends when ctx does or when stdout or
// stderr turns out to be a closed pipe, and the writers to use. SIGPIPE is
// ignored from then on, so that a write to a closed pipe fails with EPIPE
// (Go's runtime otherwise dies of SIGPIPE on a write to a broken standard
// output or error). A standard output or error that is a pipe is also
// watched while nothing is written, so that a closed reader stops a long
// command, or a model slow to answer, at once.
func watchOutput(ctx context.Context, stdout, stderr io.Writer) (context.Context, *output) {
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := context.WithCancelCause(ctx)
	o := &output{stop: stop}
	o.stdout = &pipeWriter{w: stdout, o: o}
	o.stderr = &pipeWriter{w: stderr, o: o}
	var pipes []*os.File
	for _, w := range []io.Writer{stdout, stderr} {
		if f, ok := w.(*os.File); ok && isPipe(f) {
			pipes = append(pipes, f)
		}
	}
	if len(pipes) > 0 {
		go o.watch(ctx, pipes)
	}
	return ctx, o
}

// closed reports whether the run was stopped by a closed output.
func (o *output) closed(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), errOutputClosed)
}

// watch waits for the reader of one of the pipes fs to go away.
func (o *output) watch(ctx context.Context, fs []*os.File) {
	fds := make([]unix.PollFd, 0, len(fs))
	for _, f := range fs {
		rc, err := f.SyscallConn()
		if err != nil {
			return
		}
		var fd int32
		rc.Control(func(d uintptr) { fd = int32(d) })
		fds = append(fds, unix.PollFd{Fd: fd, Events: 0}) // POLLERR and POLLHUP are always reported
	}
	for ctx.Err() == nil {
		n, err := unix.Poll(fds, 1000)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		if err != nil {
			return
		}
		for _, p := range fds {
			if p.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
				o.stop(errOutputClosed)
				return
			}
		}
		return
	}
}

func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeNamedPipe != 0
}

// pipeWriter stops the run when its writer's reader is gone.
type pipeWriter struct {
	w    io.Writer
	o    *output
	once sync.Once
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if err != nil && errors.Is(err, syscall.EPIPE) {
		p.once.Do(func() { p.o.stop(errOutputClosed) })
	}
	return n, err
}
