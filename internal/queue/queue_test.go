package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// runWorker runs a worker of q with h until the test ends or it returns.
func runWorker(t *testing.T, q *Queue, cfg WorkerConfig, h Handler) (*Worker, <-chan error) {
	t.Helper()
	if cfg.PollWait == 0 {
		cfg.PollWait = 100 * time.Millisecond
	}
	if cfg.RetryDelay == 0 {
		cfg.RetryDelay = 50 * time.Millisecond
	}
	w, err := q.NewWorker(cfg, h)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		errc <- w.Run(ctx)
		close(finished)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return w, errc
}

func testJobs(n int, p testPayload) []Job {
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{ID: fmt.Sprintf("task-%d/arm:x/1", i), Payload: payload(p)}
	}
	return jobs
}

func TestPublishDeduplicates(t *testing.T) {
	_, q := startLoopback(t, "dedup", Config{})
	ctx := context.Background()
	jobs := testJobs(20, testPayload{})
	dups, err := q.Publish(ctx, jobs...)
	if err != nil || dups != 0 {
		t.Fatalf("first publication: %d duplicates, %v", dups, err)
	}
	dups, err = q.Publish(ctx, jobs...)
	if err != nil || dups != 20 {
		t.Fatalf("second publication: %d duplicates, %v; want 20", dups, err)
	}
	pending, err := q.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 20 {
		t.Fatalf("%d jobs in the stream, want 20", len(pending))
	}
	for _, j := range jobs {
		if !pending[j.ID] {
			t.Errorf("job %s not pending", j.ID)
		}
	}
	// A coordinator started on this queue publishes nothing again: the
	// jobs are pending, or done with their results in the stream.
	col := newCollector()
	runWorker(t, q, WorkerConfig{Parallel: 2}, testHandler)
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
	if err != nil {
		t.Fatal(err)
	}
	col.exactlyOne(t, jobs)
	if sum.Published != 0 || sum.Accepted != 20 || sum.Pending > 20 {
		t.Errorf("summary %+v, want none published", sum)
	}
}

func TestJobValidation(t *testing.T) {
	_, q := startLoopback(t, "valid", Config{})
	for _, tc := range []struct {
		job  Job
		want string
	}{
		{Job{}, "needs an id"},
		{Job{ID: strings.Repeat("x", 513)}, "at most 512"},
		{Job{ID: "a\nb"}, "line break"},
	} {
		if _, err := q.Publish(context.Background(), tc.job); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Publish(%q): %v, want %q", tc.job.ID, err, tc.want)
		}
	}
	_, err := q.Coordinate(context.Background(), []Job{{ID: "a"}, {ID: "a"}}, CoordinatorConfig{Accept: newCollector().accept})
	if err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("duplicate ids: %v", err)
	}
}

func TestConfigAndNames(t *testing.T) {
	srv, _ := startLoopback(t, "cfg", Config{})
	nc, err := srv.Connect("t")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"bad.name", Config{}, "letters, digits"},
		{"", Config{}, "letters, digits"},
		{"ok", Config{AckWait: time.Millisecond}, "below 100ms"},
		{"ok", Config{MaxDeliver: -1}, "below 1"},
		{"ok", Config{Replicas: 7}, "replicas"},
	} {
		if _, err := Open(ctx, nc, tc.name, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q, %+v): %v, want %q", tc.name, tc.cfg, err, tc.want)
		}
	}
	if _, err := Join(ctx, nc, "missing"); !errors.Is(err, ErrNoQueue) {
		t.Errorf("Join of a missing queue: %v", err)
	}
	q, err := Join(ctx, nc, "cfg")
	if err != nil {
		t.Fatal(err)
	}
	if c := q.Config(); c.AckWait != DefaultAckWait || c.MaxDeliver != DefaultMaxDeliver {
		t.Errorf("joined config %+v", c)
	}
}

