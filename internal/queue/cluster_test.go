package queue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startCluster starts a three-node JetStream cluster in this process, on
// loopback, and returns its servers.
func startCluster(t *testing.T) []*server.Server {
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
			t.Fatal("a cluster node did not start")
		}
	}
	return nodes
}

// TestClusterNodeLost: on a three-node cluster with three replicas, the
// work goes on when a node is shut down halfway, and every job still has
// exactly one result.
func TestClusterNodeLost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := startCluster(t)
	var urls []string
	for _, ns := range nodes {
		urls = append(urls, ns.ClientURL())
	}
	ctx := context.Background()
	nc, err := Connect(ctx, strings.Join(urls, ","), ConnectOptions{Name: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	var q *Queue
	// The cluster elects its JetStream meta leader after it has formed.
	eventually(t, "the queue declared with three replicas", func() bool {
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		q, err = Open(octx, nc, "cluster", Config{AckWait: time.Second, Replicas: 3})
		return err == nil
	})
	wnc, err := Connect(ctx, strings.Join(urls, ","), ConnectOptions{Name: "worker"})
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
	go func() {
		_, err := q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done})
		res <- err
	}()
	eventually(t, "a quarter of the results", func() bool {
		col.mu.Lock()
		defer col.mu.Unlock()
		return len(col.results) >= 5
	})
	// Lose the node the worker is connected to.
	lost := wnc.ConnectedServerName()
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
	t.Logf("shut down %s", lost)
	if err := <-res; err != nil {
		t.Fatal(err)
	}
	col.exactlyOne(t, jobs)
}
