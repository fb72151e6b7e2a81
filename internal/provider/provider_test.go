package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/model"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		h    map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After-Ms": "250"}, 250 * time.Millisecond},
		{map[string]string{"Retry-After-Ms": "1.5", "Retry-After": "9"}, 1500 * time.Microsecond},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"Retry-After-Ms": "-5"}, 0},
		{nil, 0},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		if got := ParseRetryAfter(h, now); got != tt.want {
			t.Errorf("%v: got %v, want %v", tt.h, got, tt.want)
		}
	}
}

func TestNotAPIAnswer(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   bool
	}{
		{404, "<html><body>nginx</body></html>", true},
		{404, "", true},
		{404, "404 page not found\n", true},
		{405, "Method Not Allowed", true},
		{501, "<!DOCTYPE HTML>\n<title>Error response</title>", true},
		{404, `{"type":"error","error":{"type":"not_found_error","message":"model: x"}}`, false},
		{404, `[{"error":{"code":404,"message":"x"}}]`, false},
		{404, `{"truncated`, true},
		{400, "<html>bad</html>", false},
		{401, "<html>login</html>", false},
		{502, "<html>Bad Gateway</html>", false},
		{413, "<html>Request Entity Too Large</html>", false},
	}
	for _, tt := range tests {
		if got := NotAPIAnswer(tt.status, []byte(tt.body)); got != tt.want {
			t.Errorf("NotAPIAnswer(%d, %q) = %v, want %v", tt.status, tt.body, got, tt.want)
		}
	}
}

// TestWebPage: a web page given as a success is no API's answer; an
// error page, a stream and a JSON answer are left to the adapter.
func TestWebPage(t *testing.T) {
	tests := []struct {
		status      int
		contentType string
		want        bool
	}{
		{200, "text/html", true},
		{200, "text/html; charset=utf-8", true},
		{200, "TEXT/HTML", true},
		{203, "text/html", true},
		{200, "text/event-stream", false},
		{200, "application/json", false},
		{200, "application/x-ndjson", false},
		{200, "", false},
		{404, "text/html", false},
		{502, "text/html", false},
		{301, "text/html", false},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: tt.status, Header: http.Header{}}
		if tt.contentType != "" {
			resp.Header.Set("Content-Type", tt.contentType)
		}
		if got := WebPage(resp); got != tt.want {
			t.Errorf("WebPage(%d, %q) = %v, want %v", tt.status, tt.contentType, got, tt.want)
		}
	}
}

func TestKindAndRetryable(t *testing.T) {
	tests := []struct {
		status    int
		kind      ErrorKind
		retryable bool
	}{
		{400, ErrBadRequest, false}, {401, ErrAuth, false}, {403, ErrAuth, false}, {404, ErrNotFound, false},
		{408, ErrServer, true}, {409, ErrServer, true}, {422, ErrBadRequest, false}, {429, ErrRateLimited, true},
		{500, ErrServer, true}, {501, ErrServer, false}, {502, ErrServer, true}, {503, ErrServer, true}, {529, ErrOverloaded, true},
	}
	for _, tt := range tests {
		e := &Error{Kind: KindForStatus(tt.status), Status: tt.status}
		if e.Kind != tt.kind || e.Retryable() != tt.retryable {
			t.Errorf("%d: kind %s retryable %v", tt.status, e.Kind, e.Retryable())
		}
	}
	if (&Error{Kind: ErrStream}).Retryable() != true || (&Error{Kind: ErrServer, Final: true}).Retryable() {
		t.Error("stream errors retry; final errors do not")
	}
}

func TestRetryPolicy(t *testing.T) {
	fast := RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}
	t.Run("succeeds after retryable failures", func(t *testing.T) {
		var waits []time.Duration
		p := fast
		p.OnRetry = func(_ int, w time.Duration, _ error) { waits = append(waits, w) }
		n, err := p.Do(context.Background(), func(a int) error {
			if a < 3 {
				return &Error{Kind: ErrRateLimited, Status: 429, RetryAfter: 3 * time.Millisecond}
			}
			return nil
		})
		if err != nil || n != 3 || len(waits) != 2 || waits[0] != 3*time.Millisecond {
			t.Fatalf("n %d err %v waits %v", n, err, waits)
		}
	})
	t.Run("stops on a non-retryable error", func(t *testing.T) {
		n, err := fast.Do(context.Background(), func(int) error { return &Error{Kind: ErrAuth, Status: 401} })
		if n != 1 || err == nil {
			t.Fatalf("n %d err %v", n, err)
		}
		n, err = fast.Do(context.Background(), func(int) error { return errors.New("plain") })
		if n != 1 || err == nil {
			t.Fatalf("plain error retried: n %d", n)
		}
	})
	t.Run("gives up after MaxAttempts", func(t *testing.T) {
		p := fast
		p.MaxAttempts = 3
		n, err := p.Do(context.Background(), func(int) error { return &Error{Kind: ErrServer, Status: 500} })
		if n != 3 || err == nil {
			t.Fatalf("n %d err %v", n, err)
		}
	})
	t.Run("a Retry-After past the limit ends the retries", func(t *testing.T) {
		p := fast
		p.MaxRetryAfter = time.Second
		for _, tc := range []struct {
			after time.Duration
			want  string
		}{
			{time.Hour, "the server asks for a wait of 1h before a retry, longer than Truss waits (1s): not retried"},
			{90 * time.Minute, "a wait of 1h30m before"},
			{125 * time.Second, "a wait of 2m5s before"},
		} {
			n, err := p.Do(context.Background(), func(int) error {
				return &Error{Kind: ErrRateLimited, Status: 429, Message: "rate_limit_error: slow down", RetryAfter: tc.after}
			})
			if n != 1 || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Retry-After %s: n %d, %v", tc.after, n, err)
			}
		}
	})
	t.Run("cancellation stops the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := RetryPolicy{BaseDelay: time.Hour, MaxDelay: time.Hour}
		go func() { time.Sleep(20 * time.Millisecond); cancel() }()
		start := time.Now()
		n, err := p.Do(ctx, func(int) error { return &Error{Kind: ErrServer} })
		if n != 1 || err == nil || time.Since(start) > 10*time.Second {
			t.Fatalf("n %d err %v", n, err)
		}
	})
	t.Run("backoff grows with jitter within bounds", func(t *testing.T) {
		p := RetryPolicy{}.norm()
		for a := 1; a <= 6; a++ {
			d := p.backoff(a)
			full := min(p.BaseDelay<<(a-1), p.MaxDelay)
			if d > full || d < full*3/4 {
				t.Errorf("attempt %d: %v not in [%v, %v]", a, d, full*3/4, full)
			}
		}
	})
}

