// Package queue is a work queue on NATS JetStream: a coordinator publishes
// jobs once (idempotently), workers on any number of machines pull them,
// report progress and publish results, and the coordinator accepts exactly
// one result per job whatever fails in between — a worker killed mid-job,
// a duplicate delivery, the coordinator itself restarted, a job that
// crashes every worker it reaches, a job acknowledged by a client that
// sent no result (published again, a bounded number of times).
//
// One queue is, in JetStream terms:
//
//   - a work-queue stream of jobs (subjects truss.NAME.jobs.KEY, one per
//     job), each message a job's opaque payload with a message id in the
//     Nats-Msg-Id header, so a job published twice by one coordinator
//     within the duplicate window is stored once;
//   - one durable pull consumer shared by every worker, with explicit acks,
//     an ack wait that heartbeats (InProgress) extend and the delivery
//     limit (MaxDeliver), past which the server gives the job up;
//   - a stream of the server's advisories of jobs given up, which the
//     coordinator reads and checks against the consumer's state before
//     giving a job up (a worker's word that a job was given up counts for
//     nothing, and so does an advisory the state does not bear out);
//   - a stream of results (truss.NAME.results), kept until removed, that
//     refuses rollups and deletions (workers publish on it);
//   - a stream of the workers' uploads (truss.NAME.uploads.UPLOAD), large
//     results' parts, which workers may add to and not read, and which
//     refuses rollups, purges and deletions (PutUpload, GetUpload);
//   - a key-value bucket of each job's status (queued, running on which
//     worker since when, done, failed): display only;
//   - an object store of the coordinator's artifacts too large for a
//     message (repository bundles), which workers may only read.
//
// The server may be embedded (StartServer) or any NATS deployment with
// JetStream (Connect); the code path is the same.
package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Headers of job and result messages.
const (
	hdrJob        = "Truss-Job"
	hdrWorker     = "Truss-Worker"
	hdrDeliveries = "Truss-Deliveries"
	hdrError      = "Truss-Error"
	hdrStarted    = "Truss-Started"
	hdrDuration   = "Truss-Duration"
	metaMaxDeliv  = "truss_max_deliver"
	// consumerName is the workers' durable consumer.
	consumerName = "workers"
	// advisoryMaxDeliveries is the subject prefix of the server's
	// advisories of messages delivered MaxDeliver times.
	advisoryMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
	// advisoryNak is the subject prefix of the server's advisories of
	// messages handed back (negatively acknowledged).
	advisoryNak = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED"
)

// ProtocolVersion is the version of the queue's messages and streams (the
// subjects, headers and the coordinator's reading of them). It changes
// only when a message's meaning would; the bench's workers state theirs.
const ProtocolVersion = 3

// Defaults of Config.
const (
	DefaultAckWait         = 30 * time.Second
	DefaultMaxDeliver      = 3
	DefaultDuplicateWindow = time.Hour
)

// ErrNoQueue is returned by Join when the queue has not been declared.
var ErrNoQueue = errors.New("queue: no such queue (no coordinator has declared it yet)")

// Config is a queue's settings, fixed by the coordinator that declares
// it; workers read them from the server.
type Config struct {
	// AckWait is how long a delivered job may go without a heartbeat
	// before it is delivered again (default 30 s). Workers heartbeat every
	// third of it, so a slow job is kept while a dead worker's job comes
	// back within AckWait.
	AckWait time.Duration
	// MaxDeliver is how many deliveries a job gets (default 3): the
	// server delivers it no more and advises the coordinator, which
	// records the job as given up.
	MaxDeliver int
	// DuplicateWindow is how long a job id is remembered for deduplication
	// (default 1 h). The coordinator's resume does not depend on it.
	DuplicateWindow time.Duration
	// Replicas is the number of copies of each stream, consumer and
	// bucket; 0 is DefaultReplicas of the deployment (3 on a cluster of
	// three servers or more, else 1). Open checks that the cluster placed
	// them all.
	Replicas int
	// Memory keeps jobs, results and statuses in memory instead of files
	// (tests and benchmarks of the dispatch path only).
	Memory bool
}

// DefaultReplicas is the replicas a queue on nc gets by default: 3 when
// the server nc reaches is in a cluster that has at least three servers
// (as the server's INFO tells the client), else 1.
func DefaultReplicas(nc *nats.Conn) int {
	if nc.ConnectedClusterName() == "" {
		return 1
	}
	if len(nc.Servers()) >= 3 {
		return 3
	}
	return 1
}

