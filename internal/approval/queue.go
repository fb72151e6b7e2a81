package approval

import (
	"context"
	"sync"
)

// Queue is an Approver for a user interface: each request becomes a
// Question sent on Questions, and Approve waits for the interface to
// answer it. A question whose call is canceled before it is answered is
// withdrawn (Question.Withdrawn closes), so the interface can take it off
// the screen.
type Queue struct {
	questions chan *Question
}

// NewQueue returns a queue. The interface receives from Questions for the
// session's lifetime; several questions may be open at once.
func NewQueue() *Queue { return &Queue{questions: make(chan *Question)} }

// Questions delivers the questions, in the order they are asked.
func (q *Queue) Questions() <-chan *Question { return q.questions }

// Question is one open request.
type Question struct {
	Request
	answer    chan Decision
	withdrawn chan struct{}
	once      sync.Once
}

// Answer answers the question; only the first answer counts, and an answer
// to a withdrawn question is ignored.
func (q *Question) Answer(d Decision) {
	q.once.Do(func() { q.answer <- d })
}

// Withdrawn is closed when the call stops waiting for an answer.
func (q *Question) Withdrawn() <-chan struct{} { return q.withdrawn }

// Approve implements Approver.
func (q *Queue) Approve(ctx context.Context, r Request) (Decision, error) {
	qu := &Question{Request: r, answer: make(chan Decision, 1), withdrawn: make(chan struct{})}
	defer close(qu.withdrawn)
	select {
	case q.questions <- qu:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	select {
	case d := <-qu.answer:
		return d, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