// TestPanickingJobGivenUp: a handler that panics on every delivery has its
// job given up after MaxDeliver deliveries: the server stops delivering it
// and advises the coordinator, which records the error result itself.
func TestPanickingJobGivenUp(t *testing.T) {
	_, q := startLoopback(t, "panic", Config{AckWait: time.Second, MaxDeliver: 3})
	jobs := append(testJobs(3, testPayload{MS: 10}), Job{ID: "poison", Payload: payload(testPayload{Panic: true})})
	var logs atomic.Int32
	w, _ := runWorker(t, q, WorkerConfig{ID: "solo", Parallel: 2, Logf: func(string, ...any) { logs.Add(1) }}, testHandler)
	col := newCollector()
	sum, err := q.Coordinate(context.Background(), jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	p := got["poison"]
	if !p.GaveUp || p.Seq != 0 || p.Worker != "" || !strings.Contains(p.Error, "given up after 3 deliveries") {
		t.Errorf("poison result %+v", p)
	}
	if st := w.Stats(); st.Retried != 3 || st.Ran != 3 {
		t.Errorf("worker stats %+v", st)
	}
	if sum.Failed != 1 || sum.GaveUp != 1 {
		t.Errorf("summary %+v", sum)
	}
	if logs.Load() == 0 {
		t.Error("the panics were not logged")
	}
}

func TestHandlerErrorIsFinal(t *testing.T) {
	_, q := startLoopback(t, "fail", Config{AckWait: time.Second})
	jobs := []Job{{ID: "broken", Payload: payload(testPayload{Fail: "repository cannot be checked out\nat line 2"})}}
	runWorker(t, q, WorkerConfig{}, testHandler)
	col := newCollector()
	if _, err := q.Coordinate(context.Background(), jobs, CoordinatorConfig{Accept: col.accept}); err != nil {
		t.Fatal(err)
	}
	r := col.exactlyOne(t, jobs)["broken"]
	if r.Error != "repository cannot be checked out\nat line 2" || r.Deliveries != 1 || r.GaveUp {
		t.Errorf("result %+v", r)
	}
	st, err := q.getStatus(context.Background(), "broken")
	if err != nil || st.State != Failed || st.Error != r.Error {
		t.Errorf("status %+v, %v", st, err)
	}
}

func TestRetryRedelivers(t *testing.T) {
	_, q := startLoopback(t, "retry", Config{AckWait: time.Second, MaxDeliver: 5})
	var calls atomic.Int32
	h := func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		if calls.Add(1) < 3 {
			return nil, Retry(errors.New("disk full"))
		}
		return []byte("third time"), nil
	}
	runWorker(t, q, WorkerConfig{}, h)
	col := newCollector()
	jobs := []Job{{ID: "flaky"}}
	if _, err := q.Coordinate(context.Background(), jobs, CoordinatorConfig{Accept: col.accept}); err != nil {
		t.Fatal(err)
	}
	r := col.exactlyOne(t, jobs)["flaky"]
	if string(r.Payload) != "third time" || r.Deliveries != 3 || r.Error != "" {
		t.Errorf("result %+v", r)
	}
	if !IsRetry(fmt.Errorf("wrapped: %w", Retry(errors.New("x")))) || IsRetry(errors.New("x")) {
		t.Error("IsRetry")
	}
}

