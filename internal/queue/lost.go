package queue

import (
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
)

// A job can leave the queue with no result. Workers must be allowed to
// acknowledge the jobs they pull (and to heartbeat and hand them back,
// which are acknowledgements too), and the server does not tie an
// acknowledgement to the client the message was delivered to: it names
// the message by its stream sequence alone. So a worker can acknowledge
// a job it pulled and never ran, or a job another worker holds or handed
// back, and the work-queue stream drops the message: no delivery of it is
// left, and the job's result may never come.
//
// The coordinator therefore watches the messages of the jobs it has not
// accepted a result of. It knows each one's sequence in the jobs stream
// (the server's acknowledgement of its publication, or the stream itself
// for a job found still queued at the start). A job none of whose
// messages is left in the stream was acknowledged (or removed): a
// message leaves a work-queue stream, and the consumer's pending set with
// it, only so, and never comes back. A genuine worker acknowledges a job
// only after the results stream has stored its result; so once the
// coordinator has read the results stream up to its last message as it
// stood after the job was first found gone, a job still without an
// accepted result had none before its acknowledgement: it was taken off
// the queue with no result, or its result was refused. Its absence must
// also hold on two readings of the stream a recheck apart. The
// coordinator then publishes it again, under a new message id, counting
// towards MaxRepublish.

// absence is a job found with none of its messages in the jobs stream.
type absence struct {
	// results is the results stream's last sequence read after the job
	// was first found gone: every result stored before the job left the
	// queue lies at or below it.
	results uint64
	// readings counts the consecutive readings that found it gone.
	readings int
}

// watch tracks the jobs stream's messages of the jobs without an
// accepted result.
type watch struct {
	q *Queue
	// msgs holds each watched job's messages by sequence; an empty list
	// is a job whose sequence the server did not report (looked up by
	// subject instead).
	msgs    map[string][]uint64
	missing map[string]*absence
}

func newWatch(q *Queue) *watch {
	return &watch{q: q, msgs: map[string][]uint64{}, missing: map[string]*absence{}}
}

// set records that job id's messages are seqs (a publication replaces
// what was watched of it).
func (w *watch) set(id string, seqs ...uint64) {
	w.msgs[id] = seqs
	delete(w.missing, id)
}

// drop stops watching job id.
func (w *watch) drop(id string) {
	delete(w.msgs, id)
	delete(w.missing, id)
}

// check reads the jobs stream once and returns the watched jobs that
// left the queue with no result: none of their messages on this reading
// nor on the one before, and every result stored before they were first
// found gone read (handled is the last sequence of the results stream the
// coordinator has handled). open reports whether a job still needs a
// result; the others are no longer watched. The jobs returned are no
// longer watched either: the caller publishes them again (set) or fails
// them.
func (w *watch) check(ctx context.Context, open func(string) bool, handled uint64) (lost []string, err error) {
	for id := range w.msgs {
		if !open(id) {
			w.drop(id)
		}
	}
	if len(w.msgs) == 0 {
		return nil, nil
	}
	si, err := w.q.jobs.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return nil, fmt.Errorf("queue: jobs stream: %w", err)
	}
	st := si.State
	deleted := make(map[uint64]bool, len(st.Deleted))
	for _, d := range st.Deleted {
		deleted[d] = true
	}
	present := func(seq uint64) bool {
		return st.Msgs > 0 && seq >= st.FirstSeq && seq <= st.LastSeq && !deleted[seq]
	}
	var fresh []string
	for id, seqs := range w.msgs {
		in := false
		if len(seqs) == 0 {
			if in, err = w.q.queued(ctx, id); err != nil {
				return nil, fmt.Errorf("queue: is %s still in the queue? %w", id, err)
			}
		}
		for _, s := range seqs {
			in = in || present(s)
		}
		switch a := w.missing[id]; {
		case in:
			delete(w.missing, id)
		case a == nil:
			fresh = append(fresh, id)
		default:
			a.readings++
		}
	}
	if len(fresh) > 0 {
		// Read after the jobs stream: a result a worker stored before
		// acknowledging a job found gone is in it.
		rs, err := w.q.js.Stream(ctx, w.q.streamRes)
		if err != nil {
			return nil, fmt.Errorf("queue: results stream: %w", err)
		}
		last := rs.CachedInfo().State.LastSeq
		for _, id := range fresh {
			w.missing[id] = &absence{results: last, readings: 1}
		}
	}
	for id, a := range w.missing {
		if a.readings >= 2 && handled >= a.results {
			lost = append(lost, id)
			w.drop(id)
		}
	}
	slices.Sort(lost)
	return lost, nil
}
