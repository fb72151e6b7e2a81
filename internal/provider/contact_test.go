package provider

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestFirstContact(t *testing.T) {
	_, refused := http.Get("http://" + closedPort(t) + "/")
	if refused == nil {
		t.Fatal("a closed port answered")
	}
	unreachable := func(err error) error {
		return TransportError(context.Background(), "test", "set TEST_HOST", err)
	}
	dns := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "nosuch.invalid", IsNotFound: true}}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: fmt.Errorf("read: %w", syscall.ECONNRESET)}
	for _, tc := range []struct {
		name     string
		err      error
		contact  *Contact
		answered bool // the server answered an earlier turn
		attempts int
	}{
		{"refused before any answer", unreachable(refused), &Contact{}, false, 1},
		{"no such host before any answer", unreachable(dns), &Contact{}, false, 1},
		{"refused after the server answered", unreachable(refused), &Contact{}, true, 4},
		{"reset before any answer", unreachable(reset), &Contact{}, false, 4},
		{"refused without a contact record", unreachable(refused), nil, false, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, Contact: tc.contact}
			if tc.answered {
				p.Do(context.Background(), func(int) error { return nil })
			}
			retries := 0
			p.OnRetry = func(int, time.Duration, error) { retries++ }
			n, err := p.Do(context.Background(), func(int) error { return tc.err })
			if n != tc.attempts || err == nil || retries != tc.attempts-1 {
				t.Fatalf("attempts %d (want %d), retries %d, err %v", n, tc.attempts, retries, err)
			}
		})
	}
	t.Run("an HTTP error status is contact", func(t *testing.T) {
		c := &Contact{}
		p := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: time.Millisecond, MaxAttempts: 1, Contact: c}
		p.Do(context.Background(), func(int) error { return &Error{Kind: ErrServer, Status: 503} })
		if !c.Answered() {
			t.Fatal("a 503 did not count as an answer")
		}
	})
	if NoConnection(unreachable(reset)) || !NoConnection(unreachable(refused)) || !NoConnection(unreachable(dns)) {
		t.Fatal("NoConnection misjudges a reset, a refusal or a DNS failure")
	}
}