// TestVerifyRejects: a rejected result is reported and the job delivered
// again; a job whose results one trusted source keeps getting wrong fails
// after MaxRejects of them; unsigned results fail nothing.
func TestVerifyRejects(t *testing.T) {
	_, q := startLoopback(t, "verify", Config{AckWait: time.Second})
	var runs sync.Map
	h := func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		n, _ := runs.LoadOrStore(j.ID, new(atomic.Int32))
		c := n.(*atomic.Int32).Add(1)
		switch {
		case j.ID == "miscounted":
			return []byte("signed by k1, wrong"), nil
		case c <= 3:
			return []byte("unsigned"), nil
		}
		return []byte("signed by k1"), nil
	}
	runWorker(t, q, WorkerConfig{Parallel: 2}, h)
	var rejected []string
	var mu sync.Mutex
	col := newCollector()
	jobs := []Job{{ID: "honest"}, {ID: "miscounted"}}
	sum, err := q.Coordinate(context.Background(), jobs, CoordinatorConfig{
		Accept: col.accept, Done: col.done, MaxRejects: 3,
		Verify: func(_ context.Context, r Result) (string, error) {
			switch string(r.Payload) {
			case "signed by k1":
				return "k1", nil
			case "signed by k1, wrong":
				return "k1", errors.New("the verdict is not the result's")
			}
			return "", errors.New("ledger signature does not verify")
		},
		Rejected: func(r Result, source string, err error) {
			mu.Lock()
			defer mu.Unlock()
			rejected = append(rejected, r.JobID+"@"+source)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	if r := got["honest"]; string(r.Payload) != "signed by k1" || r.Error != "" {
		t.Errorf("honest result %+v", r)
	}
	if r := got["miscounted"]; r.Error == "" || !strings.Contains(r.Error, "3 results signed by k1 rejected") || r.Payload != nil || r.Seq != 0 {
		t.Errorf("miscounted result %+v", r)
	}
	if sum.Rejected != 6 || len(rejected) != 6 || sum.Failed != 1 || sum.RejectedBy[Anonymous] != 3 || sum.RejectedBy["k1"] != 3 {
		t.Errorf("summary %+v, rejected %v; want 3 anonymous rejections of honest, 3 of k1 for miscounted", sum, rejected)
	}
	if sum.Republished != 5 {
		t.Errorf("republished %d, want 5 (each rejected result's job had been acknowledged, but the last)", sum.Republished)
	}
}

// TestDrain: a drained worker finishes the job in hand, publishes its
// result and takes no other job.
func TestDrain(t *testing.T) {
	_, q := startLoopback(t, "drain", Config{AckWait: time.Second})
	ctx := context.Background()
	started := make(chan string, 10)
	release := make(chan struct{})
	h := func(ctx context.Context, j Job, progress func(string)) ([]byte, error) {
		started <- j.ID
		<-release
		return []byte("finished"), nil
	}
	jobs := testJobs(3, testPayload{})
	if _, err := q.Publish(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	w, errc := runWorker(t, q, WorkerConfig{ID: "drainer"}, h)
	first := <-started
	w.Drain()
	close(release)
	if err := <-errc; err != nil {
		t.Fatalf("Run after Drain: %v", err)
	}
	select {
	case id := <-started:
		t.Errorf("took %s after Drain", id)
	default:
	}
	// The server processes the ack after Run has sent it.
	var pending map[string]bool
	eventually(t, "the drained job acknowledged", func() bool {
		var err error
		pending, err = q.Pending(ctx)
		return err == nil && !pending[first]
	})
	if len(pending) != 2 {
		t.Errorf("pending after drain %v, want the 2 jobs other than %s", pending, first)
	}
	col := newCollector()
	runWorker(t, q, WorkerConfig{}, testHandler)
	if _, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done}); err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	if r := got[first]; r.Worker != "drainer" || string(r.Payload) != "finished" {
		t.Errorf("drained job's result %+v", r)
	}
}

// TestHardStopHandsBack: cancelling Run cancels the job in hand and hands
// it back at once, without waiting for the ack deadline.
func TestHardStopHandsBack(t *testing.T) {
	_, q := startLoopback(t, "hard", Config{AckWait: time.Minute})
	ctx := context.Background()
	in := make(chan struct{})
	h := func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		close(in)
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if _, err := q.Publish(ctx, Job{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	w, err := q.NewWorker(WorkerConfig{PollWait: 100 * time.Millisecond}, h)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	go func() { errc <- w.Run(rctx) }()
	<-in
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	col := newCollector()
	runWorker(t, q, WorkerConfig{}, testHandler)
	// With a one-minute ack wait, only the hand-back lets this finish.
	if _, err := q.Coordinate(ctx, []Job{{ID: "long", Payload: payload(testPayload{})}}, CoordinatorConfig{Accept: col.accept}); err != nil {
		t.Fatal(err)
	}
	if r := col.exactlyOne(t, []Job{{ID: "long"}})["long"]; r.Deliveries != 2 {
		t.Errorf("result %+v, want delivery 2", r)
	}
}

func TestExitWhenIdle(t *testing.T) {
	_, q := startLoopback(t, "idle", Config{AckWait: time.Second})
	ctx := context.Background()
	jobs := testJobs(5, testPayload{MS: 5})
	if _, err := q.Publish(ctx, jobs...); err != nil {
		t.Fatal(err)
	}
	w, errc := runWorker(t, q, WorkerConfig{ExitWhenIdle: true, IdleWait: 200 * time.Millisecond}, testHandler)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Ran != 5 {
		t.Errorf("stats %+v, want 5 ran", st)
	}
}

// TestStatus: a running job shows its worker, start and heartbeats, and
// the progress note.
func TestStatus(t *testing.T) {
	_, q := startLoopback(t, "status", Config{AckWait: 300 * time.Millisecond})
	ctx := context.Background()
	noted := make(chan struct{})
	release := make(chan struct{})
	h := func(ctx context.Context, j Job, progress func(string)) ([]byte, error) {
		if j.ID == "slow" {
			progress("turn 3")
			close(noted)
			<-release
		}
		return nil, nil
	}
	jobs := []Job{{ID: "slow"}, {ID: "queued"}}
	// The slow job goes first and alone.
	if _, err := q.Publish(ctx, jobs[0]); err != nil {
		t.Fatal(err)
	}
	runWorker(t, q, WorkerConfig{ID: "w-status"}, h)
	<-noted
	if err := q.putStatusAsync(ctx, []JobStatus{{ID: "queued", State: Queued}}); err != nil {
		t.Fatal(err)
	}
	var slow JobStatus
	eventually(t, "heartbeats with the note", func() bool {
		var err error
		slow, err = q.getStatus(ctx, "slow")
		return err == nil && slow.Note == "turn 3" && slow.Heartbeat.Sub(slow.Started) >= 200*time.Millisecond
	})
	if slow.State != Running || slow.Worker != "w-status" || slow.Deliveries != 1 {
		t.Errorf("slow status %+v", slow)
	}
	// Heartbeats kept the job: three ack waits later it is still on its
	// first delivery.
	time.Sleep(900 * time.Millisecond)
	info, err := q.cons.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.NumRedelivered != 0 || info.NumAckPending != 1 {
		t.Errorf("consumer: %d redelivered, %d pending ack; heartbeats should hold the job", info.NumRedelivered, info.NumAckPending)
	}
	all, err := q.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := Counts(all); c[Running] != 1 || c[Queued] != 1 || len(all) != 2 {
		t.Errorf("counts %v", c)
	}
	close(release)
	col := newCollector()
	if _, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept}); err != nil {
		t.Fatal(err)
	}
	all, _ = q.Status(ctx)
	if c := Counts(all); c[Done] != 2 {
		t.Errorf("counts at the end %v", c)
	}
}

// TestForgedDoneStatusRuns: the status bucket is display. A "done" entry
// a worker wrote for a job the coordinator has not accepted makes no
// worker skip it: it runs, and its result is accepted.
func TestForgedDoneStatusRuns(t *testing.T) {
	_, q := startLoopback(t, "skip", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := q.putStatus(ctx, JobStatus{ID: "old", State: Done, Worker: "rogue"}, false); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Bool
	runWorker(t, q, WorkerConfig{}, func(context.Context, Job, func(string)) ([]byte, error) {
		ran.Store(true)
		return []byte("ran"), nil
	})
	col := newCollector()
	jobs := []Job{{ID: "old"}}
	if _, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done}); err != nil {
		t.Fatal(err)
	}
	if r := col.exactlyOne(t, jobs)["old"]; !ran.Load() || string(r.Payload) != "ran" {
		t.Errorf("ran %v, result %+v", ran.Load(), r)
	}
}

