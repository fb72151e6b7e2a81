package queue

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
)

// guarded is an embedded server that gives the clients it admits — by
// token or by NKey — a worker's permissions on one queue, with that queue
// declared by the process's own connection.
type guarded struct {
	srv   *Server
	q     *Queue
	token ConnectOptions
	nkey  ConnectOptions
}

func startGuarded(t *testing.T, name string, cfg Config) guarded {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "worker.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	srv, q := startServerQueue(t, ServerConfig{Dir: t.TempDir(), Auth: Auth{Token: "s3cret", NKeys: []string{pub}}, Queue: name}, name, cfg)
	return guarded{srv: srv, q: q, token: ConnectOptions{Token: "s3cret"}, nkey: ConnectOptions{CredsFile: seedFile}}
}

// join connects to the guarded server with o, as a worker would, and
// joins its queue.
func (g guarded) join(t *testing.T, o ConnectOptions) (*Queue, *nats.Conn) {
	t.Helper()
	nc, err := Connect(context.Background(), g.srv.URL(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	wq, err := Join(context.Background(), nc, g.q.Name())
	if err != nil {
		t.Fatal(err)
	}
	return wq, nc
}

// forgeAck acknowledges, on nc, the jobs stream's message seq as the
// workers' consumer delivered it — whoever it was delivered to: the
// server names an acknowledged message by its stream sequence alone. It
// returns once the server has processed the acknowledgement.
func forgeAck(ctx context.Context, nc *nats.Conn, q *Queue, seq uint64) error {
	subj := "$JS.ACK." + q.streamJobs + "." + consumerName + ".1." + strconv.FormatUint(seq, 10) + ".1.0.0"
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := nc.RequestWithContext(rctx, subj, nil)
	return err
}

// TestAckedAwayRepublished: a client with a worker's permissions (the
// shared token, or an NKey) takes jobs off the queue with no result —
// it acknowledges a delivery another worker holds (that worker then hands
// the job back, which finds no message), or pulls jobs and acknowledges
// them unrun. The coordinator notices each job gone with no result,
// publishes it again, and every job gets exactly one honest result; the
// coordinator finishes.
func TestAckedAwayRepublished(t *testing.T) {
	for _, tc := range []struct {
		name string
		// rogue picks the rogue's credentials.
		rogue func(guarded) ConnectOptions
		// holdFirst makes the honest worker's first run of job "a" wait
		// for the rogue and then hand the job back (a transient failure).
		holdFirst bool
		// attack is what the rogue does; it starts the honest worker with
		// honest() when it is ready for it.
		attack func(ctx context.Context, t *testing.T, rq *Queue, rnc *nats.Conn, s *ackScene)
		lost   int
	}{
		{
			name:      "another worker's delivery acknowledged by the token's holder",
			rogue:     func(g guarded) ConnectOptions { return g.token },
			holdFirst: true,
			attack: func(ctx context.Context, t *testing.T, rq *Queue, rnc *nats.Conn, s *ackScene) {
				s.honest()
				<-s.holding
				// The consumer's state, which a worker may read, says which
				// messages were delivered.
				ci, err := rq.cons.Info(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				for seq := uint64(1); seq <= ci.Delivered.Stream; seq++ {
					if err := forgeAck(ctx, rnc, rq, seq); err != nil {
						t.Errorf("acknowledging message %d: %v", seq, err)
					}
				}
				s.ackedNow("a")
				close(s.acked)
			},
			lost: 1,
		},
		{
			name:  "jobs pulled and acknowledged unrun by an NKey's holder",
			rogue: func(g guarded) ConnectOptions { return g.nkey },
			attack: func(ctx context.Context, t *testing.T, rq *Queue, _ *nats.Conn, s *ackScene) {
				defer s.honest()
				for range 2 {
					m, err := rq.cons.Next(jetstream.FetchContext(ctx))
					if err != nil {
						t.Error(err)
						return
					}
					if err := m.DoubleAck(ctx); err != nil {
						t.Error(err)
						return
					}
					s.ackedNow(m.Headers().Get(hdrJob))
				}
			},
			lost: 2,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGuarded(t, "acked", Config{AckWait: time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			jobs := []Job{{ID: "a"}, {ID: "b"}, {ID: "c"}}
			s := &ackScene{holding: make(chan struct{}), acked: make(chan struct{}), ackedAt: map[string]time.Time{}}
			var once sync.Once
			var runs sync.Map
			hq, _ := g.join(t, g.nkey)
			s.honest = func() {
				once.Do(func() {
					runWorker(t, hq, WorkerConfig{ID: "honest"}, func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
						n, _ := runs.LoadOrStore(j.ID, new(atomic.Int32))
						if c := n.(*atomic.Int32).Add(1); c == 1 && tc.holdFirst && j.ID == "a" {
							close(s.holding)
							<-s.acked
							return nil, Retry(errors.New("the repository could not be reached"))
						}
						if at, ok := s.rerun(j.ID); ok {
							t.Logf("%s runs again %v after its acknowledgement with no result", j.ID, time.Since(at).Round(time.Millisecond))
						}
						return []byte("signed " + j.ID), nil
					})
				})
			}
			rq, rnc := g.join(t, tc.rogue(g))
			attacked := make(chan struct{})
			go func() {
				defer close(attacked)
				tc.attack(ctx, t, rq, rnc, s)
			}()
			col := newCollector()
			var logs []string
			var mu sync.Mutex
			sum, err := g.q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done, Verify: signedVerify, Logf: func(f string, a ...any) {
				mu.Lock()
				defer mu.Unlock()
				logs = append(logs, f)
			}})
			<-attacked
			if err != nil {
				t.Fatalf("Coordinate: %v (summary %+v)", err, sum)
			}
			for id, r := range col.exactlyOne(t, jobs) {
				if r.Error != "" || r.Worker != "honest" || string(r.Payload) != "signed "+id {
					t.Errorf("%s: %+v, want the honest worker's result", id, r)
				}
			}
			if sum.Lost != tc.lost || sum.Republished != tc.lost || sum.Failed != 0 || sum.Rejected != 0 {
				t.Errorf("summary %+v, want %d publications lost and published again", sum, tc.lost)
			}
			mu.Lock()
			defer mu.Unlock()
			if n := countPrefix(logs, "queue: publication %d of %s was acknowledged with no result"); n != tc.lost {
				t.Errorf("%d acknowledgements with no result reported, want %d: %q", n, tc.lost, logs)
			}
		})
	}
}

// ackScene is what a rogue and the honest worker of
// TestAckedAwayRepublished share.
type ackScene struct {
	// honest starts the honest worker (once).
	honest func()
	// holding is closed when the honest worker holds job "a"; acked when
	// the rogue has acknowledged it.
	holding, acked chan struct{}
	mu             sync.Mutex
	// ackedAt is when the rogue acknowledged each job it did, until the
	// honest worker runs it again.
	ackedAt map[string]time.Time
}

func (s *ackScene) ackedNow(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ackedAt[id] = time.Now()
}

// rerun reports when job id was acknowledged by the rogue, the first time
// the honest worker runs it after that.
func (s *ackScene) rerun(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.ackedAt[id]
	delete(s.ackedAt, id)
	return at, ok
}

func countPrefix(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if len(l) >= len(prefix) && l[:len(prefix)] == prefix {
			n++
		}
	}
	return n
}