func (c *Config) defaults() error {
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	switch {
	case c.AckWait < 100*time.Millisecond:
		return fmt.Errorf("queue: ack wait %v is below 100ms", c.AckWait)
	case c.MaxDeliver < 1:
		return fmt.Errorf("queue: max deliver %d is below 1", c.MaxDeliver)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("queue: %d replicas (1 to 5)", c.Replicas)
	}
	return nil
}

// Job is one unit of work.
type Job struct {
	// ID names the job uniquely within the queue (for a benchmark, the
	// run key instance/arm/repeat). Any non-empty string of at most 512
	// bytes without line breaks.
	ID string
	// Payload is the job's input, opaque to the queue; at most the
	// server's message size less headers (MaxPayload: 8 MiB on the
	// embedded server, 1 MiB by default on others). Large inputs go into
	// the artifact store and the payload names them.
	Payload []byte
}

func (j Job) validate() error {
	if j.ID == "" {
		return errors.New("queue: a job needs an id")
	}
	if len(j.ID) > 512 {
		return fmt.Errorf("queue: job id of %d bytes (at most 512)", len(j.ID))
	}
	for _, r := range j.ID {
		if r == '\r' || r == '\n' {
			return fmt.Errorf("queue: job id %q has a line break", j.ID)
		}
	}
	return nil
}

// Queue is a handle on one named queue.
type Queue struct {
	name string
	cfg  Config
	nc   *nats.Conn
	js   jetstream.JetStream
	jobs jetstream.Stream
	cons jetstream.Consumer
	kv   jetstream.KeyValue

	subjJobs, subjResults string
	streamJobs, streamRes string
	streamEvents          string
	subjUploads           string
	streamUploads         string
	bucketStatus, objects string
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func newQueue(nc *nats.Conn, name string) (*Queue, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("queue: name %q: letters, digits, '-' and '_' only, at most 64", name)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("queue: %w", err)
	}
	return &Queue{
		name: name, nc: nc, js: js,
		subjJobs:      "truss." + name + ".jobs",
		subjResults:   "truss." + name + ".results",
		streamJobs:    "TRUSS_" + name + "_JOBS",
		streamRes:     "TRUSS_" + name + "_RESULTS",
		streamEvents:  "TRUSS_" + name + "_EVENTS",
		subjUploads:   "truss." + name + ".uploads",
		streamUploads: "TRUSS_" + name + "_UPLOADS",
		bucketStatus:  "TRUSS_" + name + "_STATUS",
		objects:       "TRUSS_" + name + "_ARTIFACTS",
	}, nil
}