func TestCoordinateAllDone(t *testing.T) {
	_, q := startLoopback(t, "alldone", Config{})
	sum, err := q.Coordinate(context.Background(), testJobs(3, testPayload{}), CoordinatorConfig{
		Accept: func(context.Context, Result) error { return errors.New("must not be called") },
		Done:   func(string) bool { return true },
	})
	if err != nil || sum.Skipped != 3 || sum.Published != 0 {
		t.Errorf("summary %+v, %v", sum, err)
	}
	if _, err := q.Coordinate(context.Background(), nil, CoordinatorConfig{}); err == nil {
		t.Error("no Accept callback accepted")
	}
}

func TestAcceptErrorStops(t *testing.T) {
	_, q := startLoopback(t, "accepterr", Config{AckWait: time.Second})
	runWorker(t, q, WorkerConfig{}, testHandler)
	diskFull := errors.New("results file: no space left")
	_, err := q.Coordinate(context.Background(), testJobs(2, testPayload{}), CoordinatorConfig{
		Accept: func(context.Context, Result) error { return diskFull },
	})
	if !errors.Is(err, diskFull) {
		t.Errorf("Coordinate: %v", err)
	}
}

func TestListenRefusedWithoutAuth(t *testing.T) {
	ctx := context.Background()
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	for _, tc := range []struct {
		listen string
		auth   Auth
		want   string // "" for success
	}{
		{"127.0.0.1:0", Auth{}, ""},
		{"localhost:0", Auth{}, ""},
		{"0.0.0.0:0", Auth{}, "non-loopback"},
		{":0", Auth{}, "non-loopback"},
		{"192.0.2.1:4222", Auth{}, "non-loopback"},
		{"0.0.0.0:0", Auth{Token: "s3cret"}, ""},
		{"0.0.0.0:0", Auth{User: "bench", Password: "pw"}, ""},
		{"0.0.0.0:0", Auth{NKeys: []string{pub}}, ""},
		{"127.0.0.1:0", Auth{Token: "t", User: "u", Password: "p", NKeys: []string{pub}}, ""},
		{"127.0.0.1:0", Auth{User: "u"}, "needs a password"},
		{"127.0.0.1:0", Auth{NKeys: []string{"SUAXYZ"}}, "public user NKey"},
		{"127.0.0.1", Auth{}, "missing port"},
		{"127.0.0.1:99999", Auth{}, "bad port"},
	} {
		srv, err := StartServer(ctx, ServerConfig{Dir: t.TempDir(), Listen: tc.listen, Auth: tc.auth})
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s %+v: %v", tc.listen, tc.auth, err)
				continue
			}
			srv.Shutdown()
			continue
		}
		if err == nil {
			srv.Shutdown()
			t.Errorf("%s %+v: started, want %q", tc.listen, tc.auth, tc.want)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %+v: %v, want %q", tc.listen, tc.auth, err, tc.want)
		}
	}
	_, err := StartServer(ctx, ServerConfig{Listen: "0.0.0.0:0"})
	if err == nil || !strings.Contains(err.Error(), "store directory") {
		t.Errorf("no directory: %v", err)
	}
	if _, err := StartServer(ctx, ServerConfig{Dir: t.TempDir(), Listen: "0.0.0.0:0"}); !errors.Is(err, ErrInsecureListen) {
		t.Errorf("want ErrInsecureListen, got %v", err)
	}
}