func TestHTTPError(t *testing.T) {
	h := http.Header{}
	h.Set("Retry-After-Ms", "250")
	e := HTTPError("p", 429, "rate_limit_exceeded", "", h, nil)
	if e.Kind != ErrRateLimited || e.Message != "Too Many Requests" || e.RetryAfter != 250*time.Millisecond || !e.Retryable() || e.Code != "rate_limit_exceeded" {
		t.Errorf("429: %+v", e)
	}
	h = http.Header{}
	h.Set("X-Should-Retry", "false")
	if e := HTTPError("p", 503, "", "busy", h, nil); e.Retryable() {
		t.Errorf("x-should-retry false was not honoured: %+v", e)
	}
	h.Set("X-Should-Retry", "true")
	if e := HTTPError("p", 400, "", "odd", h, nil); !e.Retryable() || e.Kind != ErrBadRequest {
		t.Errorf("x-should-retry true was not honoured: %+v", e)
	}
	if e := HTTPError("p", 400, "", "bad", nil, nil); e.Retryable() {
		t.Errorf("a plain 400 is retryable: %+v", e)
	}
}

func TestHeadCache(t *testing.T) {
	var c HeadCache
	builds := 0
	build := func() ([]byte, error) { builds++; return []byte(fmt.Sprint("head", builds)), nil }
	tools := []model.ToolSpec{{Name: "a"}, {Name: "b"}}
	req := &model.Request{Model: "m", System: "s", Tools: tools}
	h1, _ := c.Get(req, "", build)
	h2, _ := c.Get(&model.Request{Model: "m", System: "s", Tools: tools, Items: []model.Item{{Kind: model.KindUser}}}, "", build)
	if builds != 1 || string(h1) != string(h2) {
		t.Fatalf("the same head was built %d times", builds)
	}
	for _, r := range []*model.Request{
		{Model: "m2", System: "s", Tools: tools},
		{Model: "m2", System: "s2", Tools: tools},
		{Model: "m2", System: "s2", Tools: tools[:1]},
		{Model: "m2", System: "s2", Tools: append([]model.ToolSpec(nil), tools[:1]...)},
		{Model: "m2", System: "s2", Tools: tools[:1], MaxTokens: 9},
	} {
		before := builds
		c.Get(r, "", build)
		if builds != before+1 {
			t.Errorf("a changed head was not rebuilt: %+v", r)
		}
	}
	before := builds
	c.Get(&model.Request{Model: "m2", System: "s2", Tools: tools[:1], MaxTokens: 9}, "prev", build)
	if builds != before+1 {
		t.Error("a changed extra was not rebuilt")
	}
}

func TestTransportError(t *testing.T) {
	ctx := context.Background()
	var pe *Error
	unreach := &url.Error{Op: "Post", URL: "http://127.0.0.1:9", Err: errors.New("connection refused")}
	if err := TransportError(ctx, "p", "check P_URL", unreach); !errors.As(err, &pe) || pe.Kind != ErrUnreachable || !pe.Retryable() ||
		!strings.Contains(pe.Message, "check P_URL") {
		t.Errorf("unreachable: %v", err)
	}
	if err := TransportError(ctx, "p", "", fmt.Errorf("read: %w", io.ErrUnexpectedEOF)); !errors.As(err, &pe) || pe.Kind != ErrStream {
		t.Errorf("cut stream: %v", err)
	}
	if err := TransportError(ctx, "p", "", errors.New("bad json")); !errors.As(err, &pe) || pe.Kind != ErrProtocol || pe.Retryable() {
		t.Errorf("protocol: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := TransportError(done, "p", "", unreach); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