// Open declares the queue name on nc with cfg, creating or updating its
// streams, consumer and buckets, and returns a handle. The coordinator
// opens; workers Join.
func Open(ctx context.Context, nc *nats.Conn, name string, cfg Config) (*Queue, error) {
	if cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas(nc)
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	q, err := newQueue(nc, name)
	if err != nil {
		return nil, err
	}
	q.cfg = cfg
	// Every call is idempotent: a transient failure (a leader election, a
	// server restarting, a timeout) is retried from the start.
	if err := startRetry(ctx, q.declare); err != nil {
		return nil, err
	}
	if _, err := q.CheckPlacement(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// declare creates or updates the queue's streams, consumer and buckets.
func (q *Queue) declare(ctx context.Context) error {
	cfg, name := q.cfg, q.name
	storage := jetstream.FileStorage
	kvStorage := jetstream.FileStorage
	if cfg.Memory {
		storage, kvStorage = jetstream.MemoryStorage, jetstream.MemoryStorage
	}
	var err error
	q.jobs, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.streamJobs,
		Description: "truss work queue " + name + ": jobs",
		Subjects:    []string{q.subjJobs + ".*"},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     storage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
	})
	if err != nil {
		return q.placeErr("jobs stream", err)
	}
	if _, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.streamRes,
		Description: "truss work queue " + name + ": results",
		Subjects:    []string{q.subjResults},
		Retention:   jetstream.LimitsPolicy,
		Storage:     storage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		// Workers publish here: what they publish can only add to the
		// stream (no rollup header is obeyed; permissions cannot filter
		// headers). Purging is an API call no worker may make.
		AllowRollup: false,
		DenyDelete:  true,
	}); err != nil {
		return q.placeErr("results stream", err)
	}
	if _, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.streamUploads,
		Description: "truss work queue " + name + ": workers' uploads (write-only for workers)",
		Subjects:    []string{q.subjUploads + ".*"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     storage,
		Replicas:    cfg.Replicas,
		Duplicates:  cfg.DuplicateWindow,
		AllowRollup: false,
		DenyDelete:  true,
		DenyPurge:   true,
	}); err != nil {
		return q.placeErr("uploads stream", err)
	}
	// The advisories must be captured before the consumer can emit one.
	if _, err = q.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        q.streamEvents,
		Description: "truss work queue " + name + ": the server's advisories of jobs delivered too often or handed back",
		Subjects: []string{
			advisoryMaxDeliveries + "." + q.streamJobs + "." + consumerName,
			advisoryNak + "." + q.streamJobs + "." + consumerName,
		},
		Retention: jetstream.LimitsPolicy,
		Storage:   storage,
		Replicas:  cfg.Replicas,
	}); err != nil {
		return q.placeErr("advisories stream", err)
	}
	q.cons, err = q.js.CreateOrUpdateConsumer(ctx, q.streamJobs, jetstream.ConsumerConfig{
		Durable:       consumerName,
		Description:   "the workers of truss work queue " + name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cfg.AckWait,
		MaxDeliver:    cfg.MaxDeliver,
		MaxAckPending: -1,
		MaxWaiting:    4096,
		Replicas:      cfg.Replicas,
		Metadata:      map[string]string{metaMaxDeliv: strconv.Itoa(cfg.MaxDeliver)},
	})
	if err != nil {
		return q.placeErr("workers' consumer", err)
	}
	q.kv, err = q.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      q.bucketStatus,
		Description: "truss work queue " + name + ": job status",
		Storage:     kvStorage,
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return q.placeErr("status bucket", err)
	}
	// The coordinator makes the artifact store: workers need not be
	// allowed to make streams.
	if _, err := q.objectStore(ctx, true); err != nil {
		return q.placeErr("artifact store", err)
	}
	return nil
}

// attemptTimeout bounds one attempt of a call retried at start: a
// request sent while a cluster has no leader may get no answer at all,
// and with a deadline of the caller's the client would wait for all of
// it.
const attemptTimeout = 10 * time.Second

// startRetry runs op with retry's backoff, startAttempts times at most,
// each attempt bounded by attemptTimeout, until it succeeds or fails for
// a reason a retry cannot mend: the server refused the configuration
// (400) or cannot place the replicas.
func startRetry(ctx context.Context, op func(context.Context) error) error {
	var final error
	err := retry(ctx, startAttempts, func() error {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		defer cancel()
		err := op(actx)
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			switch apiErr.ErrorCode {
			case 10005, 10023, 10074:
				final = err
				return nil
			}
			if apiErr.Code == 400 {
				final = err
				return nil
			}
		}
		return err
	})
	if final != nil {
		return final
	}
	return err
}

// placeErr explains an error of the server's that says it cannot place
// the replicas asked for.
func (q *Queue) placeErr(what string, err error) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10005, 10023, 10074: // no suitable peers, insufficient resources, replicas on a single server
			return fmt.Errorf("queue: %s: the deployment cannot place %d replicas (%w): give --replicas at most the number of its JetStream servers", what, q.cfg.Replicas, err)
		}
	}
	return fmt.Errorf("queue: %s: %w", what, err)
}

// Placement is where one of the queue's streams (or its consumer) is kept.
type Placement struct {
	// Name is the stream's (or "STREAM/CONSUMER").
	Name string
	// Replicas is how many copies the queue asked for; Peers the servers
	// holding one, Leader first when it has one.
	Replicas int
	Peers    []string
	Leader   string
}