// TestAckedAwayBounded: a client with a worker's permissions that pulls
// every delivery of a job and acknowledges it unrun has the job
// published again MaxRepublish times; then the job fails with no
// provable result, naming what happened, and the coordinator finishes.
func TestAckedAwayBounded(t *testing.T) {
	for _, tc := range []struct {
		name         string
		maxRepublish int
		republished  int
	}{
		{"default", 0, DefaultMaxRepublish},
		{"one", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := startGuarded(t, "bounded", Config{AckWait: time.Second})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rq, _ := g.join(t, g.token)
			rctx, stopRogue := context.WithCancel(ctx)
			var pulls []time.Time
			rogueDone := make(chan struct{})
			go func() {
				defer close(rogueDone)
				for rctx.Err() == nil {
					m, err := rq.cons.Next(jetstream.FetchContext(rctx))
					if err != nil {
						continue
					}
					pulls = append(pulls, time.Now())
					if err := m.DoubleAck(rctx); err != nil && rctx.Err() == nil {
						t.Errorf("ack: %v", err)
					}
				}
			}()
			col := newCollector()
			jobs := []Job{{ID: "x"}}
			start := time.Now()
			sum, err := g.q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done, Verify: signedVerify, MaxRepublish: tc.maxRepublish})
			failedAfter := time.Since(start)
			stopRogue()
			<-rogueDone
			if err != nil {
				t.Fatalf("Coordinate: %v (summary %+v)", err, sum)
			}
			n := tc.republished + 1
			r := col.exactlyOne(t, jobs)["x"]
			want := "no provable result after " + strconv.Itoa(n) + " publications of the run: " + strconv.Itoa(n) + " acknowledged with no result (taken off the queue by a client that sent none)"
			if r.Seq != 0 || r.Error != want {
				t.Errorf("result %+v, want the coordinator's failure %q", r, want)
			}
			if sum.Republished != tc.republished || sum.Lost != n || sum.Unprovable != 1 || sum.Failed != 1 || sum.Rejected != 0 {
				t.Errorf("summary %+v", sum)
			}
			if len(pulls) != n {
				t.Errorf("the rogue took %d deliveries, want one per publication (%d)", len(pulls), n)
			}
			for i := 1; i < len(pulls); i++ {
				t.Logf("publication %d taken %v after publication %d was acknowledged", i+1, pulls[i].Sub(pulls[i-1]).Round(time.Millisecond), i)
			}
			t.Logf("failed %v after the start", failedAfter.Round(time.Millisecond))
		})
	}
}

