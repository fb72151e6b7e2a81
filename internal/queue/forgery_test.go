package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// signedVerify accepts the payloads "signed JOB" (source "k1") and
// rejects every other as unsigned.
func signedVerify(_ context.Context, r Result) (string, error) {
	if string(r.Payload) == "signed "+r.JobID {
		return "k1", nil
	}
	return "", errors.New("no signature of a trusted key")
}

// forge publishes a message on the queue's results subject as any client
// allowed to publish there could.
func forge(t *testing.T, q *Queue, id string, h map[string]string, data string) {
	t.Helper()
	m := &nats.Msg{Subject: q.subjResults, Header: nats.Header{}, Data: []byte(data)}
	if id != "" {
		m.Header.Set(hdrJob, id)
	}
	for k, v := range h {
		m.Header.Set(k, v)
	}
	if _, err := q.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// TestForgedResultsFailNothing: results forged on the results subject
// before and while the honest workers run — error results, give-ups,
// floods of unsigned successes, messages that are not results — are
// refused and counted against the anonymous source; no job fails, every
// job gets its honest result, and the coordinator finishes.
func TestForgedResultsFailNothing(t *testing.T) {
	_, q := startLoopback(t, "forged", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs := []Job{{ID: "a"}, {ID: "b"}, {ID: "c"}}
	forge(t, q, "a", map[string]string{hdrWorker: "rogue", hdrDeliveries: "1", hdrError: `"repository cannot be checked out"`}, "")
	forge(t, q, "b", map[string]string{hdrWorker: "rogue", hdrDeliveries: "3", "Truss-Gave-Up": "true", hdrError: `"given up"`}, "")
	for range 5 {
		forge(t, q, "c", map[string]string{hdrWorker: "rogue", hdrDeliveries: "1"}, `{"resolved":true}`)
	}
	forge(t, q, "", map[string]string{hdrWorker: "rogue"}, "no job header")
	forge(t, q, "c", map[string]string{hdrDeliveries: "many"}, "bad deliveries")

	release := make(chan struct{})
	runWorker(t, q, WorkerConfig{ID: "honest", Parallel: 3}, func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		<-release
		return []byte("signed " + j.ID), nil
	})
	var mu sync.Mutex
	var reasons []string
	col := newCollector()
	go func() {
		time.Sleep(300 * time.Millisecond)
		// More while the workers run.
		forge(t, q, "a", map[string]string{hdrWorker: "rogue", hdrDeliveries: "1", hdrError: `"boom"`}, "")
		forge(t, q, "a", map[string]string{hdrWorker: "rogue", hdrDeliveries: "1", hdrError: `"boom"`}, "")
		close(release)
	}()
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{
		Accept: col.accept, Done: col.done, Verify: signedVerify,
		Rejected: func(r Result, source string, err error) {
			mu.Lock()
			defer mu.Unlock()
			reasons = append(reasons, r.JobID+": "+err.Error())
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	for _, j := range jobs {
		if r := got[j.ID]; r.Error != "" || r.GaveUp || r.Worker != "honest" || string(r.Payload) != "signed "+j.ID {
			t.Errorf("%s: result %+v, want the honest worker's", j.ID, r)
		}
	}
	if sum.Failed != 0 || sum.Rejected != 9 || sum.RejectedBy[Anonymous] != 9 || sum.Unreadable != 2 {
		t.Errorf("summary %+v; want 9 anonymous rejections, 2 unreadable messages skipped, nothing failed", sum)
	}
	if len(reasons) != 9 {
		t.Errorf("reported %v", reasons)
	}
}

// TestRepublishAfterTakenJob: a job a previous coordinator published
// within the duplicate window, then taken off the queue with no result
// (a worker misled by a forged status once acknowledged such jobs
// unrun), is published again by a restarted coordinator, not dropped as a
// duplicate.
func TestRepublishAfterTakenJob(t *testing.T) {
	_, q := startLoopback(t, "retaken", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	jobs := []Job{{ID: "x", Payload: payload(testPayload{})}}
	if _, err := q.Publish(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	m, err := q.cons.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	runWorker(t, q, WorkerConfig{}, testHandler)
	col := newCollector()
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
	if err != nil {
		t.Fatalf("Coordinate: %v (summary %+v)", err, sum)
	}
	col.exactlyOne(t, jobs)
	if sum.Published != 1 || sum.Deduplicated != 0 {
		t.Errorf("summary %+v", sum)
	}
}

// TestPoisonResultSkipped: a result whose verification panics is refused
// and reported once; the coordinator goes on to the honest result.
func TestPoisonResultSkipped(t *testing.T) {
	_, q := startLoopback(t, "poisonres", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forge(t, q, "p", map[string]string{hdrWorker: "rogue", hdrDeliveries: "1"}, "crash the verifier")
	runWorker(t, q, WorkerConfig{}, func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		time.Sleep(100 * time.Millisecond)
		return []byte("signed " + j.ID), nil
	})
	col := newCollector()
	var rejected []string
	jobs := []Job{{ID: "p"}}
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{
		Accept: col.accept, Done: col.done,
		Verify: func(ctx context.Context, r Result) (string, error) {
			if strings.HasPrefix(string(r.Payload), "crash") {
				panic("the verifier meets what it did not expect")
			}
			return signedVerify(ctx, r)
		},
		Rejected: func(r Result, _ string, err error) { rejected = append(rejected, err.Error()) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := col.exactlyOne(t, jobs)["p"]; string(r.Payload) != "signed p" {
		t.Errorf("result %+v", r)
	}
	if sum.Rejected != 1 || len(rejected) != 1 || !strings.Contains(rejected[0], "panicked") {
		t.Errorf("summary %+v, rejected %q", sum, rejected)
	}
}

// forgeAdvisory publishes, as a client with every right could, the
// server's advisory that the job at the jobs stream's sequence seq was
// delivered MaxDeliver times.
func forgeAdvisory(t *testing.T, q *Queue, seq uint64) {
	t.Helper()
	b, _ := json.Marshal(deliveryExceeded{Stream: q.streamJobs, Consumer: consumerName, StreamSeq: seq, Deliveries: uint64(q.cfg.MaxDeliver)})
	if err := q.nc.Publish(advisoryMaxDeliveries+"."+q.streamJobs+"."+consumerName, b); err != nil {
		t.Fatal(err)
	}
	if err := q.nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

// TestForgedAdvisoryGivesNothingUp: advisories of jobs given up, forged
// by a privileged client for a job a worker is running and for a
// sequence the stream does not hold, give nothing up; a job the server
// does give up meanwhile (it panics on every delivery) is given up, once
// the consumer's state bears its advisory out despite the forged claim
// beside it; the running job's honest result is accepted.
func TestForgedAdvisoryGivesNothingUp(t *testing.T) {
	_, q := startLoopback(t, "advforged", Config{AckWait: time.Second, MaxDeliver: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs := []Job{
		{ID: "held", Payload: payload(testPayload{})},
		{ID: "poison", Payload: payload(testPayload{Panic: true})},
		{ID: "quick", Payload: payload(testPayload{})},
	}
	started, release := make(chan struct{}), make(chan struct{})
	runWorker(t, q, WorkerConfig{ID: "honest", Parallel: 2}, func(ctx context.Context, j Job, p func(string)) ([]byte, error) {
		if j.ID == "held" {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return testHandler(ctx, j, p)
	})
	col := newCollector()
	go func() {
		<-started
		// "held" is the stream's first message and runs; nothing is at
		// sequence 99.
		forgeAdvisory(t, q, 1)
		forgeAdvisory(t, q, 99)
		// The poison job is given up meanwhile; the held job's forged
		// claim keeps the count from matching, so its give-up waits
		// for the held job's acknowledgement.
		time.Sleep(3 * time.Second)
		col.mu.Lock()
		held := len(col.results["held"])
		col.mu.Unlock()
		if held != 0 {
			t.Errorf("the held job has a result before it finished: %+v", col.results["held"])
		}
		close(release)
	}()
	var logs []string
	var mu sync.Mutex
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done, Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, fmt.Sprintf(f, a...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	if r := got["held"]; r.GaveUp || r.Error != "" || string(r.Payload) != "ok held" {
		t.Errorf("held: %+v, want its worker's result", r)
	}
	if r := got["quick"]; r.GaveUp || string(r.Payload) != "ok quick" {
		t.Errorf("quick: %+v", r)
	}
	if r := got["poison"]; !r.GaveUp || r.Deliveries != 3 || !strings.Contains(r.Error, "given up after 3 deliveries") {
		t.Errorf("poison: %+v, want given up", r)
	}
	if sum.GaveUp != 1 || sum.Refuted != 1 {
		t.Errorf("summary %+v, want one job given up and one advisory refuted", sum)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(logs, "\n"), "an advisory said held was given up") {
		t.Errorf("the refuted advisory was not reported: %q", logs)
	}
}

// TestGiveUpWhileOthersRun: a job the server gives up is given up while
// a job delivered before it still runs (the consumer's acknowledgement
// floor stays below both until then): the running job is released only
// once the give-up is recorded.
func TestGiveUpWhileOthersRun(t *testing.T) {
	_, q := startLoopback(t, "giveupearly", Config{AckWait: time.Second, MaxDeliver: 2})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jobs := []Job{{ID: "held", Payload: payload(testPayload{})}, {ID: "poison", Payload: payload(testPayload{Panic: true})}}
	release := make(chan struct{})
	var lastPoison atomic.Int64 // when the poison job last reached the worker
	runWorker(t, q, WorkerConfig{ID: "w", Parallel: 2}, func(ctx context.Context, j Job, p func(string)) ([]byte, error) {
		if j.ID == "poison" {
			lastPoison.Store(time.Now().UnixNano())
		}
		if j.ID == "held" {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return testHandler(ctx, j, p)
	})
	col := newCollector()
	_, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Done: col.done, Accept: func(ctx context.Context, r Result) error {
		if r.JobID == "poison" {
			t.Logf("given up %v after the job's last delivery", time.Since(time.Unix(0, lastPoison.Load())).Round(time.Millisecond))
			close(release)
		}
		return col.accept(ctx, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	if r := got["poison"]; !r.GaveUp || r.Deliveries != 2 {
		t.Errorf("poison: %+v", r)
	}
	if r := got["held"]; r.GaveUp || string(r.Payload) != "ok held" {
		t.Errorf("held: %+v", r)
	}
}

// TestRepublishBounded: a job whose every result is refused (its only
// worker signs with no trusted key) is published again MaxRepublish
// times, then recorded as failed with no provable result, naming the
// sources refused; the coordinator finishes.
func TestRepublishBounded(t *testing.T) {
	for _, tc := range []struct {
		name         string
		maxRepublish int
		republished  int
	}{
		{"default", 0, DefaultMaxRepublish},
		{"one", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, q := startLoopback(t, "bounded-"+tc.name, Config{AckWait: time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			w, _ := runWorker(t, q, WorkerConfig{ID: "untrusted"}, func(context.Context, Job, func(string)) ([]byte, error) {
				return []byte("unsigned"), nil
			})
			col := newCollector()
			jobs := []Job{{ID: "x"}}
			start := time.Now()
			sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done, Verify: signedVerify, MaxRepublish: tc.maxRepublish})
			if err != nil {
				t.Fatalf("Coordinate: %v (summary %+v)", err, sum)
			}
			t.Logf("failed %v after the start", time.Since(start).Round(time.Millisecond))
			r := col.exactlyOne(t, jobs)["x"]
			want := fmt.Sprintf("no provable result after %d publications of the run: %d results refused (by source: %s %d)", tc.republished+1, tc.republished+1, Anonymous, tc.republished+1)
			if r.Seq != 0 || r.Error != want {
				t.Errorf("result %+v, want the coordinator's failure %q", r, want)
			}
			if sum.Republished != tc.republished || sum.Rejected != tc.republished+1 || sum.Unprovable != 1 || sum.Failed != 1 || sum.Lost != 0 {
				t.Errorf("summary %+v", sum)
			}
			eventually(t, "the worker has run each publication", func() bool { return w.Stats().Ran == int64(tc.republished+1) })
		})
	}
}
