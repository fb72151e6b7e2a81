package benchcli

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/trussdev/truss/internal/bench/runner"
)

// TestQueueFlagsAuth: the embedded server's token and worker NKeys go
// together (each admits a worker's permissions only); a token with an
// external deployment is a client credential, not the server's.
func TestQueueFlagsAuth(t *testing.T) {
	t.Setenv("NATS_URL", "")
	t.Setenv("NATS_TOKEN", "")
	kp, _ := nkeys.CreateUser()
	pub, _ := kp.PublicKey()
	for _, tc := range []struct {
		name      string
		args      []string
		token     string
		nkeys     []string
		clientTok string
	}{
		{"token and nkey", []string{"--nats-listen", "0.0.0.0:0", "--nats-token", "s3cret", "--nats-worker-nkey", pub}, "s3cret", []string{pub}, "s3cret"},
		{"token", []string{"--nats-listen", "0.0.0.0:0", "--nats-token", "s3cret"}, "s3cret", nil, "s3cret"},
		{"nkey", []string{"--nats-worker-nkey", pub}, "", []string{pub}, ""},
		{"external", []string{"--nats", "nats://n1:4222", "--nats-token", "s3cret"}, "", nil, "s3cret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q queueFlags
			fs := flag.NewFlagSet("run", flag.ContinueOnError)
			q.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := q.check(); err != nil {
				t.Fatalf("check: %v", err)
			}
			var r runner.Runner
			q.apply(&r, io.Discard)
			if r.Net.Auth.Token != tc.token || !slices.Equal(r.Net.Auth.NKeys, tc.nkeys) || r.Net.Connect.Token != tc.clientTok {
				t.Errorf("server auth %+v, client %+v", r.Net.Auth, r.Net.Connect)
			}
		})
	}
}
