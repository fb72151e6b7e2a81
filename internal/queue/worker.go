package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// Handler runs one job and returns its result's payload. progress may be
// called at any time with a short note ("turn 12"): it heartbeats the job
// at once and shows the note in the job's status. The worker heartbeats on
// its own as well while the handler runs, so a handler that blocks for
// longer than the ack wait (a slow model call) keeps its job.
//
// An error ends the job with an error result, which is final; wrap it
// with Retry for a transient failure that another delivery may not have.
// A panic is recovered and treated as a transient failure: a job that
// panics on every delivery is given up (by the server and the
// coordinator) after MaxDeliver of them.
type Handler func(ctx context.Context, job Job, progress func(note string)) ([]byte, error)

// Retry marks err as transient: the job is delivered again (to any
// worker), counting towards MaxDeliver, instead of ending with err.
func Retry(err error) error { return &retryError{err} }

type retryError struct{ err error }

func (e *retryError) Error() string { return "retry: " + e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

// IsRetry reports whether err asks for another delivery.
func IsRetry(err error) bool {
	var r *retryError
	return errors.As(err, &r)
}

// WorkerConfig configures a Worker.
type WorkerConfig struct {
	// ID names the worker in results and statuses (default
	// HOSTNAME-PID-RANDOM).
	ID string
	// Parallel is the number of jobs run at once (default 1).
	Parallel int
	// ExitWhenIdle ends Run once the queue has held no job (queued or in
	// hand anywhere) for IdleWait. Jobs in hand on other workers keep it
	// waiting: their redelivery may need it.
	ExitWhenIdle bool
	// IdleWait defaults to PollWait.
	IdleWait time.Duration
	// GoneWait matters with ExitWhenIdle only (default 30 s): Run ends
	// once the server has been unreachable that long with no job in hand,
	// as when the coordinator that embedded it has finished, and a
	// finished job's result is given up (the job is delivered again if
	// the server comes back) once the connection has been down that long.
	// Without ExitWhenIdle a result is kept and retried until the results
	// stream stores it, however long the server or the stream's leader is
	// away (or until Run's context ends).
	GoneWait time.Duration
	// PollWait is how long one pull waits for a job (default 1 s); it
	// bounds how late Drain and the idle check are noticed.
	PollWait time.Duration
	// Heartbeat is the interval of automatic heartbeats (default a third
	// of the queue's ack wait).
	Heartbeat time.Duration
	// RetryDelay is how long a job returned with Retry (or a panic) waits
	// before its next delivery (default 1 s, at most the ack wait).
	RetryDelay time.Duration
	// Logf, when set, receives what the worker does not return: a status
	// write that failed, a message it could not read.
	Logf func(format string, args ...any)
}

// WorkerStats counts what a worker did.
type WorkerStats struct {
	// Ran counts jobs whose handler returned and whose result was
	// published; Retried those it asked to be delivered again.
	Ran, Retried int64
}

// Worker pulls jobs from a queue and runs them.
type Worker struct {
	q     *Queue
	cfg   WorkerConfig
	h     Handler
	drain chan struct{}
	once  sync.Once

	ran, retried atomic.Int64
}

// NewWorker makes a worker of q running h.
func (q *Queue) NewWorker(cfg WorkerConfig, h Handler) (*Worker, error) {
	if h == nil {
		return nil, errors.New("queue: a worker needs a handler")
	}
	if cfg.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		cfg.ID = host + "-" + strconv.Itoa(os.Getpid()) + "-" + nuid.Next()[16:]
	}
	for _, r := range cfg.ID {
		if r < ' ' || r == 0x7f {
			return nil, fmt.Errorf("queue: worker id %q has a control character", cfg.ID)
		}
	}
	if cfg.Parallel <= 0 {
		cfg.Parallel = 1
	}
	if cfg.PollWait <= 0 {
		cfg.PollWait = time.Second
	}
	if cfg.IdleWait <= 0 {
		cfg.IdleWait = cfg.PollWait
	}
	if cfg.GoneWait <= 0 {
		cfg.GoneWait = 30 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = q.cfg.AckWait / 3
	}
	if cfg.RetryDelay <= 0 {
		cfg.RetryDelay = time.Second
	}
	cfg.RetryDelay = min(cfg.RetryDelay, q.cfg.AckWait)
	return &Worker{q: q, cfg: cfg, h: h, drain: make(chan struct{})}, nil
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Stats is what the worker did so far.
func (w *Worker) Stats() WorkerStats {
	return WorkerStats{Ran: w.ran.Load(), Retried: w.retried.Load()}
}

// Drain makes Run take no new job and return once the jobs in hand are
// finished and their results published (what SIGTERM should do).
func (w *Worker) Drain() { w.once.Do(func() { close(w.drain) }) }

func (w *Worker) logf(format string, args ...any) {
	if w.cfg.Logf != nil {
		w.cfg.Logf(format, args...)
	}
}

// Run pulls and runs jobs with cfg.Parallel slots until Drain is called
// (it returns nil once the jobs in hand are done), the queue is idle with
// ExitWhenIdle (nil), or ctx ends: then the jobs in hand are cancelled and
// handed back for redelivery, and Run returns ctx's error.
func (w *Worker) Run(ctx context.Context) error {
	fetchCtx, stopFetch := context.WithCancel(ctx)
	defer stopFetch()
	go func() {
		select {
		case <-w.drain:
			stopFetch()
		case <-fetchCtx.Done():
		}
	}()
	idle := &idleState{}
	var inHand atomic.Int32
	var wg sync.WaitGroup
	for range w.cfg.Parallel {
		wg.Go(func() { w.slot(ctx, fetchCtx, stopFetch, &inHand, idle) })
	}
	wg.Wait()
	// Acks and naks are sent without waiting for a reply; make sure they
	// have left before the caller closes the connection.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	_ = w.q.nc.FlushWithContext(fctx)
	cancel()
	return ctx.Err()
}

type idleState struct {
	mu    sync.Mutex
	since time.Time
	// gone is when the server was first found unreachable.
	gone time.Time
}

func (w *Worker) slot(ctx, fetchCtx context.Context, stopFetch func(), inHand *atomic.Int32, idle *idleState) {
	backoff := 50 * time.Millisecond
	for fetchCtx.Err() == nil {
		pctx, cancel := context.WithTimeout(fetchCtx, w.cfg.PollWait)
		msg, err := w.q.cons.Next(jetstream.FetchContext(pctx))
		cancel()
		if err != nil {
			if fetchCtx.Err() != nil {
				return
			}
			if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrNoMessages) {
				backoff = 50 * time.Millisecond
				if w.cfg.ExitWhenIdle && w.idle(fetchCtx, inHand, idle) {
					stopFetch()
					return
				}
				continue
			}
			// The connection is down or the server is restarting: the
			// client reconnects; wait and pull again.
			w.logf("queue: worker %s: pull: %v", w.cfg.ID, err)
			if w.cfg.ExitWhenIdle && w.idle(fetchCtx, inHand, idle) {
				stopFetch()
				return
			}
			select {
			case <-fetchCtx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 2*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		if fetchCtx.Err() != nil {
			// Arrived as the worker stopped taking jobs: hand it back now.
			_ = msg.Nak()
			return
		}
		inHand.Add(1)
		idle.mu.Lock()
		idle.since = time.Time{}
		idle.mu.Unlock()
		w.process(ctx, msg)
		inHand.Add(-1)
	}
}

// idle reports whether the queue has been empty, here and everywhere, for
// IdleWait.
func (w *Worker) idle(ctx context.Context, inHand *atomic.Int32, st *idleState) bool {
	if inHand.Load() > 0 {
		return false
	}
	ictx, cancel := context.WithTimeout(ctx, w.cfg.PollWait)
	info, err := w.q.jobs.Info(ictx)
	cancel()
	st.mu.Lock()
	defer st.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		if st.gone.IsZero() {
			st.gone = time.Now()
		}
		if time.Since(st.gone) >= w.cfg.GoneWait && inHand.Load() == 0 {
			w.logf("queue: worker %s: the server has been unreachable for %v with no job in hand; exiting as idle (%v)", w.cfg.ID, w.cfg.GoneWait, err)
			return true
		}
		return false
	}
	st.gone = time.Time{}
	if info.State.Msgs > 0 || inHand.Load() > 0 {
		st.since = time.Time{}
		return false
	}
	if st.since.IsZero() {
		st.since = time.Now()
	}
	return time.Since(st.since) >= w.cfg.IdleWait
}

func (w *Worker) process(ctx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil {
		w.logf("queue: worker %s: a job message without metadata: %v", w.cfg.ID, err)
		return
	}
	id := msg.Headers().Get(hdrJob)
	if id == "" {
		w.logf("queue: worker %s: job message %d has no %s header; terminated", w.cfg.ID, md.Sequence.Stream, hdrJob)
		_ = msg.Term()
		return
	}
	deliveries := int(md.NumDelivered)
	// The status entry is display: whatever it says (a worker may have
	// written "done"), the job runs. A job whose result the coordinator
	// accepted is no longer in the queue.
	st, err := w.q.getStatus(ctx, id)
	if err != nil {
		w.logf("queue: worker %s: status of %s: %v", w.cfg.ID, id, err)
		st = JobStatus{ID: id}
	}
	started := time.Now()
	run := &running{w: w, msg: msg, st: JobStatus{
		ID: id, State: Running, Worker: w.cfg.ID, Started: started, Heartbeat: started,
		Deliveries: deliveries, rev: st.rev,
	}}
	run.writeStatus(ctx)
	// Heartbeats go on until the result is stored: a worker waiting out an
	// outage keeps its job.
	hbCtx, stopBeats := context.WithCancel(ctx)
	jobCtx, cancelJob := context.WithCancel(ctx)
	beat := make(chan struct{}, 1)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		run.heartbeats(hbCtx, beat)
	}()
	defer func() {
		stopBeats()
		<-hbDone
	}()
	progress := func(note string) {
		run.mu.Lock()
		run.st.Note = note
		run.mu.Unlock()
		select {
		case beat <- struct{}{}:
		default:
		}
	}
	payload, herr := w.call(jobCtx, Job{ID: id, Payload: msg.Data()}, progress)
	cancelJob()
	dur := time.Since(started)

	if ctx.Err() != nil {
		// Stopped hard: hand the job back for another worker.
		_ = msg.Nak()
		return
	}
	if IsRetry(herr) {
		stopBeats()
		<-hbDone
		w.retried.Add(1)
		w.logf("queue: worker %s: job %s (delivery %d): %v", w.cfg.ID, id, deliveries, herr)
		run.mu.Lock()
		run.st.State, run.st.Worker, run.st.Error = Queued, "", herr.Error()
		run.mu.Unlock()
		run.writeStatus(ctx)
		_ = msg.NakWithDelay(w.cfg.RetryDelay)
		return
	}
	r := Result{JobID: id, Worker: w.cfg.ID, Deliveries: deliveries, Payload: payload, Started: started, Duration: dur, jobSeq: md.Sequence.Stream}
	if herr != nil {
		r.Error = herr.Error()
	}
	// The result is stored before the ack: a worker lost in between has
	// its job delivered again, and the coordinator keeps the first result.
	// A worker that exits when idle gives a result up once the server
	// has been unreachable for GoneWait (its coordinator may have
	// finished); any other keeps it as long as it runs.
	var goneWait time.Duration
	if w.cfg.ExitWhenIdle {
		goneWait = w.cfg.GoneWait
	}
	if err := w.q.publishResult(ctx, r, goneWait, w.logf); err != nil {
		w.logf("queue: worker %s: %v", w.cfg.ID, err)
		_ = msg.Nak()
		return
	}
	w.ran.Add(1)
	_ = msg.Ack()
}