// TestAuth: a server with each kind of authentication admits a client
// with the credentials, refuses one without, and its own in-process
// connection works.
func TestAuth(t *testing.T) {
	ctx := context.Background()
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "worker.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		auth Auth
		good ConnectOptions
		url  func(base string) string
	}{
		{"token", Auth{Token: "s3cret"}, ConnectOptions{Token: "s3cret"}, nil},
		{"token in url", Auth{Token: "s3cret"}, ConnectOptions{}, func(b string) string { return strings.Replace(b, "nats://", "nats://s3cret@", 1) }},
		{"user", Auth{User: "bench", Password: "pw"}, ConnectOptions{User: "bench", Password: "pw"}, nil},
		{"nkey", Auth{NKeys: []string{pub}}, ConnectOptions{CredsFile: seedFile}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := StartServer(ctx, ServerConfig{Dir: t.TempDir(), Auth: tc.auth})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown()
			url := srv.URL()
			if tc.url != nil {
				url = tc.url(url)
			}
			nc, err := Connect(ctx, url, tc.good)
			if err != nil {
				t.Fatalf("with credentials: %v", err)
			}
			nc.Close()
			if nc, err := Connect(ctx, srv.URL(), ConnectOptions{}); err == nil {
				nc.Close()
				t.Fatal("connected without credentials")
			} else if !errors.Is(err, nats.ErrAuthorization) && !strings.Contains(err.Error(), "uthorization") {
				t.Errorf("without credentials: %v", err)
			}
			in, err := srv.Connect("in-process")
			if err != nil {
				t.Fatalf("in process: %v", err)
			}
			defer in.Close()
			if _, err := Open(ctx, in, "authq", Config{Memory: true}); err != nil {
				t.Fatalf("open over the in-process connection: %v", err)
			}
		})
	}
	if _, err := Connect(ctx, "nats://127.0.0.1:1", ConnectOptions{CredsFile: filepath.Join(t.TempDir(), "missing")}); err == nil || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("missing creds file: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.nk")
	_ = os.WriteFile(bad, []byte("not a seed"), 0o600)
	if _, err := Connect(ctx, "nats://127.0.0.1:1", ConnectOptions{CredsFile: bad}); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("bad creds file: %v", err)
	}
	if _, err := Connect(ctx, "", ConnectOptions{}); err == nil {
		t.Error("empty URL accepted")
	}
}

