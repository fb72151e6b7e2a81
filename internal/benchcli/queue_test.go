package benchcli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/trussdev/truss/internal/bench/grade"
	"github.com/trussdev/truss/internal/bench/harnessagent"
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

// TestQueueSecretsHidden: --nats-creds (a .creds file or an NKey seed,
// and the file a link to it names) is hidden from the runs' gradings and
// agents; without it nothing is added.
func TestQueueSecretsHidden(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "worker.nk")
	if err := os.WriteFile(seed, []byte("SUAFAKE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.nk")
	if err := os.Symlink(seed, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, tc := range []struct {
		name  string
		creds string
		want  []string
	}{
		{"none", "", nil},
		{"relative", "worker.nk", []string{seed}},
		{"link", link, []string{link, seed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := natsFlags{creds: tc.creds}
			g := &grade.Grader{Shells: &grade.Sandboxed{Hidden: []string{"/tasks"}}}
			ag := &harnessagent.Agent{}
			hideFromRuns(g, ag, n.secrets())
			if got := g.Shells.(*grade.Sandboxed).Hidden; !slices.Equal(got, append([]string{"/tasks"}, tc.want...)) {
				t.Errorf("the grading hides %q, want /tasks and %q", got, tc.want)
			}
			if !slices.Equal(ag.Hidden, tc.want) {
				t.Errorf("the agent hides %q, want %q", ag.Hidden, tc.want)
			}
		})
	}
}