// CheckPlacement reads where the queue's streams, buckets and consumer
// are kept, and returns an error naming the first that has fewer copies
// than the queue's Replicas. A cluster places them as it creates them;
// the check waits a few seconds for a leader to be elected.
func (q *Queue) CheckPlacement(ctx context.Context) ([]Placement, error) {
	var out []Placement
	err := retry(ctx, 6, func() error {
		out = out[:0]
		for _, s := range []string{q.streamJobs, q.streamRes, q.streamEvents, q.streamUploads, "KV_" + q.bucketStatus, "OBJ_" + q.objects} {
			st, err := q.js.Stream(ctx, s)
			if err != nil {
				return fmt.Errorf("queue: stream %s: %w", s, err)
			}
			out = append(out, placement(s, q.cfg.Replicas, st.CachedInfo().Cluster))
		}
		ci, err := q.cons.Info(ctx)
		if err != nil {
			return fmt.Errorf("queue: workers' consumer: %w", err)
		}
		out = append(out, placement(q.streamJobs+"/"+consumerName, q.cfg.Replicas, ci.Cluster))
		for _, p := range out {
			if len(p.Peers) < p.Replicas || p.Leader == "" {
				return fmt.Errorf("queue: %s has %d of %d replicas (peers %v, leader %q)", p.Name, len(p.Peers), p.Replicas, p.Peers, p.Leader)
			}
		}
		return nil
	})
	return out, err
}

func placement(name string, want int, ci *jetstream.ClusterInfo) Placement {
	p := Placement{Name: name, Replicas: want}
	if ci == nil {
		p.Peers, p.Leader = []string{"(this server)"}, "(this server)"
		return p
	}
	p.Leader = ci.Leader
	if ci.Leader != "" {
		p.Peers = append(p.Peers, ci.Leader)
	}
	for _, r := range ci.Replicas {
		if r != nil {
			p.Peers = append(p.Peers, r.Name)
		}
	}
	return p
}

// Join attaches to a queue a coordinator declared, with its settings. It
// returns an error wrapping ErrNoQueue when there is none yet.
func Join(ctx context.Context, nc *nats.Conn, name string) (*Queue, error) {
	q, err := newQueue(nc, name)
	if err != nil {
		return nil, err
	}
	q.jobs, err = q.js.Stream(ctx, q.streamJobs)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoQueue, name)
	}
	if err != nil {
		return nil, q.placeErr("jobs stream", err)
	}
	q.cons, err = q.js.Consumer(ctx, q.streamJobs, consumerName)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoQueue, name)
	}
	if err != nil {
		return nil, q.placeErr("workers' consumer", err)
	}
	q.kv, err = q.js.KeyValue(ctx, q.bucketStatus)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNoQueue, name)
	}
	if err != nil {
		return nil, q.placeErr("status bucket", err)
	}
	ci := q.cons.CachedInfo()
	q.cfg.AckWait = ci.Config.AckWait
	q.cfg.MaxDeliver = ci.Config.MaxDeliver
	if q.cfg.MaxDeliver < 1 {
		q.cfg.MaxDeliver, _ = strconv.Atoi(ci.Config.Metadata[metaMaxDeliv])
	}
	if q.cfg.MaxDeliver < 1 {
		q.cfg.MaxDeliver = DefaultMaxDeliver
	}
	q.cfg.Replicas = ci.Config.Replicas
	return q, nil
}

// NameFor derives a queue name from a key that identifies a benchmark
// across restarts (its output directory's absolute path): restarts of the
// same benchmark find their queue, and benchmarks sharing a NATS
// deployment do not meet.
func NameFor(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "bench-" + hex.EncodeToString(sum[:8])
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// MaxPayload is the largest message the server takes, in bytes: a job's
// payload and headers must fit in it (Job).
func (q *Queue) MaxPayload() int64 { return q.nc.MaxPayload() }

// Config is the queue's settings (for a joined queue, as the coordinator
// declared them).
func (q *Queue) Config() Config { return q.cfg }

// Delete removes the queue's streams, consumer and buckets.
func (q *Queue) Delete(ctx context.Context) error {
	var errs []error
	for _, s := range []string{q.streamJobs, q.streamRes, q.streamEvents, q.streamUploads} {
		if err := q.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			errs = append(errs, err)
		}
	}
	if err := q.js.DeleteKeyValue(ctx, q.bucketStatus); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		errs = append(errs, err)
	}
	if err := q.js.DeleteObjectStore(ctx, q.objects); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Publish adds jobs to the queue. A job whose id was published within the
// duplicate window is not stored again; duplicates counts them. Publishing
// is pipelined: all jobs are sent, then all acknowledgements awaited.
func (q *Queue) Publish(ctx context.Context, jobs ...Job) (duplicates int, err error) {
	_, duplicates, err = q.publish(ctx, jobs, func(j Job) string { return j.ID })
	return duplicates, err
}

