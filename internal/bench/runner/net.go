package runner

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/trussdev/truss/internal/queue"

	"github.com/trussdev/truss/internal/hostfs"
)

// Net is where a benchmark's queue lives: an existing NATS deployment
// (URL), or a server embedded in the coordinator, its store in the bench
// directory, on loopback unless Listen names another address (which needs
// Auth).
type Net struct {
	// URL is an existing NATS deployment ("" embeds a server).
	URL     string
	Connect queue.ConnectOptions
	// Listen and Auth configure the embedded server.
	Listen string
	Auth   queue.Auth
	// AckWait is the queue's ack wait (0: queue.DefaultAckWait).
	AckWait time.Duration
	// Replicas is the copies of the queue's streams (0:
	// queue.DefaultReplicas of the deployment).
	Replicas int
}

// QueueInfo is DIR/queue.json, written by the coordinator: where its
// queue is, for `truss bench status DIR` and for workers.
type QueueInfo struct {
	// URL is the server's address, without credentials.
	URL string `json:"url"`
	// Name is the queue's name.
	Name string `json:"name"`
	// Token is the token the embedded server made for itself when it was
	// given no credentials: it admits a worker's permissions only. The
	// file is the user's alone (mode 0600, in the bench directory, which
	// no agent and no grading sees).
	Token string `json:"token,omitempty"`
}

// WorkerURL is the URL a worker on this machine connects with: URL with
// the token, when the server made one.
func (qi QueueInfo) WorkerURL() string {
	if qi.Token == "" || strings.Contains(qi.URL, ",") {
		return qi.URL
	}
	if s := strings.Index(qi.URL, "://"); s >= 0 {
		return qi.URL[:s+3] + qi.Token + "@" + qi.URL[s+3:]
	}
	return qi.URL
}

// QueueInfoFile is the name of the queue's description in a bench
// directory.
const QueueInfoFile = "queue.json"

// OpenQueue opens the benchmark's queue for the coordinator of out and
// records where it is in out/queue.json. close releases the connection
// and the embedded server.
func OpenQueue(ctx context.Context, n Net, out string) (q *queue.Queue, close func(), err error) {
	var closers []func()
	close = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			close()
		}
	}()
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, close, err
	}
	name := queue.NameFor(abs)
	var nc *nats.Conn
	var token string
	url := n.URL
	if url == "" {
		// Workers presenting an NKey may do what a worker of this queue
		// needs, nothing more. A server given no credentials makes a
		// token of its own: even on loopback, a port anyone on the
		// machine reaches — a graded command with the network on
		// included — must not read the jobs (their gold patches) or
		// delete them.
		// A coordinator started again on the same directory keeps the
		// token, so that its workers reconnect.
		auth := n.Auth
		if auth.Token == "" && auth.User == "" && len(auth.NKeys) == 0 {
			if qi, err := ReadQueueInfo(out); err == nil && validToken(qi.Token) {
				token = qi.Token
			} else if token, err = queue.NewToken(); err != nil {
				return nil, close, err
			}
			auth.Token = token
		}
		srv, err := queue.StartServer(ctx, queue.ServerConfig{Dir: filepath.Join(out, "queue"), Listen: n.Listen, Auth: auth, Queue: name})
		if err != nil {
			return nil, close, err
		}
		closers = append(closers, srv.Shutdown)
		if nc, err = srv.Connect("truss bench coordinator"); err != nil {
			return nil, close, err
		}
		url = srv.URL()
	} else {
		o := n.Connect
		o.Name = "truss bench coordinator"
		if nc, err = queue.Connect(ctx, url, o); err != nil {
			return nil, close, err
		}
	}
	closers = append(closers, nc.Close)
	q, err = queue.Open(ctx, nc, name, queue.Config{AckWait: n.AckWait, Replicas: n.Replicas})
	if err != nil {
		return nil, close, err
	}
	b, _ := json.MarshalIndent(QueueInfo{URL: redact(url), Name: q.Name(), Token: token}, "", "  ")
	if err := writeAtomic(filepath.Join(out, QueueInfoFile), append(b, '\n')); err != nil {
		return nil, close, err
	}
	return q, close, nil
}

// validToken reports whether t is a token queue.NewToken makes.
func validToken(t string) bool {
	if len(t) != 32 {
		return false
	}
	_, err := hex.DecodeString(t)
	return err == nil
}

// ReadQueueInfo reads DIR/queue.json.
func ReadQueueInfo(dir string) (QueueInfo, error) {
	var qi QueueInfo
	b, err := os.ReadFile(filepath.Join(dir, QueueInfoFile))
	if err != nil {
		return qi, err
	}
	if err := json.Unmarshal(b, &qi); err != nil {
		return qi, fmt.Errorf("%s: %w", filepath.Join(dir, QueueInfoFile), err)
	}
	return qi, nil
}

// JoinQueue joins the queue name on nc; with name "", the only benchmark
// queue the deployment holds (an error when there are none or several).
func JoinQueue(ctx context.Context, nc *nats.Conn, name string) (*queue.Queue, error) {
	if name == "" {
		names, err := Queues(ctx, nc)
		if err != nil {
			return nil, err
		}
		switch len(names) {
		case 0:
			return nil, fmt.Errorf("%w: the deployment holds no benchmark queue yet", queue.ErrNoQueue)
		case 1:
			name = names[0]
		default:
			return nil, fmt.Errorf("the deployment holds several benchmark queues (%s): name one with --queue", strings.Join(names, ", "))
		}
	}
	return queue.Join(ctx, nc, name)
}

// Queues lists the names of the benchmark queues a deployment holds.
func Queues(ctx context.Context, nc *nats.Conn) ([]string, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var out []string
	l := js.StreamNames(ctx)
	for s := range l.Name() {
		if n, ok := strings.CutPrefix(s, "TRUSS_"); ok {
			if n, ok := strings.CutSuffix(n, "_JOBS"); ok {
				out = append(out, n)
			}
		}
	}
	if err := l.Err(); err != nil && !errors.Is(err, jetstream.ErrEndOfData) {
		return nil, fmt.Errorf("listing the queues: %w", err)
	}
	slices.Sort(out)
	return out, nil
}

// redact drops credentials from a URL list.
func redact(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		if s := strings.Index(p, "://"); s >= 0 {
			rest := p[s+3:]
			if at := strings.LastIndexByte(rest, '@'); at >= 0 && !strings.Contains(rest[:at], "/") {
				parts[i] = p[:s+3] + rest[at+1:]
			}
		}
	}
	return strings.Join(parts, ",")
}

func writeAtomic(path string, data []byte) error {
	return hostfs.WriteFileAtomic(path, data, 0o600)
}
