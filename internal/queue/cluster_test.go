//go:build heavy

// The cluster tests start three servers each and take 10–25 s: the heavy
// tier (go test -tags heavy).

package queue

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterURL is every node's client URL, as a client is given them.
func clusterURL(nodes []*server.Server) string {
	var urls []string
	for _, ns := range nodes {
		urls = append(urls, ns.ClientURL())
	}
	return strings.Join(urls, ",")
}

// startCluster starts a three-node JetStream cluster in this process, on
// loopback, and returns its servers.
func startCluster(t *testing.T) []*server.Server {
	t.Helper()
	// The cluster ports are picked free and then bound by the nodes: a
	// test running beside this one may take one in between, and that
	// node never becomes ready. Another set of ports is tried then.
	for range 3 {
		if nodes := tryCluster(t); nodes != nil {
			return nodes
		}
	}
	t.Fatal("a cluster node did not start (three sets of ports)")
	return nil
}

// tryCluster starts the three nodes on free ports; nil, with the nodes
// shut down, when one of them does not become ready.
func tryCluster(t *testing.T) []*server.Server {
	t.Helper()
	ports := []int{freePort(t), freePort(t), freePort(t)}
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var nodes []*server.Server
	for i, p := range ports {
		opts := &server.Options{
			ServerName: fmt.Sprintf("n%d", i+1),
			Host:       "127.0.0.1",
			Port:       server.RANDOM_PORT,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoLog:      true,
			NoSigs:     true,
			Cluster:    server.ClusterOpts{Name: "truss", Host: "127.0.0.1", Port: p},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
		ns, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(ns.Shutdown)
		nodes = append(nodes, ns)
	}
	for _, ns := range nodes {
		if !ns.ReadyForConnections(30 * time.Second) {
			for _, n := range nodes {
				n.Shutdown()
			}
			return nil
		}
	}
	return nodes
}

// TestClusterNodeLost: on a three-node cluster, a queue declared with the
// default settings has three replicas of everything, checked; the node
// that leads the jobs stream is shut down for good halfway, and the work
// goes on: every job has exactly one result.
func TestClusterNodeLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := startCluster(t)
	url := clusterURL(nodes)
	ctx := context.Background()
	nc, err := Connect(ctx, url, ConnectOptions{Name: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// The cluster elects its JetStream meta leader after it has formed:
	// until then JetStream answers that it is unavailable, or not at all,
	// and Open retries.
	q, err := Open(ctx, nc, "cluster", Config{AckWait: time.Second})
	if err != nil {
		t.Fatalf("Open on a cluster just started: %v", err)
	}
	if q.Config().Replicas != 3 {
		t.Fatalf("declared with %d replicas on a three-node cluster, want 3 by default", q.Config().Replicas)
	}
	pl, err := q.CheckPlacement(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl) != 7 {
		t.Errorf("placement of %d streams and consumers, want 7: %+v", len(pl), pl)
	}
	for _, p := range pl {
		if len(p.Peers) != 3 {
			t.Errorf("%s on %v, want three servers", p.Name, p.Peers)
		}
	}
	wnc, err := Connect(ctx, url, ConnectOptions{Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	wq, err := Join(ctx, wnc, "cluster")
	if err != nil {
		t.Fatal(err)
	}
	if wq.Config().Replicas != 3 {
		t.Errorf("joined with %d replicas", wq.Config().Replicas)
	}
	runWorker(t, wq, WorkerConfig{Parallel: 2}, testHandler)

	jobs := testJobs(20, testPayload{MS: 100})
	col := newCollector()
	res := make(chan error, 1)
	var times []time.Time // of the results, under col.mu
	var sum Summary
	go func() {
		var err error
		sum, err = q.Coordinate(ctx, jobs, CoordinatorConfig{Done: col.done, Accept: func(ctx context.Context, r Result) error {
			col.mu.Lock()
			times = append(times, time.Now())
			col.mu.Unlock()
			return col.accept(ctx, r)
		}})
		res <- err
	}()
	eventually(t, "a quarter of the results", func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return len(col.results) >= 5
	})
	// Lose, for good, the node that leads the jobs stream.
	info, err := q.jobs.Info(ctx)
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
		t.Fatalf("the jobs stream's leader: %+v, %v", info, err)
	}
	lost := info.Cluster.Leader
	killed := time.Now()
	shut := false
	for _, ns := range nodes {
		if ns.Name() == lost {
			ns.Shutdown()
			shut = true
		}
	}
	if !shut {
		t.Fatalf("no node named %q", lost)
	}
	t.Logf("shut down %s, the jobs stream's leader", lost)
	select {
	case err := <-res:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		col.mu.Lock()
		t.Fatalf("%d of %d results two minutes after the node was lost", len(col.results), len(jobs))
	}
	col.exactlyOne(t, jobs)
	// Every job left the queue with its result stored first: none was
	// taken for a job acknowledged with no result.
	if sum.Lost != 0 || sum.Republished != 0 {
		t.Errorf("summary %+v, want nothing published again", sum)
	}
	// How long the work stalled: the longest wait for a result after the
	// loss (reported, not asserted: docs/bench.md's fault table).
	col.mu.Lock()
	var stall time.Duration
	last, after := killed, 0
	for _, at := range times {
		if at.After(killed) {
			stall = max(stall, at.Sub(last))
			last = at
			after++
		}
	}
	col.mu.Unlock()
	t.Logf("%d results after the loss, the longest wait for one %v, all in %v", after, stall.Round(time.Millisecond), last.Sub(killed).Round(time.Millisecond))
}

// TestClusterGiveUp: on a cluster, the server's advisory of a job
// delivered MaxDeliver times reaches the coordinator through the queue's
// replicated advisories stream, whichever node leads the consumer.
func TestClusterGiveUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := startCluster(t)
	url := clusterURL(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := Connect(ctx, url, ConnectOptions{Name: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q, err := Open(ctx, nc, "giveup", Config{AckWait: time.Second, MaxDeliver: 2})
	if err != nil {
		t.Fatal(err)
	}
	runWorker(t, q, WorkerConfig{}, testHandler)
	col := newCollector()
	jobs := []Job{{ID: "poison", Payload: payload(testPayload{Panic: true})}, {ID: "fine", Payload: payload(testPayload{})}}
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
	if err != nil {
		t.Fatal(err)
	}
	got := col.exactlyOne(t, jobs)
	if p := got["poison"]; !p.GaveUp || !strings.Contains(p.Error, "given up after 2 deliveries") {
		t.Errorf("poison result %+v", p)
	}
	if sum.GaveUp != 1 || sum.Failed != 1 {
		t.Errorf("summary %+v", sum)
	}
}

// TestClusterAckedAway: on a cluster, jobs a client pulls and
// acknowledges unrun (a worker's right) are published again once the
// replicated streams show them gone with no result; every job gets
// exactly one result.
func TestClusterAckedAway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := startCluster(t)
	url := clusterURL(nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, err := Connect(ctx, url, ConnectOptions{Name: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	q, err := Open(ctx, nc, "ackedaway", Config{AckWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rnc, err := Connect(ctx, url, ConnectOptions{Name: "rogue"})
	if err != nil {
		t.Fatal(err)
	}
	defer rnc.Close()
	rq, err := Join(ctx, rnc, "ackedaway")
	if err != nil {
		t.Fatal(err)
	}
	jobs := testJobs(6, testPayload{MS: 20})
	rogue := make(chan error, 1)
	var mu sync.Mutex
	ackedAt := map[string]time.Time{}
	go func() {
		for range 2 {
			m, err := rq.cons.Next(jetstream.FetchContext(ctx))
			if err == nil {
				err = m.DoubleAck(ctx)
			}
			if err != nil {
				rogue <- err
				return
			}
			mu.Lock()
			ackedAt[m.Headers().Get(hdrJob)] = time.Now()
			mu.Unlock()
		}
		runWorker(t, q, WorkerConfig{Parallel: 2}, testHandler)
		rogue <- nil
	}()
	col := newCollector()
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Done: col.done, Accept: func(ctx context.Context, r Result) error {
		mu.Lock()
		if at, ok := ackedAt[r.JobID]; ok {
			t.Logf("%s: result accepted %v after its acknowledgement with no result", r.JobID, time.Since(at).Round(time.Millisecond))
		}
		mu.Unlock()
		return col.accept(ctx, r)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-rogue; err != nil {
		t.Fatal(err)
	}
	for id, r := range col.exactlyOne(t, jobs) {
		if r.Error != "" || string(r.Payload) != "ok "+id {
			t.Errorf("%s: %+v", id, r)
		}
	}
	if sum.Lost != 2 || sum.Republished != 2 {
		t.Errorf("summary %+v, want two jobs acknowledged with no result, published again", sum)
	}
}