// publish adds jobs with the message ids msgID gives them and returns,
// in the jobs' order, the sequence of each one's message in the jobs
// stream (for a duplicate, the message stored before).
func (q *Queue) publish(ctx context.Context, jobs []Job, msgID func(Job) string) (seqs []uint64, dups int, err error) {
	for _, j := range jobs {
		if err := j.validate(); err != nil {
			return nil, 0, err
		}
	}
	seqs = make([]uint64, 0, len(jobs))
	futures := make([]jetstream.PubAckFuture, 0, min(len(jobs), 1024))
	wait := func() error {
		for _, f := range futures {
			select {
			case pa := <-f.Ok():
				if pa.Duplicate {
					dups++
				}
				seqs = append(seqs, pa.Sequence)
			case err := <-f.Err():
				return fmt.Errorf("queue: publish job %s: %w", f.Msg().Header.Get(hdrJob), err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		futures = futures[:0]
		return nil
	}
	for _, j := range jobs {
		m := &nats.Msg{Subject: q.jobSubject(j.ID), Data: j.Payload, Header: nats.Header{}}
		m.Header.Set(hdrJob, j.ID)
		f, err := q.js.PublishMsgAsync(m, jetstream.WithMsgID(msgID(j)), jetstream.WithExpectStream(q.streamJobs))
		if err != nil {
			return seqs, dups, fmt.Errorf("queue: publish job %s: %w", j.ID, err)
		}
		futures = append(futures, f)
		if len(futures) == 1024 {
			if err := wait(); err != nil {
				return seqs, dups, err
			}
		}
	}
	return seqs, dups, wait()
}

// jobSubject is the subject of a job's messages.
func (q *Queue) jobSubject(id string) string { return q.subjJobs + "." + statusKey(id) }

// queued reports whether a message of the job is in the jobs stream
// (queued, or delivered and not acknowledged).
func (q *Queue) queued(ctx context.Context, id string) (bool, error) {
	_, err := q.jobs.GetLastMsgForSubject(ctx, q.jobSubject(id))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, nil
	}
	return err == nil, err
}

// purgeJob removes every message of the job from the jobs stream, one by
// one: a purge of the subject would make the workers' consumer forget
// the deliveries of other jobs in hand.
func (q *Queue) purgeJob(ctx context.Context, id string) error {
	for range 16 {
		m, err := q.jobs.GetLastMsgForSubject(ctx, q.jobSubject(id))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := q.jobs.DeleteMsg(ctx, m.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return err
		}
	}
	return fmt.Errorf("queue: job %s is published again faster than it is removed", id)
}

// Pending lists the ids of the jobs in the queue's stream: queued or
// delivered and not yet acknowledged.
func (q *Queue) Pending(ctx context.Context) (map[string]bool, error) {
	seqs, err := q.pendingSeqs(ctx)
	if err != nil {
		return nil, err
	}
	ids := make(map[string]bool, len(seqs))
	for id := range seqs {
		ids[id] = true
	}
	return ids, nil
}

// pendingSeqs lists the messages in the jobs stream by job id: the
// sequence of each of a job's messages (normally one).
func (q *Queue) pendingSeqs(ctx context.Context) (map[string][]uint64, error) {
	info, err := q.jobs.Info(ctx)
	if err != nil {
		return nil, q.placeErr("jobs stream", err)
	}
	ids := map[string][]uint64{}
	st := info.State
	if st.Msgs == 0 {
		return ids, nil
	}
	found := uint64(0)
	for seq := st.FirstSeq; seq <= st.LastSeq && found < st.Msgs; seq++ {
		m, err := q.jobs.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("queue: jobs stream message %d: %w", seq, err)
		}
		found++
		if id := m.Header.Get(hdrJob); id != "" {
			ids[id] = append(ids[id], seq)
		}
	}
	return ids, nil
}

// State is where a job is.
type State string

// The states of a job.
const (
	Queued  State = "queued"
	Running State = "running"
	Done    State = "done"
	Failed  State = "failed"
)

func (s State) terminal() bool { return s == Done || s == Failed }

// JobStatus is a job's entry in the status bucket.
type JobStatus struct {
	ID    string `json:"id"`
	State State  `json:"state"`
	// Worker is the worker running the job (Running) or that produced
	// its accepted result (Done, Failed).
	Worker string `json:"worker,omitempty"`
	// Started is when the current delivery started running; Heartbeat
	// when its worker last reported.
	Started   time.Time `json:"started,omitzero"`
	Heartbeat time.Time `json:"heartbeat,omitzero"`
	// Deliveries is the delivery count of the job's current or accepted
	// run.
	Deliveries int `json:"deliveries,omitempty"`
	// Note is the worker's last progress note.
	Note string `json:"note,omitempty"`
	// Error is why a Failed job failed.
	Error string `json:"error,omitempty"`
	// Updated is when the entry was written (the bucket's own time).
	Updated time.Time `json:"-"`
	rev     uint64
}

func statusKey(id string) string { return base64.RawURLEncoding.EncodeToString([]byte(id)) }

func (q *Queue) getStatus(ctx context.Context, id string) (JobStatus, error) {
	e, err := q.kv.Get(ctx, statusKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return JobStatus{ID: id}, nil
	}
	if err != nil {
		return JobStatus{}, err
	}
	var s JobStatus
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return JobStatus{}, fmt.Errorf("queue: status of %s: %w", id, err)
	}
	s.rev = e.Revision()
	s.Updated = e.Created()
	return s, nil
}

