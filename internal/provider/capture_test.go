package provider

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestCaptureConcurrentRequests sends requests through one middleware at
// once, each held by the server until all have arrived so that their
// exchanges overlap, and checks that each capture holds its own request and
// response and nothing of the others'.
func TestCaptureConcurrentRequests(t *testing.T) {
	const n = 8
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprintf("skip-request=%v", skip), func(t *testing.T) {
			var arrived sync.WaitGroup
			arrived.Add(n)
			all := make(chan struct{})
			go func() { arrived.Wait(); close(all) }()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				arrived.Done()
				select {
				case <-all:
				case <-time.After(10 * time.Second):
				}
				// Several flushed writes, so that the reads interleave.
				for i := range 3 {
					fmt.Fprintf(w, "chunk %d of %s\n", i, body)
					w.(http.Flusher).Flush()
				}
			}))
			defer srv.Close()
			var wg sync.WaitGroup
			errs := make(chan error, 3*n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := &Capture{SkipRequest: skip}
					body := fmt.Sprintf("request-%d", i)
					req, err := http.NewRequestWithContext(c.Context(context.Background()), "POST", srv.URL, bytes.NewBufferString(body))
					if err != nil {
						errs <- err
						return
					}
					resp, err := CaptureMiddleware(req, srv.Client().Do)
					if err != nil {
						errs <- err
						return
					}
					got, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						errs <- err
						return
					}
					w := c.Wire()
					wantReq := body
					if skip {
						wantReq = ""
					}
					if string(w.Request) != wantReq {
						errs <- fmt.Errorf("request %d: captured request %q, want %q", i, w.Request, wantReq)
					}
					if want := fmt.Sprintf("chunk 0 of %[1]s\nchunk 1 of %[1]s\nchunk 2 of %[1]s\n", body); string(got) != want || string(w.Response) != want {
						errs <- fmt.Errorf("request %d: captured response %q, read %q, want %q", i, w.Response, got, want)
					}
					if w.Duration <= 0 {
						errs <- fmt.Errorf("request %d: duration %s", i, w.Duration)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// TestCaptureWithoutContext checks that a request whose context carries no
// capture passes through, and that a capture no request used holds nothing.
func TestCaptureWithoutContext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, bytes.NewBufferString("x"))
	resp, err := CaptureMiddleware(req, srv.Client().Do)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, ok := resp.Body.(*tee); ok {
		t.Error("a request without a capture had its body teed")
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Errorf("body %q", b)
	}
	if w := (&Capture{}).Wire(); w != nil {
		t.Errorf("an unused capture returned %+v", w)
	}
}
