package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// CoordinatorConfig is what Coordinate calls back.
type CoordinatorConfig struct {
	// Done reports whether a job already has an accepted result recorded
	// (a line in the results file). It is consulted for every job at the
	// start and for every result that arrives; nil means none is.
	Done func(id string) bool
	// Verify checks a result before it is accepted (a run's signed ledger
	// against trusted keys). An error rejects the result: Rejected is told,
	// and the job is delivered again, up to MaxRejects times, after which
	// it is accepted as failed with the rejection as its error. Nil
	// accepts every result. Error results come here too, among them those
	// of jobs given up (GaveUp), which carry no payload: they claim no
	// success, and rejecting them sends a job that crashes workers out
	// again, so a Verify should pass them.
	Verify func(ctx context.Context, r Result) error
	// Accept records an accepted result. It is called at most once per job
	// id in a run of Coordinate, and never for an id Done reports; so with
	// Done reflecting what Accept recorded, exactly once over restarts. An
	// error stops Coordinate with it. Required.
	Accept func(ctx context.Context, r Result) error
	// Rejected, when set, is told of each rejected result.
	Rejected func(r Result, err error)
	// MaxRejects is how many rejected results a job may have before it
	// fails (default 2).
	MaxRejects int
	// Logf, when set, receives what Coordinate does not return: a status
	// entry it could not write (statuses are for display; the results are
	// the record).
	Logf func(format string, args ...any)
}

// Summary counts what Coordinate did.
type Summary struct {
	// Jobs is the number of jobs given; Skipped those Done reported at the
	// start; Pending those found still in the queue (not republished);
	// Published those sent (Deduplicated of which the server already had).
	Jobs, Skipped, Pending, Published, Deduplicated int
	// Accepted counts results accepted (Failed of them with an error);
	// Duplicates results of jobs already accepted; Rejected results Verify
	// refused; Unknown results of jobs not in the list.
	Accepted, Failed, Duplicates, Rejected, Unknown int
	// StatusErrors counts status entries that could not be written.
	StatusErrors int
}

// retry runs op until it succeeds, ctx ends or attempts are spent, with a
// backoff from 250 ms (a cluster electing a leader, a server restarting).
func retry(ctx context.Context, attempts int, op func() error) error {
	backoff := 250 * time.Millisecond
	for i := 1; ; i++ {
		err := op()
		if err == nil || i == attempts || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 4*time.Second)
	}
}

