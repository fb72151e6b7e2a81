package queue

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// A worker can learn every part of another's result message id but the
// nonce: the job's sequence (stream info), the delivery (1 to 3) and the
// worker's name (its status entries). Forged results sent first under
// every such id must not make the stream drop the honest result as a
// duplicate.
func TestForgedMessageIDsDropNothing(t *testing.T) {
	g := startGuarded(t, "msgid", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, nc := g.join(t, g.token)
	const w = "honest-w1"
	for seq := 1; seq <= 12; seq++ {
		for d := 1; d <= 3; d++ {
			m := &nats.Msg{Subject: "truss.msgid.results", Header: nats.Header{}, Data: []byte("forged")}
			m.Header.Set(hdrJob, "a")
			m.Header.Set(hdrWorker, "rogue")
			m.Header.Set(hdrDeliveries, "1")
			m.Header.Set("Nats-Msg-Id", Result{JobID: "a", Worker: w, Deliveries: d, jobSeq: uint64(seq)}.msgID())
			if _, err := nc.RequestMsgWithContext(ctx, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	wq, _ := g.join(t, g.token)
	var runs atomic.Int32
	runWorker(t, wq, WorkerConfig{ID: w}, func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		runs.Add(1)
		return []byte("signed " + j.ID), nil
	})
	col := newCollector()
	sum, err := g.q.Coordinate(ctx, []Job{{ID: "a"}}, CoordinatorConfig{Accept: col.accept, Done: col.done, Verify: signedVerify})
	if err != nil {
		t.Fatal(err)
	}
	rs := col.results["a"]
	if len(rs) != 1 || rs[0].Worker != w || rs[0].Error != "" || runs.Load() != 1 {
		t.Fatalf("results %+v after %d runs; summary %+v", rs, runs.Load(), sum)
	}
}
