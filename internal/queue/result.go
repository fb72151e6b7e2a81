package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Result is what a worker reports for one delivery of a job. Facts about
// the run travel with it: which worker, which delivery, when and how long.
type Result struct {
	JobID string
	// Worker is the id of the worker that produced the result.
	Worker string
	// Deliveries is the job's delivery count when this result was made
	// (1 for a job that ran once).
	Deliveries int
	// Payload is the handler's output, opaque to the queue.
	Payload []byte
	// Error is the handler's error (as the worker says: a Verify decides
	// whether to believe it), or why the coordinator failed the job;
	// empty on success.
	Error string
	// GaveUp is set on the coordinator's own result for a job the server
	// delivered MaxDeliver times without a result; no message sets it.
	GaveUp bool
	// Started is when the worker started the job; Duration how long the
	// handler ran.
	Started  time.Time
	Duration time.Duration
	// Seq is the result's sequence number in the results stream (0 for a
	// result the coordinator decided itself: given up, or rejected too
	// often).
	Seq uint64

	// jobSeq is the job message's sequence number in the jobs stream: a
	// job published again (after a rejected result) is a new message.
	jobSeq uint64
}

func (r Result) msg(subject string) *nats.Msg {
	m := &nats.Msg{Subject: subject, Data: r.Payload, Header: nats.Header{}}
	m.Header.Set(hdrJob, r.JobID)
	m.Header.Set(hdrWorker, r.Worker)
	m.Header.Set(hdrDeliveries, strconv.Itoa(r.Deliveries))
	if r.Error != "" {
		m.Header.Set(hdrError, strconv.Quote(r.Error))
	}
	if !r.Started.IsZero() {
		m.Header.Set(hdrStarted, r.Started.UTC().Format(time.RFC3339Nano))
	}
	m.Header.Set(hdrDuration, r.Duration.String())
	return m
}

// msgID dedupes a worker's republication of the same result; results of
// different job messages, deliveries or workers are distinct messages.
func (r Result) msgID() string {
	return fmt.Sprintf("%d:%d:%s:%d:%s", r.jobSeq, r.Deliveries, r.Worker, len(r.JobID), r.JobID)
}

func parseResult(m jetstream.Msg) (Result, error) {
	r, err := parseResultHeaders(m.Headers(), m.Data())
	if err != nil {
		return r, err
	}
	if md, err := m.Metadata(); err == nil {
		r.Seq = md.Sequence.Stream
	}
	return r, nil
}

// parseResultHeaders reads a result from its message's headers and data.
func parseResultHeaders(h nats.Header, data []byte) (Result, error) {
	r := Result{
		JobID:   h.Get(hdrJob),
		Worker:  h.Get(hdrWorker),
		Payload: data,
	}
	if r.JobID == "" {
		return r, fmt.Errorf("queue: result without a %s header", hdrJob)
	}
	var err error
	if s := h.Get(hdrError); s != "" {
		if r.Error, err = strconv.Unquote(s); err != nil {
			return r, fmt.Errorf("queue: result of %s: error header: %w", r.JobID, err)
		}
	}
	if r.Deliveries, err = strconv.Atoi(h.Get(hdrDeliveries)); err != nil {
		return r, fmt.Errorf("queue: result of %s: deliveries: %w", r.JobID, err)
	}
	if s := h.Get(hdrStarted); s != "" {
		if r.Started, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return r, fmt.Errorf("queue: result of %s: started: %w", r.JobID, err)
		}
	}
	if s := h.Get(hdrDuration); s != "" {
		if r.Duration, err = time.ParseDuration(s); err != nil {
			return r, fmt.Errorf("queue: result of %s: duration: %w", r.JobID, err)
		}
	}
	return r, nil
}

// publishResult stores r in the results stream, retrying through a lost
// connection, a leader election or a server down for any length of time
// (the message id makes a retry of a stored result a no-op), until the
// stream acknowledges it or ctx ends — or, when goneWait is positive,
// until the connection has been down for goneWait: then the job, not
// acknowledged, is delivered again if the server ever comes back. logf
// is told of the first failure and then every minute.
func (q *Queue) publishResult(ctx context.Context, r Result, goneWait time.Duration, logf func(string, ...any)) error {
	backoff := 50 * time.Millisecond
	start := time.Now()
	var told, down time.Time
	// The message id ends in a nonce made once for this result, so that
	// its retries are deduplicated and no other client can guess it: with
	// an id made only of what a worker can learn (the job's sequence, the
	// delivery, the worker's name), a forged result sent first under it
	// made the stream drop the honest one as its duplicate.
	var nonce [12]byte
	rand.Read(nonce[:])
	id := r.msgID() + ":" + hex.EncodeToString(nonce[:])
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := q.js.PublishMsg(pctx, r.msg(q.subjResults), jetstream.WithMsgID(id), jetstream.WithExpectStream(q.streamRes))
		cancel()
		if err == nil {
			return nil
		}
		if q.nc.IsConnected() {
			down = time.Time{}
		} else if down.IsZero() {
			down = time.Now()
		}
		if goneWait > 0 && !down.IsZero() && time.Since(down) >= goneWait {
			return fmt.Errorf("queue: publish result of %s: the server has been unreachable for %v: %w", r.JobID, goneWait, err)
		}
		if time.Since(told) >= time.Minute {
			told = time.Now()
			logf("queue: the result of %s is kept until the results stream takes it (unstored for %v): %v", r.JobID, time.Since(start).Round(time.Second), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("queue: publish result of %s: %w (last: %w)", r.JobID, ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
