package queue

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func instant(context.Context, Job, func(string)) ([]byte, error) { return []byte("ok"), nil }

// BenchmarkDispatch measures the queue's own cost per job on loopback,
// with the embedded server's file store and a handler that returns at
// once.
//
// "latency": one job per Coordinate call, run to its accepted result:
// the status and job publications, the worker's pull, its status write,
// the result's publication and the ack, the coordinator's read,
// acceptance and status write, plus Coordinate's own start (reading the
// queue's state, starting the results consumer). The results stream is
// purged between iterations, outside the timing, so each call starts
// from the same state.
//
// "throughput/parallel=N": b.N jobs through one Coordinate call and one
// worker with N slots; jobs/s is the rate.
func BenchmarkDispatch(b *testing.B) {
	ctx := context.Background()
	b.Run("latency", func(b *testing.B) {
		srv, q := startLoopbackB(b, "lat")
		runWorkerB(b, srv, q, WorkerConfig{Parallel: 1}, instant)
		res, err := q.js.Stream(ctx, q.streamRes)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			col := newCollector()
			jobs := []Job{{ID: fmt.Sprintf("run-%d", i)}}
			if _, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := res.Purge(ctx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/job")
	})
	for _, par := range []int{1, 4} {
		b.Run(fmt.Sprintf("throughput/parallel=%d", par), func(b *testing.B) {
			srv, q := startLoopbackB(b, "tp")
			runWorkerB(b, srv, q, WorkerConfig{Parallel: par}, instant)
			jobs := make([]Job, b.N)
			for i := range jobs {
				jobs[i] = Job{ID: fmt.Sprintf("instance-%d/arm/1", i), Payload: []byte(`{"instance":"x","arm":"typed"}`)}
			}
			col := newCollector()
			b.ResetTimer()
			start := time.Now()
			sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept})
			if err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			if sum.Accepted != b.N {
				b.Fatalf("summary %+v", sum)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
			b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/job")
		})
	}
}

func startLoopbackB(b *testing.B, name string) (*Server, *Queue) {
	b.Helper()
	srv, err := StartServer(context.Background(), ServerConfig{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, name, Config{})
	if err != nil {
		b.Fatal(err)
	}
	return srv, q
}

func runWorkerB(b *testing.B, srv *Server, q *Queue, cfg WorkerConfig, h Handler) {
	b.Helper()
	// The worker has its own connection, as a worker elsewhere would.
	nc, err := Connect(context.Background(), srv.URL(), ConnectOptions{Name: "bench worker"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	wq, err := Join(context.Background(), nc, q.Name())
	if err != nil {
		b.Fatal(err)
	}
	w, err := wq.NewWorker(cfg, h)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		_ = w.Run(ctx)
		close(done)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
	})
}

// BenchmarkWatch measures one recheck of the runs without an accepted
// result (watch.check): a reading of the jobs stream with the sequences
// deleted in it, and the lookup of each watched run's message. N runs
// are watched, each still queued, between N messages removed (the worst
// case of the deleted sequences the reading carries: every other
// message acknowledged out of order).
func BenchmarkWatch(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("runs=%d", n), func(b *testing.B) {
			_, q := startLoopbackB(b, "watch")
			jobs := make([]Job, 2*n)
			for i := range jobs {
				jobs[i] = Job{ID: fmt.Sprintf("instance-%d/arm/1", i)}
			}
			seqs, _, err := q.publish(ctx, jobs, func(j Job) string { return j.ID })
			if err != nil {
				b.Fatal(err)
			}
			w := newWatch(q)
			for i, j := range jobs {
				if i%2 == 0 {
					w.set(j.ID, seqs[i])
				} else if err := q.jobs.DeleteMsg(ctx, seqs[i]); err != nil {
					b.Fatal(err)
				}
			}
			open := func(string) bool { return true }
			for b.Loop() {
				lost, err := w.check(ctx, open, 0)
				if err != nil || len(lost) != 0 || len(w.missing) != 0 {
					b.Fatalf("check: %v, %v, %d missing", lost, err, len(w.missing))
				}
			}
		})
	}
}
