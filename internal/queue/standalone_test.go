package queue

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
)

// fleetConf is the configuration docs/bench.md gives a standalone
// deployment: the code block that starts "# fleet.conf".
func fleetConf(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "bench.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	at := strings.Index(text, "```\n# fleet.conf")
	if at < 0 {
		t.Fatal("docs/bench.md has no code block that starts with # fleet.conf")
	}
	block := text[at+len("```\n"):]
	end := strings.Index(block, "\n```")
	if end < 0 {
		t.Fatal("docs/bench.md: the fleet.conf block does not end")
	}
	return block[:end+1]
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// userKey makes a user NKey and writes its seed to a file.
func userKey(t *testing.T, dir, name string) (pub, seedFile string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ = kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile = filepath.Join(dir, name+".nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return pub, seedFile
}

// TestStandaloneFleetConf: a nats-server run from docs/bench.md's
// fleet.conf, as the doc has it (with the queue's name and real keys put
// in for its placeholders), admits the coordinator with every right —
// it declares the queue and publishes jobs — and the workers with a
// worker's: they run jobs, read and add artifacts and read the status
// entries, and are refused everything else.
func TestStandaloneFleetConf(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	name := NameFor(dir)
	coordPub, coordSeed := userKey(t, dir, "coordinator")
	w1Pub, w1Seed := userKey(t, dir, "worker1")
	w2Pub, w2Seed := userKey(t, dir, "worker2")
	conf := fleetConf(t)
	for _, r := range []struct{ placeholder, value string }{
		{"UCOORDINATOR…", coordPub},
		{"UWORKER1…", w1Pub},
		{"UWORKER2…", w2Pub},
		// NAME where it stands for the queue's name, as the doc says:
		// not in $JS.API.STREAM.NAMES.
		{"truss.NAME.", "truss." + name + "."},
		{"TRUSS_NAME_", "TRUSS_" + name + "_"},
	} {
		if !strings.Contains(conf, r.placeholder) {
			t.Fatalf("the fleet.conf of docs/bench.md has no %s", r.placeholder)
		}
		conf = strings.ReplaceAll(conf, r.placeholder, r.value)
	}
	if err := os.WriteFile(filepath.Join(dir, "fleet.conf"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	node := "listen: 127.0.0.1:-1\nserver_name: n1\njetstream { store_dir: " + `"` + filepath.Join(dir, "js") + `"` + " }\ninclude ./fleet.conf\n"
	nodeFile := filepath.Join(dir, "node.conf")
	if err := os.WriteFile(nodeFile, []byte(node), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(nodeFile)
	if err != nil {
		t.Fatalf("nats-server refuses docs/bench.md's fleet.conf: %v\n%s", err, conf)
	}
	// The doc's list is the one the embedded server gives its workers.
	want := WorkerPermissions(name)
	for _, k := range []string{w1Pub, w2Pub} {
		var got *server.Permissions
		for _, u := range opts.Nkeys {
			if u.Nkey == k {
				got = u.Permissions
			}
		}
		if got == nil || got.Publish == nil || got.Subscribe == nil {
			t.Fatalf("worker %s: permissions %+v", k, got)
		}
		if a, b := sorted(got.Publish.Allow), sorted(want.Publish.Allow); !slices.Equal(a, b) {
			t.Errorf("docs/bench.md lets a worker publish on\n%q\nqueue.WorkerPermissions on\n%q", a, b)
		}
		if a, b := sorted(got.Subscribe.Allow), sorted(want.Subscribe.Allow); !slices.Equal(a, b) {
			t.Errorf("docs/bench.md lets a worker subscribe to %q, queue.WorkerPermissions to %q", a, b)
		}
	}
	opts.NoSigs, opts.NoLog = true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("the server did not start")
	}
	url := ns.ClientURL()

	if nc, err := Connect(ctx, url, ConnectOptions{}); err == nil {
		nc.Close()
		t.Fatal("a client without a key connected")
	}
	cnc, err := Connect(ctx, url, ConnectOptions{CredsFile: coordSeed, Name: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	defer cnc.Close()
	q, err := Open(ctx, cnc, name, Config{AckWait: time.Second})
	if err != nil {
		t.Fatalf("the coordinator declares the queue: %v", err)
	}
	if _, err := q.PutArtifact(ctx, "repo/x", strings.NewReader("bundle")); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct{ id, seed string }{{"worker1", w1Seed}, {"worker2", w2Seed}} {
		t.Run(w.id, func(t *testing.T) { checkWorker(ctx, t, q, url, ConnectOptions{CredsFile: w.seed}, w.id) })
	}
	// The coordinator's own work beyond publishing and reading results:
	// removing a job's messages, reading where the streams are, deleting
	// the queue.
	if _, err := q.Publish(ctx, Job{ID: "gone"}); err != nil {
		t.Fatal(err)
	}
	if err := q.purgeJob(ctx, "gone"); err != nil {
		t.Errorf("the coordinator removes a job: %v", err)
	}
	if _, err := q.CheckPlacement(ctx); err != nil {
		t.Errorf("the coordinator reads the placement: %v", err)
	}
	if err := q.Delete(ctx); err != nil {
		t.Errorf("the coordinator deletes the queue: %v", err)
	}
}
