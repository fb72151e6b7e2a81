package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// violations records the permission violations the server reports to a
// connection.
type violations struct {
	mu   sync.Mutex
	errs []string
}

func watchViolations(nc *nats.Conn) *violations {
	v := &violations{}
	nc.SetErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.errs = append(v.errs, err.Error())
	})
	return v
}

func (v *violations) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, e := range v.errs {
		if strings.Contains(e, "Permissions Violation") {
			n++
		}
	}
	return n
}

// workerCreds runs f for a worker presenting the shared token and for one
// presenting an NKey.
func workerCreds(t *testing.T, g guarded, f func(t *testing.T, wq *Queue, nc *nats.Conn)) {
	for _, c := range []struct {
		name string
		o    ConnectOptions
	}{{"token", g.token}, {"nkey", g.nkey}} {
		t.Run(c.name, func(t *testing.T) {
			wq, nc := g.join(t, c.o)
			f(t, wq, nc)
		})
	}
}

// TestWorkerCannotWriteArtifacts: a client with a worker's rights cannot
// replace, remove or roll up the coordinator's artifacts (repository
// bundles): it reads them only.
func TestWorkerCannotWriteArtifacts(t *testing.T) {
	g := startGuarded(t, "art", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	orig, err := g.q.PutArtifact(ctx, "repo/x", strings.NewReader("genuine bundle"))
	if err != nil {
		t.Fatal(err)
	}
	workerCreds(t, g, func(t *testing.T, wq *Queue, nc *nats.Conn) {
		v := watchViolations(nc)
		var b bytes.Buffer
		if _, err := wq.GetArtifact(ctx, "repo/x", &b); err != nil || b.String() != "genuine bundle" {
			t.Fatalf("the worker reads the bundle: %q, %v", b.String(), err)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := wq.PutArtifact(pctx, "repo/x", strings.NewReader("ATTACKER bundle"))
		pcancel()
		if err == nil {
			t.Error("a worker replaced the bundle")
		}
		// A rollup of every subject of the store, and a deletion.
		m := &nats.Msg{Subject: "$O." + g.q.objects + ".C.wipe", Header: nats.Header{}, Data: []byte("x")}
		m.Header.Set("Nats-Rollup", "all")
		if err := nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		if err := nc.Publish("$JS.API.STREAM.PURGE.OBJ_"+g.q.objects, nil); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the violations reported", func() bool { _ = nc.Flush(); return v.count() >= 3 })
		got, err := g.q.StatArtifact(ctx, "repo/x")
		if err != nil || got.Digest != orig.Digest {
			t.Errorf("the bundle after the worker's attempts: %+v, %v (was %s)", got, err, orig.Digest)
		}
	})
}

// TestWorkerMakesNoConsumer: a client with a worker's rights cannot make a
// consumer of any stream. A push consumer delivers where its creator
// asks, which no permission checks: one on the status bucket delivering
// onto the jobs subject turned a status entry into a job.
func TestWorkerMakesNoConsumer(t *testing.T) {
	g := startGuarded(t, "cons", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := g.q.PutArtifact(ctx, "repo/x", strings.NewReader("bundle")); err != nil {
		t.Fatal(err)
	}
	workerCreds(t, g, func(t *testing.T, wq *Queue, nc *nats.Conn) {
		v := watchViolations(nc)
		for _, stream := range []string{"KV_" + g.q.bucketStatus, "OBJ_" + g.q.objects, g.q.streamUploads, g.q.streamRes, g.q.streamEvents} {
			filter := ">"
			if strings.HasPrefix(stream, "KV_") {
				filter = "$KV." + g.q.bucketStatus + ".evil"
			}
			b, _ := json.Marshal(map[string]any{"stream_name": stream, "config": map[string]any{
				"name": "evil", "durable_name": "evil", "deliver_subject": g.q.jobSubject("evil"),
				"filter_subject": filter, "deliver_policy": "all", "ack_policy": "none",
			}})
			for _, subj := range []string{"$JS.API.CONSUMER.CREATE." + stream, "$JS.API.CONSUMER.CREATE." + stream + ".evil." + filter, "$JS.API.CONSUMER.DURABLE.CREATE." + stream + ".evil"} {
				if err := nc.PublishRequest(subj, nc.NewInbox(), b); err != nil {
					t.Fatal(err)
				}
			}
		}
		// The status entry that would have become a job.
		m := &nats.Msg{Subject: "$KV." + g.q.bucketStatus + ".evil", Header: nats.Header{}, Data: []byte(`{"forged":true}`)}
		m.Header.Set(hdrJob, "victim")
		if _, err := nc.RequestMsgWithContext(ctx, m); err != nil {
			t.Fatal(err)
		}
		if v.count() < 15 {
			eventually(t, "fifteen violations", func() bool { _ = nc.Flush(); return v.count() >= 15 })
		}
		if pending, err := g.q.Pending(ctx); err != nil || len(pending) != 0 {
			t.Errorf("jobs in the queue: %v, %v", pending, err)
		}
		for _, stream := range []string{"KV_" + g.q.bucketStatus, "OBJ_" + g.q.objects} {
			if _, err := g.q.js.Consumer(ctx, stream, "evil"); err == nil {
				t.Errorf("a worker made a consumer of %s", stream)
			}
		}
		// What the worker needs still works without a consumer.
		var b bytes.Buffer
		if _, err := wq.GetArtifact(ctx, "repo/x", &b); err != nil || b.String() != "bundle" {
			t.Errorf("the worker reads the bundle: %q, %v", b.String(), err)
		}
		if _, err := wq.Status(ctx); err != nil {
			t.Errorf("the worker reads the statuses: %v", err)
		}
	})
}

// TestRollupRefused: a rollup published with a worker's rights on the
// subjects a worker may publish on, the results and the uploads, removes
// nothing: both streams refuse it.
func TestRollupRefused(t *testing.T) {
	g := startGuarded(t, "roll", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wq, nc := g.join(t, g.token)
	honest, err := wq.PutUpload(ctx, "honest", []byte("ledger"))
	if err != nil {
		t.Fatal(err)
	}
	forge(t, g.q, "a", map[string]string{hdrWorker: "w", hdrDeliveries: "1"}, "a result")
	for _, subj := range []string{g.q.subjResults, g.q.uploadSubject("honest"), g.q.uploadSubject("other")} {
		for _, roll := range []string{"all", "sub"} {
			m := &nats.Msg{Subject: subj, Header: nats.Header{}, Data: []byte("x")}
			m.Header.Set("Nats-Rollup", roll)
			r, err := nc.RequestMsgWithContext(ctx, m)
			if err != nil {
				t.Fatalf("%s: %v", subj, err)
			}
			if !bytes.Contains(r.Data, []byte("rollup")) || !bytes.Contains(r.Data, []byte("error")) {
				t.Errorf("a rollup (%s) on %s: %s", roll, subj, r.Data)
			}
		}
	}
	rs, err := g.q.js.Stream(ctx, g.q.streamRes)
	if err != nil {
		t.Fatal(err)
	}
	if n := rs.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("results stream holds %d messages, want the 1 published", n)
	}
	var b bytes.Buffer
	if err := g.q.GetUpload(ctx, honest, &b); err != nil || b.String() != "ledger" {
		t.Errorf("the upload after the rollups: %q, %v", b.String(), err)
	}
}

// TestUploadsWriteOnly: a worker adds uploads and cannot read any, its
// own or another's; the coordinator reads an upload by its name, size and
// digest, skipping what others added under the same name, and refuses
// one that does not add up.
func TestUploadsWriteOnly(t *testing.T) {
	g := startGuarded(t, "upl", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wq, _ := g.join(t, g.nkey)
	big := bytes.Repeat([]byte("ledger entry\n"), 100_000) // 1.3 MB: six parts
	honest, err := wq.PutUpload(ctx, "run-1", big)
	if err != nil {
		t.Fatal(err)
	}
	// Another client adds under the same name: other content, and parts
	// claiming the honest digest out of order.
	aq, anc := g.join(t, g.token)
	if _, err := aq.PutUpload(ctx, "run-1", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: aq.uploadSubject("run-1"), Header: nats.Header{}, Data: []byte("junk")}
	m.Header.Set(hdrUploadDigest, honest.SHA256)
	m.Header.Set(hdrUploadPart, "9")
	if _, err := anc.RequestMsgWithContext(ctx, m); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := g.q.GetUpload(ctx, honest, &b); err != nil || !bytes.Equal(b.Bytes(), big) {
		t.Fatalf("the coordinator reads the honest upload: %d bytes, %v", b.Len(), err)
	}
	for _, tc := range []struct {
		name string
		u    Upload
		want string
	}{
		{"another digest", Upload{Name: "run-1", Size: honest.Size, SHA256: strings.Repeat("0", 64)}, "of its"},
		{"a size too small", Upload{Name: "run-1", Size: 10, SHA256: honest.SHA256}, "more than its 10 bytes"},
		{"a size too large", Upload{Name: "run-1", Size: honest.Size + 1, SHA256: honest.SHA256}, "in the stream"},
		{"no such upload", Upload{Name: "run-2", Size: 1, SHA256: honest.SHA256}, "no such upload"},
		{"a bad name", Upload{Name: "../x", Size: 1, SHA256: honest.SHA256}, "letters, digits"},
	} {
		b.Reset()
		if err := g.q.GetUpload(ctx, tc.u, &b); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// Reading uploads needs a consumer or a get, both refused to workers.
	wnc := wq.nc
	v := watchViolations(wnc)
	for _, subj := range []string{
		"$JS.API.DIRECT.GET." + g.q.streamUploads,
		"$JS.API.DIRECT.GET." + g.q.streamUploads + "." + g.q.uploadSubject("run-1"),
		"$JS.API.STREAM.MSG.GET." + g.q.streamUploads,
		"$JS.API.CONSUMER.CREATE." + g.q.streamUploads,
		"$JS.API.STREAM.INFO." + g.q.streamUploads,
	} {
		if err := wnc.Publish(subj, []byte(`{"seq":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := wnc.SubscribeSync(g.q.subjUploads + ".>"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "six violations", func() bool { _ = wnc.Flush(); return v.count() >= 6 })
}

// TestStatusWipeHarmless: the status bucket is display only. A worker's
// rollup wipes it in the middle of a run; every job still gets exactly
// one result and the coordinator finishes.
func TestStatusWipeHarmless(t *testing.T) {
	g := startGuarded(t, "wipe", Config{AckWait: time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wq, _ := g.join(t, g.token)
	_, anc := g.join(t, g.nkey)
	gate := make(chan struct{})
	var once sync.Once
	runWorker(t, wq, WorkerConfig{ID: "honest", Parallel: 2}, func(ctx context.Context, j Job, progress func(string)) ([]byte, error) {
		progress("running")
		once.Do(func() {
			m := &nats.Msg{Subject: "$KV." + g.q.bucketStatus + ".wipe", Header: nats.Header{}, Data: []byte("x")}
			m.Header.Set("Nats-Rollup", "all")
			if _, err := anc.RequestMsgWithContext(ctx, m); err != nil {
				t.Errorf("the wipe: %v", err)
			}
			close(gate)
		})
		<-gate
		return []byte("signed " + j.ID), nil
	})
	col := newCollector()
	jobs := []Job{{ID: "a"}, {ID: "b"}, {ID: "c"}, {ID: "d"}}
	if _, err := g.q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done, Verify: signedVerify}); err != nil {
		t.Fatal(err)
	}
	for id, r := range col.exactlyOne(t, jobs) {
		if r.Error != "" || r.Worker != "honest" {
			t.Errorf("%s: %+v", id, r)
		}
	}
	select {
	case <-gate:
	default:
		t.Fatal("the wipe did not happen")
	}
}

// TestNakDelayBounded: a client with a worker's rights pulls a job, hands
// it back with a delay of 1000 hours and goes away. The coordinator
// heartbeats the job an ack wait after the hand-back, so the server
// delivers it again within another ack wait; an honest worker runs it and
// the coordinator finishes.
func TestNakDelayBounded(t *testing.T) {
	const ackWait = time.Second
	g := startGuarded(t, "nak", Config{AckWait: ackWait})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eq, enc := g.join(t, g.token)
	if _, err := g.q.Publish(ctx, Job{ID: "a"}); err != nil {
		t.Fatal(err)
	}
	m, err := eq.cons.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.NakWithDelay(1000 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	naked := time.Now()
	enc.Close()
	hq, _ := g.join(t, g.nkey)
	runWorker(t, hq, WorkerConfig{ID: "honest"}, func(ctx context.Context, j Job, _ func(string)) ([]byte, error) {
		return []byte("signed " + j.ID), nil
	})
	col := newCollector()
	jobs := []Job{{ID: "a"}, {ID: "b"}}
	if _, err := g.q.Coordinate(ctx, jobs, CoordinatorConfig{Accept: col.accept, Done: col.done, Verify: signedVerify}); err != nil {
		t.Fatal(err)
	}
	took := time.Since(naked)
	for id, r := range col.exactlyOne(t, jobs) {
		if r.Error != "" || r.Worker != "honest" {
			t.Errorf("%s: %+v", id, r)
		}
	}
	t.Logf("the job handed back for 1000 h was done %v after", took.Round(10*time.Millisecond))
}
