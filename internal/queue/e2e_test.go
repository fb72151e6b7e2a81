package queue

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// startLoopback starts an embedded server on loopback with its store in a
// temporary directory and returns it with an in-process connection's queue.
func startLoopback(t *testing.T, name string, cfg Config) (*Server, *Queue) {
	t.Helper()
	return startServerQueue(t, ServerConfig{Dir: t.TempDir()}, name, cfg)
}

// startServerQueue starts the embedded server sc configures and returns
// it with an in-process connection's queue.
func startServerQueue(t *testing.T, sc ServerConfig, name string, cfg Config) (*Server, *Queue) {
	t.Helper()
	srv, err := StartServer(context.Background(), sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect("test coordinator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	q, err := Open(context.Background(), nc, name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return srv, q
}

// collector is an Accept callback that counts results per job.
type collector struct {
	mu      sync.Mutex
	results map[string][]Result
}

func newCollector() *collector { return &collector{results: map[string][]Result{}} }

func (c *collector) accept(_ context.Context, r Result) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results[r.JobID] = append(c.results[r.JobID], r)
	return nil
}

func (c *collector) done(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.results[id]) > 0
}

// exactlyOne checks that every job has exactly one result and returns them.
func (c *collector) exactlyOne(t *testing.T, jobs []Job) map[string]Result {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]Result{}
	for _, j := range jobs {
		rs := c.results[j.ID]
		if len(rs) != 1 {
			t.Errorf("job %s: %d results, want exactly 1", j.ID, len(rs))
			continue
		}
		out[j.ID] = rs[0]
	}
	if len(c.results) != len(jobs) {
		t.Errorf("results for %d job ids, want %d", len(c.results), len(jobs))
	}
	return out
}

func workerEnv(url, name, id string, parallel int) []string {
	return []string{
		"TRUSS_QUEUE_URL=" + url, "TRUSS_QUEUE_NAME=" + name,
		"TRUSS_QUEUE_WORKER=" + id, "TRUSS_QUEUE_PARALLEL=" + strconv.Itoa(parallel),
	}
}

// TestWorkerKilledMidJob: three worker processes, 30 jobs, the worker
// running the long job is SIGKILLed mid-job; every job gets exactly one
// result and the long job is completed by another worker.
func TestWorkerKilledMidJob(t *testing.T) {
	srv, q := startLoopback(t, "killed", Config{AckWait: time.Second, MaxDeliver: 3})
	ctx := context.Background()
	jobs := make([]Job, 30)
	for i := range jobs {
		ms := 100
		if i == 5 {
			ms = 2500 // long enough to be caught mid-job
		}
		jobs[i] = Job{ID: fmt.Sprintf("inst-%02d/arm/1", i), Payload: payload(testPayload{MS: ms})}
	}
	long := jobs[5].ID

	workers := map[string]*helper{}
	for i := 1; i <= 3; i++ {
		id := "w" + strconv.Itoa(i)
		workers[id] = startHelper(t, "worker", workerEnv(srv.URL(), "killed", id, 2)...)
	}
	col := newCollector()
	type outcome struct {
		sum Summary
		err error
	}
	res := make(chan outcome, 1)
	go func() {
		sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
		res <- outcome{sum, err}
	}()

	var victim string
	eventually(t, "the long job running", func() bool {
		st, err := q.getStatus(ctx, long)
		if err != nil || st.State != Running {
			return false
		}
		victim = st.Worker
		return true
	})
	workers[victim].kill()
	t.Logf("killed %s running %s", victim, long)

	o := <-res
	if o.err != nil {
		t.Fatal(o.err)
	}
	got := col.exactlyOne(t, jobs)
	r := got[long]
	if r.Worker == victim || r.Deliveries < 2 {
		t.Errorf("long job's result: worker %s, delivery %d; want another worker than %s, delivery ≥ 2", r.Worker, r.Deliveries, victim)
	}
	for id, r := range got {
		if r.Error != "" || string(r.Payload) != "ok "+id || r.Worker == "" || r.Deliveries < 1 {
			t.Errorf("result of %s: %+v", id, r)
		}
	}
	if o.sum.Accepted != 30 || o.sum.Failed != 0 {
		t.Errorf("summary %+v", o.sum)
	}
	for id, w := range workers {
		if id == victim {
			continue
		}
		if err := w.wait(); err != nil {
			t.Errorf("worker %s: %v\n%s", id, err, w.out.String())
		}
	}
	st, err := q.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := Counts(st); c[Done] != 30 || len(st) != 30 {
		t.Errorf("status counts %v of %d entries, want 30 done", c, len(st))
	}
	t.Logf("summary %+v", o.sum)
}

