package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
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
