package queue

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// An advisory of a job delivered MaxDeliver times is a message in a
// stream like any other: a client allowed to publish on its subject (any
// client with every right, in a deployment that gives workers more than
// they need) can write one for a job that is running or still queued.
// So the coordinator takes an advisory as a claim only, and gives the job
// up once the consumer's own state, as the server reports it, bears the
// claim out.
//
// A job given up is a message of the jobs stream that the workers'
// consumer delivered and no longer holds: not acknowledged (an
// acknowledgement removes it from the work-queue stream), not pending
// (the server drops it from the pending set when it gives it up). The
// server reports the consumer's delivered sequence, its acknowledgement
// floor (below which nothing is pending) and the number of messages
// pending, not which; the stream reports which of its messages are left.
// A claim is borne out when its message is still in the stream, was
// delivered, and either
//
//   - lies at or below the acknowledgement floor, or
//   - is one of the claims on delivered messages still in the stream that
//     are exactly as many as those messages less the pending ones: every
//     delivered message that is neither acknowledged nor pending (given
//     up) is claimed, and no claim is on a pending one.
//
// A claim on a pending message keeps the count from matching until that
// message is acknowledged (its claim is then dropped: the job was not
// given up) or given up in its turn. The floor alone would do, but lags:
// it passes a given-up message only once every message delivered before
// it is acknowledged, or nothing is pending.
//
// Each reading takes the consumer's state before and after the stream's
// and is used only if the two agree (no delivery, acknowledgement or
// give-up in between); a claim is acted on once borne out by two
// readings a recheck apart, so that an acknowledged message the stream
// has not yet removed, or a give-up whose advisory is not yet read,
// cannot make a claim look borne out.

// claim is an advisory's word that a job was given up.
type claim struct {
	id string
	// held counts the consecutive readings that bore the claim out.
	held int
}

// giveUps holds the advisories' claims not yet borne out, by the jobs
// stream's sequence.
type giveUps struct {
	q      *Queue
	claims map[uint64]*claim
}

func newGiveUps(q *Queue) *giveUps { return &giveUps{q: q, claims: map[uint64]*claim{}} }

// add records an advisory's claim that the message seq of job id was
// given up.
func (g *giveUps) add(seq uint64, id string) {
	if _, ok := g.claims[seq]; !ok {
		g.claims[seq] = &claim{id: id}
	}
}

// pending reports whether claims wait to be borne out.
func (g *giveUps) pending() bool { return len(g.claims) > 0 }

// check reads the server's state once and returns the jobs whose claims
// it bore out for the second time in a row (their claims are then
// dropped), and those whose message has left the stream, acknowledged
// or removed, so that nothing was given up (refuted, dropped too).
func (g *giveUps) check(ctx context.Context) (given, refuted []string, err error) {
	if len(g.claims) == 0 {
		return nil, nil, nil
	}
	before, err := g.q.cons.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: workers' consumer: %w", err)
	}
	si, err := g.q.jobs.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return nil, nil, fmt.Errorf("queue: jobs stream: %w", err)
	}
	after, err := g.q.cons.Info(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("queue: workers' consumer: %w", err)
	}
	steady := before.Delivered.Consumer == after.Delivered.Consumer &&
		before.NumAckPending == after.NumAckPending &&
		before.AckFloor.Stream == after.AckFloor.Stream
	st := si.State
	deleted := make(map[uint64]bool, len(st.Deleted))
	for _, d := range st.Deleted {
		deleted[d] = true
	}
	present := func(seq uint64) bool { return seq >= st.FirstSeq && seq <= st.LastSeq && !deleted[seq] }
	// The delivered messages still in the stream: pending or given up.
	hi := min(after.Delivered.Stream, st.LastSeq)
	var left uint64
	if hi >= st.FirstSeq {
		left = hi - st.FirstSeq + 1
		for d := range deleted {
			if d >= st.FirstSeq && d <= hi {
				left--
			}
		}
	}
	givenUp := int64(left) - int64(after.NumAckPending)
	var delivered []uint64
	for seq, c := range g.claims {
		switch {
		case !present(seq):
			refuted = append(refuted, c.id)
			delete(g.claims, seq)
		case seq > hi:
			c.held = 0 // not delivered yet
		default:
			delivered = append(delivered, seq)
		}
	}
	for _, seq := range delivered {
		c := g.claims[seq]
		if !steady || (seq > after.AckFloor.Stream && int64(len(delivered)) != givenUp) {
			c.held = 0
			continue
		}
		if c.held++; c.held >= 2 {
			given = append(given, c.id)
			delete(g.claims, seq)
		}
	}
	return given, refuted, nil
}