// putStatus writes s; with s.rev set, only over that revision.
func (q *Queue) putStatus(ctx context.Context, s JobStatus, ifRev bool) (uint64, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return 0, err
	}
	if ifRev {
		if s.rev == 0 {
			return q.kv.Create(ctx, statusKey(s.ID), b)
		}
		return q.kv.Update(ctx, statusKey(s.ID), b, s.rev)
	}
	return q.kv.Put(ctx, statusKey(s.ID), b)
}

// putStatusAsync writes statuses without waiting for each
// acknowledgement in turn (the bucket is a stream; a put is a publish).
func (q *Queue) putStatusAsync(ctx context.Context, ss []JobStatus) error {
	var futures []jetstream.PubAckFuture
	for _, s := range ss {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		f, err := q.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + q.bucketStatus + "." + statusKey(s.ID), Data: b})
		if err != nil {
			return fmt.Errorf("queue: status of %s: %w", s.ID, err)
		}
		futures = append(futures, f)
	}
	for _, f := range futures {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return fmt.Errorf("queue: status: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Status reads every job's status entry, in no particular order. It
// reads the bucket's stream with batched direct gets, making no consumer,
// so that a client with a worker's permissions may.
func (q *Queue) Status(ctx context.Context) ([]JobStatus, error) {
	prefix := "$KV." + q.bucketStatus + "."
	latest := map[string]JobStatus{}
	err := q.directRead(ctx, "KV_"+q.bucketStatus, prefix+">", 1, func(m *nats.Msg, seq uint64) (bool, error) {
		key := m.Header.Get("Nats-Subject")
		switch m.Header.Get("KV-Operation") {
		case "DEL", "PURGE":
			delete(latest, key)
			return true, nil
		}
		var s JobStatus
		if err := json.Unmarshal(m.Data, &s); err != nil {
			return false, fmt.Errorf("queue: status entry %s: %w", key, err)
		}
		s.rev = seq
		s.Updated, _ = time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp"))
		latest[key] = s
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue: status: %w", err)
	}
	out := make([]JobStatus, 0, len(latest))
	for _, s := range latest {
		out = append(out, s)
	}
	return out, nil
}

// WatchStatus calls fn with each status entry written after it returns
// (not those already there), in the order written, until ctx ends. It
// subscribes before it returns; fn runs on a goroutine of its own, one
// call at a time, and should not block. wait blocks until that goroutine
// has ended (after ctx ends).
func (q *Queue) WatchStatus(ctx context.Context, fn func(JobStatus)) (wait func(), err error) {
	w, err := q.kv.WatchAll(ctx, jetstream.IgnoreDeletes(), jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("queue: status: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = w.Stop() }()
		for {
			select {
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e == nil {
					continue
				}
				var s JobStatus
				if err := json.Unmarshal(e.Value(), &s); err != nil {
					continue // not a status this version writes
				}
				s.rev = e.Revision()
				s.Updated = e.Created()
				fn(s)
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { <-done }, nil
}

// Counts tallies statuses by state.
func Counts(ss []JobStatus) map[State]int {
	m := map[State]int{}
	for _, s := range ss {
		m[s.State]++
	}
	return m
}
