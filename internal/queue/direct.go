package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
)

// directBatch is how many messages one batched direct get asks for.
const directBatch = 256

// directTimeout bounds the wait for each reply of a batched direct get.
const directTimeout = 10 * time.Second

// directRead reads, in order, the messages of stream from sequence seq on
// whose subject matches filter (wildcards allowed), with batched direct
// gets ($JS.API.DIRECT.GET.STREAM; the stream must allow direct gets).
// No consumer is made: a client allowed to read a stream and nothing
// else — no consumer of its own, whose delivery subject the server would
// not check against the client's permissions — may. fn is called with
// each message and its stream sequence; it returns false to stop. A
// replica may answer, so what is read may lag the stream's leader by the
// last few writes.
func (q *Queue) directRead(ctx context.Context, stream, filter string, seq uint64, fn func(m *nats.Msg, seq uint64) (bool, error)) error {
	inbox := q.nc.NewInbox()
	sub, err := q.nc.SubscribeSync(inbox)
	if err != nil {
		return fmt.Errorf("queue: read %s: %w", stream, err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	seq = max(seq, 1)
	for {
		req, _ := json.Marshal(struct {
			Seq     uint64 `json:"seq"`
			NextFor string `json:"next_by_subj"`
			Batch   int    `json:"batch"`
		}{seq, filter, directBatch})
		if err := q.nc.PublishRequest("$JS.API.DIRECT.GET."+stream, inbox, req); err != nil {
			return fmt.Errorf("queue: read %s: %w", stream, err)
		}
		got := 0
		for {
			rctx, cancel := context.WithTimeout(ctx, directTimeout)
			m, err := sub.NextMsgWithContext(rctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("queue: read %s: %w", stream, err)
			}
			switch status := m.Header.Get("Status"); status {
			case "":
			case "404": // nothing at or after seq
				return nil
			case "204": // the end of the batch
				if got == 0 {
					return nil
				}
				if np, err := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64); err == nil && np == 0 {
					return nil
				}
			default:
				return fmt.Errorf("queue: read %s: status %s %s", stream, status, m.Header.Get("Description"))
			}
			if m.Header.Get("Status") == "204" {
				break
			}
			s, err := strconv.ParseUint(m.Header.Get("Nats-Sequence"), 10, 64)
			if err != nil || s < seq {
				return fmt.Errorf("queue: read %s: a reply without a sequence after %d", stream, seq)
			}
			got++
			seq = s + 1
			more, err := fn(m, s)
			if err != nil || !more {
				return err
			}
		}
	}
}