// Coordinate runs jobs through the queue: it publishes the jobs that have
// no result yet and are not in the queue already, reads the results
// stream from its start (taking up results that arrived while no
// coordinator was running), verifies and accepts exactly one result per
// job, and returns once every job has one. A coordinator stopped at any
// point and started again with the same jobs and a Done that reflects
// Accept resumes where it was; no job runs twice because of the restart
// except one whose worker was lost in the meantime.
func (q *Queue) Coordinate(ctx context.Context, jobs []Job, cfg CoordinatorConfig) (Summary, error) {
	var sum Summary
	if cfg.Accept == nil {
		return sum, errors.New("queue: the coordinator needs an Accept callback")
	}
	if cfg.MaxRejects <= 0 {
		cfg.MaxRejects = 2
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	statusErr := func(err error) {
		sum.StatusErrors++
		logf("queue: %v", err)
	}
	done := cfg.Done
	if done == nil {
		done = func(string) bool { return false }
	}
	byID := make(map[string]Job, len(jobs))
	for _, j := range jobs {
		if err := j.validate(); err != nil {
			return sum, err
		}
		if _, dup := byID[j.ID]; dup {
			return sum, fmt.Errorf("queue: job id %q given twice", j.ID)
		}
		byID[j.ID] = j
	}
	sum.Jobs = len(jobs)
	open := map[string]bool{} // jobs without an accepted result
	for _, j := range jobs {
		if done(j.ID) {
			sum.Skipped++
		} else {
			open[j.ID] = true
		}
	}
	if len(open) == 0 {
		return sum, nil
	}

	// Jobs still in the queue (queued, or in a worker's hands) are not
	// published again; this is read before the results so that a job
	// acknowledged in between has its result in the stream already.
	pending, err := q.Pending(ctx)
	if err != nil {
		return sum, err
	}
	cons, err := q.js.OrderedConsumer(ctx, q.streamRes, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return sum, fmt.Errorf("queue: results consumer: %w", err)
	}
	it, err := cons.Messages()
	if err != nil {
		return sum, fmt.Errorf("queue: results consumer: %w", err)
	}
	defer it.Stop()
	// The results already in the stream when the consumer started.
	var backlog bool
	if ci := cons.CachedInfo(); ci != nil {
		backlog = ci.NumPending > 0
	} else {
		res, err := q.js.Stream(ctx, q.streamRes)
		if err != nil {
			return sum, fmt.Errorf("queue: results stream: %w", err)
		}
		backlog = res.CachedInfo().State.Msgs > 0
	}

	rejects := map[string]int{}
	handle := func(r Result) error {
		if _, ok := byID[r.JobID]; !ok {
			sum.Unknown++
			return nil
		}
		if !open[r.JobID] || done(r.JobID) {
			sum.Duplicates++
			return nil
		}
		if cfg.Verify != nil {
			if verr := cfg.Verify(ctx, r); verr != nil {
				sum.Rejected++
				if cfg.Rejected != nil {
					cfg.Rejected(r, verr)
				}
				rejects[r.JobID]++
				if n := rejects[r.JobID]; n < cfg.MaxRejects {
					j := byID[r.JobID]
					if err := q.putStatusAsync(ctx, []JobStatus{{ID: j.ID, State: Queued, Error: "result rejected: " + verr.Error()}}); err != nil {
						statusErr(err)
					}
					return retry(ctx, 6, func() error {
						_, err := q.publish(ctx, []Job{j}, func(j Job) string { return j.ID + "#rejected-" + strconv.Itoa(n) })
						return err
					})
				}
				r = Result{
					JobID: r.JobID, Worker: r.Worker, Deliveries: r.Deliveries,
					Error: fmt.Sprintf("result rejected %d times; last: %v", cfg.MaxRejects, verr),
				}
			}
		}
		if err := cfg.Accept(ctx, r); err != nil {
			return fmt.Errorf("queue: accept result of %s: %w", r.JobID, err)
		}
		delete(open, r.JobID)
		sum.Accepted++
		st := JobStatus{ID: r.JobID, State: Done, Worker: r.Worker, Deliveries: r.Deliveries, Started: r.Started}
		if r.Error != "" {
			sum.Failed++
			st.State, st.Error = Failed, r.Error
		}
		if !r.Started.IsZero() {
			st.Heartbeat = r.Started.Add(r.Duration)
		}
		if err := retry(ctx, 3, func() error { _, err := q.putStatus(ctx, st, false); return err }); err != nil {
			statusErr(fmt.Errorf("status of %s: %w", r.JobID, err))
		}
		return nil
	}
	// next returns the next result and how many messages followed it in
	// the stream when it was delivered; ok is false for a message that is
	// not a result this package wrote.
	next := func() (r Result, following uint64, ok bool, err error) {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return r, 0, false, ctx.Err()
			}
			return r, 0, false, fmt.Errorf("queue: results: %w", err)
		}
		if md, err := m.Metadata(); err == nil {
			following = md.NumPending
		}
		r, err = parseResult(m)
		if err != nil {
			sum.Unknown++
			return r, following, false, nil
		}
		return r, following, true, nil
	}

	// Take up the results already in the stream.
	for more := backlog; more && len(open) > 0; {
		r, following, ok, err := next()
		if err != nil {
			return sum, err
		}
		more = following > 0
		if !ok {
			continue
		}
		if err := handle(r); err != nil {
			return sum, err
		}
	}

	var publish []Job
	var queued []JobStatus
	now := time.Now()
	for _, j := range jobs {
		if !open[j.ID] {
			continue
		}
		if pending[j.ID] {
			sum.Pending++
			continue
		}
		publish = append(publish, j)
		queued = append(queued, JobStatus{ID: j.ID, State: Queued, Heartbeat: now})
	}
	if len(publish) > 0 {
		if err := q.putStatusAsync(ctx, queued); err != nil {
			statusErr(err)
		}
		// Publication is idempotent: a retry after a partial failure
		// stores only what is missing.
		var dups int
		err := retry(ctx, 6, func() error {
			var err error
			dups, err = q.Publish(ctx, publish...)
			return err
		})
		if err != nil {
			return sum, err
		}
		sum.Published, sum.Deduplicated = len(publish), dups
	}

	for len(open) > 0 {
		r, _, ok, err := next()
		if err != nil {
			return sum, err
		}
		if !ok {
			continue
		}
		if err := handle(r); err != nil {
			return sum, err
		}
	}
	return sum, nil
}