// TestNoProvableResult: the failure of a job without a provable result
// names the results refused by source and the publications acknowledged
// with no result.
func TestNoProvableResult(t *testing.T) {
	for _, tc := range []struct {
		publications int
		refused      map[string]int
		acked        int
		want         string
	}{
		{4, map[string]int{Anonymous: 4}, 0, "no provable result after 4 publications of the run: 4 results refused (by source: (anonymous) 4)"},
		{2, map[string]int{"k2": 1, Anonymous: 2}, 0, "no provable result after 2 publications of the run: 3 results refused (by source: (anonymous) 2, k2 1)"},
		{4, nil, 4, "no provable result after 4 publications of the run: 4 acknowledged with no result (taken off the queue by a client that sent none)"},
		{3, map[string]int{Anonymous: 1}, 2, "no provable result after 3 publications of the run: 1 results refused (by source: (anonymous) 1); 2 acknowledged with no result (taken off the queue by a client that sent none)"},
	} {
		if got := noProvableResult(tc.publications, tc.refused, tc.acked); got != tc.want {
			t.Errorf("noProvableResult(%d, %v, %d) = %q, want %q", tc.publications, tc.refused, tc.acked, got, tc.want)
		}
	}
}

// TestLateResultsRepublishNothing: honest workers acknowledge each job
// once its result is stored, long before a slow coordinator reads that
// result; the jobs gone from the queue meanwhile are not taken for jobs
// acknowledged with no result, and none is published again.
func TestLateResultsRepublishNothing(t *testing.T) {
	_, q := startLoopback(t, "late", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runWorker(t, q, WorkerConfig{ID: "honest", Parallel: 4}, func(_ context.Context, j Job, _ func(string)) ([]byte, error) {
		return []byte("signed " + j.ID), nil
	})
	jobs := testJobs(150, testPayload{})
	col := newCollector()
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Done: col.done, Verify: signedVerify, Accept: func(ctx context.Context, r Result) error {
		time.Sleep(15 * time.Millisecond) // a slow disk: the results pile up behind the acknowledgements
		return col.accept(ctx, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	col.exactlyOne(t, jobs)
	if sum.Lost != 0 || sum.Republished != 0 || sum.Duplicates != 0 {
		t.Errorf("summary %+v, want nothing published again", sum)
	}
}
