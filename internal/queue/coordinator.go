package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// CoordinatorConfig is what Coordinate calls back.
type CoordinatorConfig struct {
	// Done reports whether a job already has an accepted result recorded
	// (a line in the results file). It is consulted for every job at the
	// start and for every result that arrives; nil means none is. It is
	// the coordinator's own record: the status bucket, which any worker
	// writes, decides nothing.
	Done func(id string) bool
	// Verify checks a result a worker published before it is accepted,
	// whatever the result says of itself (success, an error): the result
	// must prove that it is this job's. It returns the result's source,
	// the key that signed it. An error rejects the result: Rejected is
	// told, and the job goes on (published again if no delivery of it is
	// left in the queue). A rejection with an empty source — a result
	// that is unsigned, signed by no trusted key, or proof of some other
	// job (a replay) — is counted against one anonymous source that can
	// fail no job. A rejection with a source counts against that source
	// for this job: after MaxRejects of them the job is accepted as
	// failed with the last reason. Nil accepts every result (its source
	// is then its worker's id), error results included.
	Verify func(ctx context.Context, r Result) (source string, err error)
	// Accept records an accepted result. It is called at most once per job
	// id in a run of Coordinate, and never for an id Done reports; so with
	// Done reflecting what Accept recorded, exactly once over restarts. An
	// error stops Coordinate with it: it should fail only for what a
	// restart can mend (a full disk), never for what a result holds,
	// which Verify refuses. Required.
	//
	// Results the coordinator decides itself have Seq 0: a job given up
	// (GaveUp; the server counted its deliveries) and a job whose
	// results one source had rejected MaxRejects times, or that had no
	// provable result after MaxRepublish publications again.
	Accept func(ctx context.Context, r Result) error
	// Rejected, when set, is told of each rejected result and its source
	// ("" for the anonymous one).
	Rejected func(r Result, source string, err error)
	// MaxRejects is how many rejected results one source may have for a
	// job before the job fails (default 2).
	MaxRejects int
	// MaxRepublish is how many times a job is published again once no
	// delivery of it is left in the queue and it has no accepted result:
	// its results were all rejected, or its message was acknowledged with
	// no result (by a worker that took it and sent none, or a client that
	// acknowledged another worker's delivery). Default
	// DefaultMaxRepublish. Once it has been, the next such publication
	// fails the job, "no provable result", naming the sources refused and
	// the publications acknowledged with no result: workers that take a
	// job and return what proves nothing (a key the coordinator does not
	// trust, another version), or acknowledge it away, would otherwise
	// have it published without end.
	MaxRepublish int
	// Logf, when set, receives what Coordinate does not return: a status
	// entry it could not write (statuses are for display; the results are
	// the record), a message on the results stream that is not a result
	// (skipped).
	Logf func(format string, args ...any)
}

// DefaultMaxRepublish is CoordinatorConfig.MaxRepublish's default: a
// job is published at most four times in all while each publication
// leaves the queue without a result that is accepted.
const DefaultMaxRepublish = 3

// Anonymous is the source of rejected results that prove nothing
// (unsigned, signed by no trusted key, a replay of another job's) in
// Summary.RejectedBy.
const Anonymous = "(anonymous)"