// call runs the handler, turning a panic into a transient failure.
func (w *Worker) call(ctx context.Context, job Job, progress func(string)) (out []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = Retry(fmt.Errorf("handler panicked: %v\n%s", p, debug.Stack()))
		}
	}()
	return w.h(ctx, job, progress)
}

// running is a job in hand: its message and its status entry.
type running struct {
	w   *Worker
	msg jetstream.Msg
	mu  sync.Mutex
	st  JobStatus
	// gone is set when the entry turned terminal under us (the job's
	// result accepted elsewhere, or so a worker wrote): this run no
	// longer writes it, but runs on.
	gone bool
}

func (r *running) heartbeats(ctx context.Context, beat <-chan struct{}) {
	t := time.NewTicker(r.w.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-beat:
		}
		_ = r.msg.InProgress()
		r.mu.Lock()
		r.st.Heartbeat = time.Now()
		r.mu.Unlock()
		r.writeStatus(ctx)
	}
}

// writeStatus writes the run's status entry over the revision it last
// saw; if another writer came between, it takes the entry over unless the
// entry says done or failed. It reports whether it still writes it.
func (r *running) writeStatus(ctx context.Context) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gone {
		return false
	}
	for range 3 {
		rev, err := r.w.q.putStatus(ctx, r.st, true)
		if err == nil {
			r.st.rev = rev
			return true
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			r.w.logf("queue: worker %s: status of %s: %v", r.w.cfg.ID, r.st.ID, err)
			return true
		}
		cur, err := r.w.q.getStatus(ctx, r.st.ID)
		if err != nil {
			r.w.logf("queue: worker %s: status of %s: %v", r.w.cfg.ID, r.st.ID, err)
			return true
		}
		if cur.State.terminal() {
			r.gone = true
			return false
		}
		r.st.rev = cur.rev
	}
	return true
}