// TestCoordinatorRestarted: the coordinator, with the embedded server in
// its process, is SIGKILLed halfway and started again on the same store;
// the three workers reconnect, and every job has exactly one line in the
// results file.
func TestCoordinatorRestarted(t *testing.T) {
	dir := t.TempDir()
	listen := "127.0.0.1:" + strconv.Itoa(freePort(t))
	results := filepath.Join(dir, "results.txt")
	env := []string{
		"TRUSS_QUEUE_DIR=" + dir, "TRUSS_QUEUE_LISTEN=" + listen, "TRUSS_QUEUE_NAME=restart",
		"TRUSS_QUEUE_RESULTS=" + results, "TRUSS_QUEUE_JOBS=30", "TRUSS_QUEUE_MS=150",
	}
	coord := startHelper(t, "coordinator", env...)
	eventually(t, "the coordinator ready", func() bool { return strings.Contains(coord.out.String(), "coordinator ready") })
	var workers []*helper
	for i := 1; i <= 3; i++ {
		workers = append(workers, startHelper(t, "worker", workerEnv("nats://"+listen, "restart", "w"+strconv.Itoa(i), 1)...))
	}
	eventually(t, "a third of the results", func() bool {
		lines, _ := readLines(results)
		return len(lines) >= 10
	})
	coord.kill()
	before, _ := readLines(results)
	t.Logf("coordinator killed after %d results", len(before))
	if len(before) >= 30 {
		t.Fatal("the coordinator finished before it could be killed")
	}

	coord2 := startHelper(t, "coordinator", env...)
	if err := coord2.wait(); err != nil {
		t.Fatalf("restarted coordinator: %v\n%s", err, coord2.out.String())
	}
	t.Log(strings.TrimSpace(coord2.out.String()))
	lines, err := readLines(results)
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || !strings.HasPrefix(f[1], "w") {
			t.Errorf("bad line %q", l)
			continue
		}
		count[f[0]]++
	}
	for i := range 30 {
		id := fmt.Sprintf("job-%02d", i)
		if count[id] != 1 {
			t.Errorf("%s: %d results, want 1", id, count[id])
		}
	}
	if len(count) != 30 || len(lines) != 30 {
		t.Errorf("%d lines for %d ids, want 30 and 30", len(lines), len(count))
	}
	for i, w := range workers {
		if err := w.wait(); err != nil {
			t.Errorf("worker %d: %v\n%s", i+1, err, w.out.String())
		}
		if testing.Verbose() {
			t.Logf("worker %d:\n%s", i+1, w.out.String())
		}
	}
}

// TestPoisonJobCrashesWorkers: a job that kills every worker process it
// reaches is given up after MaxDeliver deliveries, with an error result,
// and the other jobs finish on the surviving worker.
func TestPoisonJobCrashesWorkers(t *testing.T) {
	srv, q := startLoopback(t, "poison", Config{AckWait: time.Second, MaxDeliver: 2})
	jobs := []Job{{ID: "poison", Payload: payload(testPayload{Crash: true})}}
	for i := range 8 {
		jobs = append(jobs, Job{ID: "ok-" + strconv.Itoa(i), Payload: payload(testPayload{MS: 50})})
	}
	var ws []*helper
	for i := 1; i <= 3; i++ {
		ws = append(ws, startHelper(t, "worker", workerEnv(srv.URL(), "poison", "w"+strconv.Itoa(i), 1)...))
	}
	col := newCollector()
	sum, err := q.Coordinate(context.Background(), jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	p := got["poison"]
	if !p.GaveUp || p.Seq != 0 || !strings.Contains(p.Error, "given up after 2 deliveries") {
		t.Errorf("poison result %+v", p)
	}
	if sum.Failed != 1 || sum.Accepted != 9 {
		t.Errorf("summary %+v", sum)
	}
	crashed := 0
	for _, w := range ws {
		if err := w.wait(); err != nil {
			crashed++
		}
	}
	if crashed != 2 {
		t.Errorf("%d workers crashed, want 2 (one per delivery that ran)", crashed)
	}
	st, _ := q.getStatus(context.Background(), "poison")
	if st.State != Failed || !strings.Contains(st.Error, "given up") {
		t.Errorf("poison status %+v", st)
	}
}