// Summary counts what Coordinate did.
type Summary struct {
	// Jobs is the number of jobs given; Skipped those Done reported at the
	// start; Pending those found still in the queue (not republished);
	// Published those sent (Deduplicated of which the server already had).
	Jobs, Skipped, Pending, Published, Deduplicated int
	// Accepted counts results accepted (Failed of them with an error,
	// GaveUp of those given up for too many deliveries); Duplicates
	// results of jobs already accepted; Rejected results Verify refused;
	// Unknown results of jobs not in the list; Unreadable messages on the
	// results stream that are not results (skipped and logged).
	Accepted, Failed, GaveUp, Duplicates, Rejected, Unknown, Unreadable int
	// RejectedBy counts rejected results by source (Anonymous for those
	// that name none).
	RejectedBy map[string]int
	// Republished counts publications again of jobs of which no
	// delivery was left in the queue and no result accepted; Lost counts
	// the publications that left the queue with no result at all (their
	// message acknowledged by a client that sent none), whether the job
	// was then published again or failed.
	Republished, Lost int
	// Refuted counts advisories of a job given up that the server's own
	// state refuted: the job's message was acknowledged or removed before
	// the consumer's state bore the advisory out (an advisory written by a
	// client, not the server; or one the server wrote, of a job whose
	// late result was accepted first).
	Refuted int
	// Unprovable counts jobs failed for having no provable result after
	// MaxRepublish publications again (results refused, or publications
	// acknowledged with no result).
	Unprovable int
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
// coordinator was running) and the server's advisories of jobs delivered
// MaxDeliver times, verifies and accepts exactly one result per job, and
// returns once every job has one. A job that leaves the queue with no
// accepted result (its results refused, or its message acknowledged by a
// client that sent no result: see watch) is published again, at most
// MaxRepublish times. A coordinator stopped at any point and
// started again with the same jobs and a Done that reflects Accept
// resumes where it was; no job runs twice because of the restart except
// one whose worker was lost in the meantime.
//
// Nothing a worker publishes is taken at its word: a result counts only
// once Verify accepts it, a job is given up only when the server's
// advisory says it was delivered MaxDeliver times and the consumer's own
// state bears that out (an advisory is a message any client allowed to
// publish on its subject could write; see giveUps), and the status bucket
// is display. A message that is not a result is skipped and logged, never
// read again within the run (a restart reads the stream from its start
// again, and skips it again).
func (q *Queue) Coordinate(ctx context.Context, jobs []Job, cfg CoordinatorConfig) (Summary, error) {
	sum := Summary{RejectedBy: map[string]int{}}
	if cfg.Accept == nil {
		return sum, errors.New("queue: the coordinator needs an Accept callback")
	}
	if cfg.MaxRejects <= 0 {
		cfg.MaxRejects = 2
	}
	if cfg.MaxRepublish <= 0 {
		cfg.MaxRepublish = DefaultMaxRepublish
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
	// This run's publications have message ids of their own: a job a
	// previous run published (and a worker then took) within the
	// duplicate window is published again when it is missing, not
	// dropped as a duplicate; a retry within this run stores nothing
	// twice.
	nonce := nuid.Next()
	republished := map[string]int{}

	// Jobs still in the queue (queued, or in a worker's hands) are not
	// published again; this is read before the results so that a job
	// acknowledged in between has its result in the stream already.
	var pending map[string][]uint64
	if err := startRetry(ctx, func(ctx context.Context) (err error) { pending, err = q.pendingSeqs(ctx); return err }); err != nil {
		return sum, err
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	results, resBacklog, err := q.follow(cctx, q.streamRes, "results")
	if err != nil {
		return sum, err
	}
	events, evBacklog, err := q.follow(cctx, q.streamEvents, "advisories")
	if err != nil {
		return sum, err
	}

	rejects := map[string]int{}            // by job and source
	refused := map[string]map[string]int{} // by job, then source
	// refusedNow marks the jobs with a result refused since their last
	// publication; acked counts, by job, publications that left the
	// queue with no result at all.
	refusedNow := map[string]bool{}
	acked := map[string]int{}
	// handled is the last sequence of the results stream handled.
	var handled uint64
	watched := newWatch(q)
	settling := map[string]time.Time{} // accepted, by when
	tick := time.NewTicker(min(q.cfg.AckWait/2, time.Second))
	defer tick.Stop()
	accept := func(r Result) error {
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
		if r.GaveUp {
			sum.GaveUp++
		}
		if !r.Started.IsZero() {
			st.Heartbeat = r.Started.Add(r.Duration)
		}
		if err := retry(ctx, 3, func() error { _, err := q.putStatus(ctx, st, false); return err }); err != nil {
			statusErr(fmt.Errorf("status of %s: %w", r.JobID, err))
		}
		// A delivery of it left in the queue (a worker stalled past the
		// ack wait, an ack lost, a job given up) is removed at the next
		// recheck, so that it is not run again; the worker that sent the
		// result has acknowledged it by then (removing it at once would
		// race its ack, and costs the server a deletion per job).
		settling[r.JobID] = time.Now()
		if r.GaveUp {
			if err := retry(ctx, 3, func() error { return q.purgeJob(ctx, r.JobID) }); err != nil {
				logf("queue: removing the given-up job %s from the queue: %v", r.JobID, err)
			}
		}
		return nil
	}
	reject := func(r Result, source string, verr error) error {
		sum.Rejected++
		key := source
		if key == "" {
			key = Anonymous
		}
		sum.RejectedBy[key]++
		if refused[r.JobID] == nil {
			refused[r.JobID] = map[string]int{}
		}
		refused[r.JobID][key]++
		if cfg.Rejected != nil {
			cfg.Rejected(r, source, verr)
		}
		if source != "" {
			k := r.JobID + "\x00" + source
			rejects[k]++
			if n := rejects[k]; n >= cfg.MaxRejects {
				return accept(Result{
					JobID: r.JobID, Worker: r.Worker, Deliveries: r.Deliveries,
					Error: fmt.Sprintf("%d results signed by %s rejected; last: %v", n, source, verr),
				})
			}
		}
		// The job goes on. Its delivery may still be in the queue (a
		// result forged while a worker runs it): nothing to do. Or the
		// worker that sent this result acknowledged it (or is about to):
		// then it is published again. Which it is, the rechecks tell
		// (watch).
		refusedNow[r.JobID] = true
		return nil
	}
	// An advisory is a claim the server's state must bear out (giveUps).
	claims := newGiveUps(q)
	// naked holds the jobs stream's messages handed back, by when the
	// coordinator read the advisory (see heartbeatHandedBack).
	naked := map[uint64]time.Time{}
	checkClaims := func() error {
		given, refuted, err := claims.check(ctx)
		if err != nil {
			logf("%v (the advisories of jobs given up are checked again)", err)
			return nil
		}
		for _, id := range refuted {
			sum.Refuted++
			logf("queue: an advisory said %s was given up, but the server's state does not bear it out (the job was acknowledged or removed since): ignored", id)
		}
		for _, id := range given {
			if !open[id] || done(id) {
				continue
			}
			if err := accept(Result{
				JobID: id, Deliveries: q.cfg.MaxDeliver, GaveUp: true,
				Error: fmt.Sprintf("given up after %d deliveries without a result (the job failed, crashed or lost its worker each time)", q.cfg.MaxDeliver),
			}); err != nil {
				return err
			}
		}
		return nil
	}
	// recheck publishes again the jobs of which no delivery is left in
	// the queue and no result accepted.
	published := false // rechecks wait for the first publication
	recheck := func() error {
		if claims.pending() {
			if err := checkClaims(); err != nil {
				return err
			}
		}
		for seq, at := range naked {
			if time.Since(at) < q.cfg.AckWait {
				continue
			}
			delete(naked, seq)
			if err := q.heartbeatHandedBack(ctx, seq, func(id string) bool { return open[id] && !done(id) }); err != nil {
				logf("queue: the job handed back at sequence %d: %v", seq, err)
			}
		}
		for id, at := range settling {
			if time.Since(at) < q.cfg.AckWait/2 {
				continue
			}
			delete(settling, id)
			if queued, err := q.queued(ctx, id); err == nil && queued {
				if err := retry(ctx, 3, func() error { return q.purgeJob(ctx, id) }); err != nil {
					logf("queue: removing the accepted job %s from the queue: %v", id, err)
				}
			}
		}
		if !published {
			return nil
		}
		gone, err := watched.check(ctx, func(id string) bool { return open[id] && !done(id) }, handled)
		if err != nil {
			logf("%v (the jobs left without a result are checked again)", err)
			return nil
		}
		for _, id := range gone {
			j := byID[id]
			n := republished[id] + 1 // this publication's number
			if !refusedNow[id] {
				acked[id]++
				sum.Lost++
				logf("queue: publication %d of %s was acknowledged with no result (a client took it off the queue and sent none)", n, id)
			}
			delete(refusedNow, id)
			if republished[id] >= cfg.MaxRepublish {
				sum.Unprovable++
				if err := accept(Result{JobID: id, Error: noProvableResult(n, refused[id], acked[id])}); err != nil {
					return err
				}
				continue
			}
			note := "a result was rejected"
			if acked[id] > 0 && len(refused[id]) == 0 {
				note = "acknowledged with no result"
			}
			if err := q.putStatusAsync(ctx, []JobStatus{{ID: id, State: Queued, Error: note}}); err != nil {
				statusErr(err)
			}
			republished[id] = n
			sum.Republished++
			var seqs []uint64
			err = retry(ctx, startAttempts, func() error {
				var err error
				seqs, _, err = q.publish(ctx, []Job{j}, func(j Job) string { return j.ID + "#" + nonce + "-" + strconv.Itoa(n) })
				return err
			})
			if err != nil {
				return err
			}
			watched.set(id, seqs...)
		}
		return nil
	}
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
			source, verr := q.verify(ctx, cfg.Verify, r)
			if verr != nil {
				return reject(r, source, verr)
			}
		}
		return accept(r)
	}
	giveUp := func(m jetstream.Msg) error {
		if strings.HasPrefix(m.Subject(), advisoryNak+".") {
			var adv deliveryExceeded
			if err := json.Unmarshal(m.Data(), &adv); err != nil || adv.Stream != q.streamJobs || adv.Consumer != consumerName {
				sum.Unreadable++
				logf("queue: an advisory that is not this queue's hand-back: %.200q", m.Data())
				return nil
			}
			if _, ok := naked[adv.StreamSeq]; !ok {
				naked[adv.StreamSeq] = time.Now()
			}
			return nil
		}
		var adv deliveryExceeded
		if err := json.Unmarshal(m.Data(), &adv); err != nil || adv.Stream != q.streamJobs || adv.Consumer != consumerName {
			sum.Unreadable++
			logf("queue: an advisory that is not this queue's delivery limit: %.200q", m.Data())
			return nil
		}
		var jm *jetstream.RawStreamMsg
		err := retry(ctx, startAttempts, func() error {
			var err error
			jm, err = q.jobs.GetMsg(ctx, adv.StreamSeq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				return nil
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("queue: the job given up at sequence %d: %w", adv.StreamSeq, err)
		}
		if jm == nil {
			return nil // acknowledged (with a result) or removed since
		}
		id := jm.Header.Get(hdrJob)
		if _, ok := byID[id]; !ok || !open[id] || done(id) {
			return nil
		}
		claims.add(adv.StreamSeq, id)
		return checkClaims()
	}
	// step handles the next message of either stream; it reports which
	// stream it came from and whether more were waiting behind it.
	step := func() (fromResults bool, following uint64, err error) {
		var d delivery
		select {
		case d = <-results:
			fromResults = true
		case d = <-events:
		case <-tick.C:
			return false, 1, recheck()
		case <-ctx.Done():
			return false, 0, ctx.Err()
		}
		if d.err != nil {
			if ctx.Err() != nil {
				return fromResults, 0, ctx.Err()
			}
			return fromResults, 0, d.err
		}
		if md, err := d.m.Metadata(); err == nil {
			following = md.NumPending
			if fromResults {
				handled = md.Sequence.Stream
			}
		}
		if !fromResults {
			return false, following, giveUp(d.m)
		}
		r, err := parseResult(d.m)
		if err != nil {
			sum.Unreadable++
			logf("queue: skipped a message on the results stream that is not a result: %v", err)
			return true, following, nil
		}
		return true, following, handle(r)
	}

	// Take up what is already in the streams.
	for (resBacklog || evBacklog) && len(open) > 0 {
		fromResults, following, err := step()
		if err != nil {
			return sum, err
		}
		if following == 0 {
			if fromResults {
				resBacklog = false
			} else {
				evBacklog = false
			}
		}
	}

	var publish []Job
	var queued []JobStatus
	now := time.Now()
	for _, j := range jobs {
		if !open[j.ID] {
			continue
		}
		if seqs, ok := pending[j.ID]; ok {
			sum.Pending++
			watched.set(j.ID, seqs...)
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
		var seqs []uint64
		err := retry(ctx, startAttempts, func() error {
			var err error
			seqs, dups, err = q.publish(ctx, publish, func(j Job) string { return j.ID + "#" + nonce })
			return err
		})
		if err != nil {
			return sum, err
		}
		sum.Published, sum.Deduplicated = len(publish), dups
		for i, j := range publish {
			watched.set(j.ID, seqs[i])
		}
	}
	published = true

	for len(open) > 0 {
		if _, _, err := step(); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// noProvableResult is the error of a job none of whose publications
// brought a result that was accepted: how many results were refused, from
// which sources, and how many publications were acknowledged with no
// result at all.
func noProvableResult(publications int, by map[string]int, acked int) string {
	var parts []string
	if len(by) > 0 {
		sources := make([]string, 0, len(by))
		n := 0
		for k := range by {
			sources = append(sources, k)
		}
		slices.Sort(sources)
		for i, k := range sources {
			n += by[k]
			sources[i] = fmt.Sprintf("%s %d", k, by[k])
		}
		parts = append(parts, fmt.Sprintf("%d results refused (by source: %s)", n, strings.Join(sources, ", ")))
	}
	if acked > 0 {
		parts = append(parts, fmt.Sprintf("%d acknowledged with no result (taken off the queue by a client that sent none)", acked))
	}
	return fmt.Sprintf("no provable result after %d publications of the run: %s", publications, strings.Join(parts, "; "))
}

// startAttempts bounds the retries of a JetStream call the coordinator
// cannot go on without (with retry's backoff, about 20 s).
const startAttempts = 8

// delivery is a message of a stream the coordinator follows, or the
// error that ended the following.
type delivery struct {
	m   jetstream.Msg
	err error
}

// deliveryExceeded is the server's advisory of a message delivered
// MaxDeliver times (JSConsumerDeliveryExceededAdvisory).
type deliveryExceeded struct {
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
}

// follow reads stream from its start on a goroutine until ctx ends. The
// channel is unbuffered; backlog reports whether the stream held
// messages when the reading started.
func (q *Queue) follow(ctx context.Context, stream, what string) (<-chan delivery, bool, error) {
	var cons jetstream.Consumer
	err := startRetry(ctx, func(actx context.Context) (err error) {
		cons, err = q.js.OrderedConsumer(actx, stream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("queue: %s consumer: %w", what, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nil, false, fmt.Errorf("queue: %s consumer: %w", what, err)
	}
	var backlog bool
	if ci := cons.CachedInfo(); ci != nil {
		backlog = ci.NumPending > 0
	} else {
		var s jetstream.Stream
		if err := startRetry(ctx, func(ctx context.Context) (err error) { s, err = q.js.Stream(ctx, stream); return err }); err != nil {
			it.Stop()
			return nil, false, fmt.Errorf("queue: %s stream: %w", what, err)
		}
		backlog = s.CachedInfo().State.Msgs > 0
	}
	out := make(chan delivery)
	go func() {
		defer it.Stop()
		for {
			m, err := it.Next(jetstream.NextContext(ctx))
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("queue: %s: %w", what, err)
			}
			select {
			case out <- delivery{m: m, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out, backlog, nil
}

// verify calls Verify, turning a panic into an anonymous rejection: a
// message that crashes the verifier is reported, not read forever.
func (q *Queue) verify(ctx context.Context, f func(context.Context, Result) (string, error), r Result) (source string, err error) {
	defer func() {
		if p := recover(); p != nil {
			source, err = "", fmt.Errorf("verifying it panicked: %v", p)
		}
	}()
	return f(ctx, r)
}

// heartbeatHandedBack bounds how long a job handed back stays out of
// reach. A worker hands a job back with a delay of its choosing (a
// negative acknowledgement with a delay), and the server keeps the job
// pending, delivered to no one, until the delay ends: a client with a
// worker's rights that hands a job back with a delay of a thousand hours
// and goes away would keep it from every worker for that long, and the
// benchmark from ending. An honest worker asks at most the ack wait
// (WorkerConfig.RetryDelay). So the coordinator, an ack wait after it
// read the advisory of a job handed back, sends the job's message a
// heartbeat of its own (open reports whether the job still needs a
// result; a message no longer in the stream is left alone): the server
// then delivers it again at the latest an ack wait later, whatever delay
// was asked. A job a worker took again in the meantime is only
// heartbeated, as its worker does; one whose honest, shorter delay is not
// over waits at most an ack wait more.
func (q *Queue) heartbeatHandedBack(ctx context.Context, seq uint64, open func(string) bool) error {
	m, err := q.jobs.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !open(m.Header.Get(hdrJob)) {
		return nil
	}
	subj := "$JS.ACK." + q.streamJobs + "." + consumerName + ".1." + strconv.FormatUint(seq, 10) + ".1.0.0"
	return q.nc.Publish(subj, []byte("+WPI"))
}
