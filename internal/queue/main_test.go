package queue

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/testenv"
)

// The test binary doubles as the worker and coordinator processes of the
// end-to-end tests: with TRUSS_QUEUE_HELPER set it runs that role and
// exits instead of running tests.
func TestMain(m *testing.M) {
	switch os.Getenv("TRUSS_QUEUE_HELPER") {
	case "":
		os.Exit(testenv.Run(m))
	case "worker":
		os.Exit(helperWorker())
	case "coordinator":
		os.Exit(helperCoordinator())
	default:
		fmt.Fprintln(os.Stderr, "unknown TRUSS_QUEUE_HELPER")
		os.Exit(2)
	}
}

// testPayload tells the test handler what to do.
type testPayload struct {
	// MS is how long the job runs.
	MS int `json:"ms"`
	// Crash kills the process running the job.
	Crash bool `json:"crash,omitempty"`
	// Panic makes the handler panic.
	Panic bool `json:"panic,omitempty"`
	// Fail makes the handler return an error.
	Fail string `json:"fail,omitempty"`
}

func payload(p testPayload) []byte {
	b, _ := json.Marshal(p)
	return b
}

// testHandler runs a job as its payload says and returns "ok ID".
func testHandler(ctx context.Context, job Job, progress func(string)) ([]byte, error) {
	var p testPayload
	if err := json.Unmarshal(job.Payload, &p); err != nil {
		return nil, fmt.Errorf("bad payload: %w", err)
	}
	if p.Crash {
		os.Exit(7)
	}
	if p.Panic {
		panic("poison job " + job.ID)
	}
	deadline := time.Now().Add(time.Duration(p.MS) * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		progress("step " + strconv.Itoa(i))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(50*time.Millisecond, time.Until(deadline))):
		}
	}
	if p.Fail != "" {
		return nil, fmt.Errorf("%s", p.Fail)
	}
	return []byte("ok " + job.ID), nil
}

func helperWorker() int {
	ctx := context.Background()
	nc, err := Connect(ctx, os.Getenv("TRUSS_QUEUE_URL"), ConnectOptions{Name: os.Getenv("TRUSS_QUEUE_WORKER")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	var q *Queue
	for {
		q, err = Join(ctx, nc, os.Getenv("TRUSS_QUEUE_NAME"))
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	par, _ := strconv.Atoi(os.Getenv("TRUSS_QUEUE_PARALLEL"))
	w, err := q.NewWorker(WorkerConfig{
		ID: os.Getenv("TRUSS_QUEUE_WORKER"), Parallel: par,
		ExitWhenIdle: true, IdleWait: 2 * time.Second, GoneWait: 6 * time.Second, PollWait: 200 * time.Millisecond,
		RetryDelay: 100 * time.Millisecond,
		Logf: func(format string, args ...any) {
			fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
		},
	}, testHandler)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() { <-sig; w.Drain() }()
	fmt.Println("worker ready")
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// helperCoordinator embeds the server (file store in TRUSS_QUEUE_DIR,
// listening on TRUSS_QUEUE_LISTEN), publishes TRUSS_QUEUE_JOBS jobs and
// appends each accepted result to TRUSS_QUEUE_RESULTS as a line "ID
// WORKER DELIVERIES", resuming from the lines already there.
func helperCoordinator() int {
	ctx := context.Background()
	dir := os.Getenv("TRUSS_QUEUE_DIR")
	srv, err := StartServer(ctx, ServerConfig{Dir: filepath.Join(dir, "nats"), Listen: os.Getenv("TRUSS_QUEUE_LISTEN")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.Shutdown()
	nc, err := srv.Connect("coordinator")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer nc.Close()
	q, err := Open(ctx, nc, os.Getenv("TRUSS_QUEUE_NAME"), Config{AckWait: time.Second, MaxDeliver: 3})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	resultsPath := os.Getenv("TRUSS_QUEUE_RESULTS")
	done := map[string]bool{}
	if lines, err := readLines(resultsPath); err == nil {
		for _, l := range lines {
			done[strings.Fields(l)[0]] = true
		}
	}
	f, err := os.OpenFile(resultsPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	n, _ := strconv.Atoi(os.Getenv("TRUSS_QUEUE_JOBS"))
	ms, _ := strconv.Atoi(os.Getenv("TRUSS_QUEUE_MS"))
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{ID: fmt.Sprintf("job-%02d", i), Payload: payload(testPayload{MS: ms})}
	}
	fmt.Println(time.Now().Format("15:04:05.000"), "coordinator ready")
	sum, err := q.Coordinate(ctx, jobs, CoordinatorConfig{
		Done: func(id string) bool { return done[id] },
		Accept: func(_ context.Context, r Result) error {
			if _, err := fmt.Fprintf(f, "%s %s %d\n", r.JobID, r.Worker, r.Deliveries); err != nil {
				return err
			}
			done[r.JobID] = true
			return f.Sync()
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s summary %+v\n", time.Now().Format("15:04:05.000"), sum)
	return 0
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// helper is a child process of the test binary in a helper role.
type helper struct {
	t    *testing.T
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startHelper starts the test binary in role with env; the process is
// killed when the test ends if it still runs.
func startHelper(t *testing.T, role string, env ...string) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TRUSS_QUEUE_HELPER="+role)
	cmd.Env = append(cmd.Env, env...)
	h := &helper{t: t, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = h.out, h.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { h.err = cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			_ = cmd.Process.Kill()
			<-h.done
		}
	})
	return h
}

// wait waits for the process to exit, up to a generous bound that only a
// hung test reaches.
func (h *helper) wait() error {
	h.t.Helper()
	select {
	case <-h.done:
		return h.err
	case <-time.After(2 * time.Minute):
		_ = h.cmd.Process.Kill()
		<-h.done
		h.t.Fatalf("helper %v did not exit; output:\n%s", h.cmd.Env[len(h.cmd.Env)-1], h.out.String())
		return nil
	}
}

func (h *helper) kill() {
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	<-h.done
}

// freePort returns a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// eventually polls cond every 20 ms until it holds; a hung test ends at
// the test binary's own timeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