func TestNameFor(t *testing.T) {
	a, b := NameFor("/home/u/runs/a"), NameFor("/home/u/runs/b")
	if a == b || a != NameFor("/home/u/runs/a") || !nameRE.MatchString(a) {
		t.Errorf("NameFor: %q, %q", a, b)
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.1.2.3": true, "::1": true, "localhost": true, "LocalHost": true,
		"0.0.0.0": false, "": false, "::": false, "10.0.0.1": false, "example.com": false, "127.0.0.1.nip.io": false,
	} {
		if got := isLoopback(host); got != want {
			t.Errorf("isLoopback(%q) = %v", host, got)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                           "nats://127.0.0.1:4222",
		"nats://tok@h:4222":                               "nats://***@h:4222",
		"nats://u:p@h:1,nats://u:p@h:2":                   "nats://***@h:1,nats://***@h:2",
		"tls://user:pa@ss@host":                           "tls://***@host",
		"h:4222":                                          "h:4222",
		"nats://a@b:1, nats://c:2":                        "nats://***@b:1, nats://c:2",
		"nats://user:pass@host:4222/path?x=y@z":           "nats://***@host:4222/path?x=y@z",
		"nats://[::1]:4222":                               "nats://[::1]:4222",
		"nats://s3cret@127.0.0.1:4222,nats://127.0.0.1:1": "nats://***@127.0.0.1:4222,nats://127.0.0.1:1",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestArtifacts(t *testing.T) {
	_, q := startLoopback(t, "art", Config{})
	ctx := context.Background()
	if _, err := q.StatArtifact(ctx, "repo.bundle"); !errors.Is(err, ErrNoArtifact) {
		t.Errorf("stat before any put: %v", err)
	}
	big := bytes.Repeat([]byte("git bundle bytes "), 200_000) // 3.4 MB, several chunks
	a, err := q.PutArtifact(ctx, "repo.bundle", bytes.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	if a.Size != uint64(len(big)) || !strings.HasPrefix(a.Digest, "SHA-256=") {
		t.Errorf("artifact %+v", a)
	}
	var buf bytes.Buffer
	if _, err := q.GetArtifact(ctx, "repo.bundle", &buf); err != nil || !bytes.Equal(buf.Bytes(), big) {
		t.Fatalf("get: %v, %d bytes", err, buf.Len())
	}
	if _, err := q.GetArtifact(ctx, "other", &buf); !errors.Is(err, ErrNoArtifact) {
		t.Errorf("get missing: %v", err)
	}

	cache := q.NewArtifactCache(t.TempDir())
	var wg sync.WaitGroup
	paths := make([]string, 4)
	for i := range paths {
		wg.Go(func() {
			p, err := cache.Path(ctx, "repo.bundle")
			if err != nil {
				t.Error(err)
			}
			paths[i] = p
		})
	}
	wg.Wait()
	fi, err := os.Stat(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths[1:] {
		if p != paths[0] {
			t.Errorf("paths differ: %v", paths)
		}
	}
	if got, _ := os.ReadFile(paths[0]); !bytes.Equal(got, big) {
		t.Error("cached content differs")
	}
	entries, _ := os.ReadDir(filepath.Dir(paths[0]))
	if len(entries) != 1 {
		t.Errorf("cache holds %d files, want 1 (no temporary left)", len(entries))
	}
	// Fetched once: the file is not rewritten.
	p, err := cache.Path(ctx, "repo.bundle")
	if err != nil {
		t.Fatal(err)
	}
	if fi2, _ := os.Stat(p); !os.SameFile(fi, fi2) || !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("the cached artifact was fetched again")
	}
	// A replaced artifact is fetched anew.
	if _, err := q.PutArtifact(ctx, "repo.bundle", strings.NewReader("new content")); err != nil {
		t.Fatal(err)
	}
	p2, err := cache.Path(ctx, "repo.bundle")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p2); p2 == p || string(got) != "new content" {
		t.Errorf("replaced artifact: %s %q", p2, got)
	}
}

func TestDelete(t *testing.T) {
	srv, q := startLoopback(t, "gone", Config{})
	ctx := context.Background()
	if _, err := q.PutArtifact(ctx, "x", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if err := q.Delete(ctx); err != nil {
		t.Fatal(err)
	}
	nc, _ := srv.Connect("t")
	defer nc.Close()
	if _, err := Join(ctx, nc, "gone"); !errors.Is(err, ErrNoQueue) {
		t.Errorf("Join after Delete: %v", err)
	}
}

// TestWorkerPermissions: a worker of an embedded server restricted to
// its queue — whether it presents an NKey, the shared token, or the user
// and password, all admitted at once — runs jobs, publishes results and
// reads the status entries, and can do nothing else a coordinator does:
// publish a job, forge the server's advisory, purge or delete the jobs,
// read the results. The process's own connection keeps every right.
func TestWorkerPermissions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "worker.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	auth := Auth{Token: "s3cret", User: "bench", Password: "pw", NKeys: []string{pub}}
	srv, err := StartServer(ctx, ServerConfig{Dir: t.TempDir(), Auth: auth, Queue: "perm"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	in, err := srv.Connect("coordinator")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	q, err := Open(ctx, in, "perm", Config{AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.PutArtifact(ctx, "repo/x", strings.NewReader("bundle")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts ConnectOptions
		url  func(string) string
	}{
		{"nkey", ConnectOptions{CredsFile: seedFile}, nil},
		{"token", ConnectOptions{Token: "s3cret"}, nil},
		{"token in url", ConnectOptions{}, func(u string) string { return strings.Replace(u, "nats://", "nats://s3cret@", 1) }},
		{"user", ConnectOptions{User: "bench", Password: "pw"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := srv.URL()
			if tc.url != nil {
				url = tc.url(url)
			}
			checkWorker(ctx, t, q, url, tc.opts, tc.name)
		})
	}
	// A wrong token, password or key is refused.
	for _, o := range []ConnectOptions{{Token: "wrong"}, {User: "bench", Password: "wrong"}, {User: "other", Password: "pw"}} {
		if nc, err := Connect(ctx, srv.URL(), o); err == nil {
			nc.Close()
			t.Errorf("%+v: connected", o)
		}
	}
	other, _ := nkeys.CreateUser()
	oseed, _ := other.Seed()
	ofile := filepath.Join(t.TempDir(), "other.nk")
	if err := os.WriteFile(ofile, oseed, 0o600); err != nil {
		t.Fatal(err)
	}
	if nc, err := Connect(ctx, srv.URL(), ConnectOptions{CredsFile: ofile}); err == nil {
		nc.Close()
		t.Error("an NKey not admitted connected")
	}
	// The process's own key, presented without its seed.
	ipub, _ := srv.internal.PublicKey()
	if nc, err := nats.Connect(srv.URL(), nats.Nkey(ipub, other.Sign)); err == nil {
		nc.Close()
		t.Error("a client presenting the process's public key with another key's signature connected")
	}
}

func TestSignedNonce(t *testing.T) {
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	other, _ := nkeys.CreateUser()
	nonce := []byte("nonce-from-the-server")
	sig, _ := kp.Sign(nonce)
	osig, _ := other.Sign(nonce)
	for _, tc := range []struct {
		name  string
		pub   string
		sig   string
		nonce []byte
		want  bool
	}{
		{"raw url", pub, base64.RawURLEncoding.EncodeToString(sig), nonce, true},
		{"standard", pub, base64.StdEncoding.EncodeToString(sig), nonce, true},
		{"another key's", pub, base64.RawURLEncoding.EncodeToString(osig), nonce, false},
		{"another nonce", pub, base64.RawURLEncoding.EncodeToString(sig), []byte("other"), false},
		{"no nonce", pub, base64.RawURLEncoding.EncodeToString(sig), nil, false},
		{"no signature", pub, "", nonce, false},
		{"not base64", pub, "!!!", nonce, false},
		{"not a key", "UNOTAKEY", base64.RawURLEncoding.EncodeToString(sig), nonce, false},
	} {
		if got := signedNonce(tc.pub, tc.sig, tc.nonce); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// checkWorker checks that a worker connecting to url with o, as id, runs
// q's jobs (reading the artifact "repo/x", which holds "bundle", and
// adding its own) and reads its status entries, and is refused
// everything else a coordinator does: publish a job, forge the server's
// advisory, purge or delete the jobs, read the results.
func checkWorker(ctx context.Context, t *testing.T, q *Queue, url string, o ConnectOptions, id string) {
	t.Helper()
	var mu sync.Mutex
	var violations []string
	wnc, err := Connect(ctx, url, o)
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	wnc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		mu.Lock()
		defer mu.Unlock()
		violations = append(violations, err.Error())
	})
	wq, err := Join(ctx, wnc, q.Name())
	if err != nil {
		t.Fatalf("a worker joins: %v", err)
	}
	w, err := wq.NewWorker(WorkerConfig{ID: id, PollWait: 100 * time.Millisecond, Logf: t.Logf}, func(ctx context.Context, j Job, progress func(string)) ([]byte, error) {
		progress("reading the bundle")
		var b bytes.Buffer
		if _, err := wq.GetArtifact(ctx, "repo/x", &b); err != nil {
			return nil, err
		}
		if _, err := wq.PutUpload(ctx, "ledger-"+statusKey(j.ID), []byte("ledger of "+j.ID)); err != nil {
			return nil, err
		}
		return b.Bytes(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wdone := make(chan error, 1)
	go func() { wdone <- w.Run(ctx) }()
	col := newCollector()
	jobs := []Job{{ID: id + "/a"}, {ID: id + "/b"}}
	if _, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done}); err != nil {
		t.Fatal(err)
	}
	for job, r := range col.exactlyOne(t, jobs) {
		if r.Error != "" || string(r.Payload) != "bundle" || r.Worker != id {
			t.Errorf("%s: %+v", job, r)
		}
	}
	w.Drain()
	if err := <-wdone; err != nil {
		t.Errorf("worker: %v", err)
	}
	// The coordinator reads what the worker uploaded.
	for _, j := range jobs {
		data := []byte("ledger of " + j.ID)
		sum := sha256.Sum256(data)
		var b bytes.Buffer
		u := Upload{Name: "ledger-" + statusKey(j.ID), Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
		if err := q.GetUpload(ctx, u, &b); err != nil || b.String() != string(data) {
			t.Errorf("the upload of %s: %q, %v", j.ID, b.String(), err)
		}
	}
	// What `truss bench status` reads.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	sts, err := wq.Status(sctx)
	if err != nil {
		t.Errorf("the status entries: %v", err)
	} else if c := Counts(sts); c[Done] < 2 {
		t.Errorf("status entries %v", c)
	}
	// What a worker may not do.
	for _, subj := range []string{
		q.jobSubject("c"),
		advisoryMaxDeliveries + "." + q.streamJobs + "." + consumerName,
		"$JS.API.STREAM.PURGE." + q.streamJobs,
		"$JS.API.STREAM.DELETE." + q.streamRes,
		"$JS.API.STREAM.MSG.DELETE." + q.streamJobs,
		"$JS.API.CONSUMER.CREATE." + q.streamRes,
		"$JS.API.CONSUMER.DELETE." + q.streamJobs + "." + consumerName,
		"$O." + q.objects + ".C.x",
		"$JS.API.CONSUMER.CREATE.KV_" + q.bucketStatus,
		"$JS.API.CONSUMER.CREATE.OBJ_" + q.objects,
		"$JS.API.DIRECT.GET." + q.streamUploads,
	} {
		if err := wnc.Publish(subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wnc.SubscribeSync(q.subjResults); err != nil {
		t.Fatal(err)
	}
	eventually(t, "twelve permission violations", func() bool {
		_ = wnc.Flush()
		mu.Lock()
		defer mu.Unlock()
		return len(violations) >= 12
	})
	mu.Lock()
	for _, v := range violations {
		if !strings.Contains(v, "Permissions Violation") {
			t.Errorf("not a permission violation: %s", v)
		}
	}
	mu.Unlock()
	if pending, err := q.Pending(ctx); err != nil || len(pending) != 0 {
		t.Errorf("jobs in the queue after the worker's attempts: %v, %v", pending, err)
	}
	if _, err := q.cons.Info(ctx); err != nil {
		t.Errorf("the workers' consumer after the worker's attempts: %v", err)
	}
}

// TestReplicasCannotBePlaced: asking a single server for three replicas
// is refused with an error that says so.
func TestReplicasCannotBePlaced(t *testing.T) {
	srv, err := StartServer(context.Background(), ServerConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect("t")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if r := DefaultReplicas(nc); r != 1 {
		t.Errorf("default replicas on one server: %d", r)
	}
	_, err = Open(context.Background(), nc, "three", Config{Replicas: 3})
	if err == nil || !strings.Contains(err.Error(), "cannot place 3 replicas") {
		t.Errorf("Open with 3 replicas on one server: %v", err)
	}
}

// TestLargeJob: the embedded server takes a job of several megabytes (a
// task's test patch or a prediction with a generated file), past NATS's
// 1 MiB default, and the queue says how much it takes.
func TestLargeJob(t *testing.T) {
	_, q := startLoopback(t, "large", Config{})
	if got := q.MaxPayload(); got != EmbeddedMaxPayload {
		t.Fatalf("MaxPayload %d, want %d", got, EmbeddedMaxPayload)
	}
	job := Job{ID: "big/arm:x/1", Payload: []byte(fmt.Sprintf(`{"ms": 1, "pad": %q}`, strings.Repeat("x", 3<<20)))}
	ctx := context.Background()
	if _, err := q.Publish(ctx, job); err != nil {
		t.Fatal(err)
	}
	col := newCollector()
	runWorker(t, q, WorkerConfig{Parallel: 1}, testHandler)
	if _, err := q.Coordinate(ctx, []Job{job}, CoordinatorConfig{Accept: col.accept, Done: col.done}); err != nil {
		t.Fatal(err)
	}
	col.exactlyOne(t, []Job{job})
}
