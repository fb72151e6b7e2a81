package runner

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/trussdev/truss/internal/queue"
)

// TestEmbeddedQueueNeedsItsToken: the server a benchmark embeds, given no
// credentials, admits no client without the token it made (even on
// loopback, where any process of the machine — a graded command with the
// network on — reaches it); a coordinator started again on the directory
// keeps the token, so that its workers reconnect; and the token, which
// queue.json holds for the user's workers, admits a worker's permissions
// only: the jobs cannot be deleted or purged with it.
func TestEmbeddedQueueNeedsItsToken(t *testing.T) {
	ctx := context.Background()
	out := t.TempDir()
	_, closeQ, err := OpenQueue(ctx, Net{Listen: "127.0.0.1:0"}, out)
	if err != nil {
		t.Fatal(err)
	}
	qi, err := ReadQueueInfo(out)
	if err != nil {
		t.Fatal(err)
	}
	if !validToken(qi.Token) || strings.Contains(qi.URL, qi.Token) {
		t.Fatalf("queue.json: %+v, want a 32-digit token apart from the URL", qi)
	}
	wrong := map[bool]string{true: "1", false: "0"}[qi.Token[0] == '0'] + qi.Token[1:]
	for _, o := range []queue.ConnectOptions{{Name: "stranger"}, {Name: "stranger", Token: wrong}} {
		if nc, err := queue.Connect(ctx, qi.URL, o); err == nil {
			nc.Close()
			t.Fatalf("a client with token %q was admitted", o.Token)
		}
	}
	closeQ()

	q, closeQ, err := OpenQueue(ctx, Net{Listen: "127.0.0.1:0"}, out)
	if err != nil {
		t.Fatal(err)
	}
	defer closeQ()
	qi2, err := ReadQueueInfo(out)
	if err != nil || qi2.Token != qi.Token {
		t.Fatalf("after a restart, queue.json holds %+v (%v), want the token again", qi2, err)
	}
	nc, err := queue.Connect(ctx, qi2.WorkerURL(), queue.ConnectOptions{Name: "worker"})
	if err != nil {
		t.Fatalf("the worker's URL: %v", err)
	}
	defer nc.Close()
	if _, err := JoinQueue(ctx, nc, q.Name()); err != nil {
		t.Fatalf("a worker cannot join with the token: %v", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	jobs := "TRUSS_" + q.Name() + "_JOBS"
	if err := js.DeleteStream(ctx, jobs); err == nil {
		t.Fatal("the token deleted the jobs' stream")
	}
	if s, err := js.Stream(ctx, jobs); err == nil {
		if err := s.Purge(ctx); err == nil {
			t.Fatal("the token purged the jobs")
		}
	}
}
