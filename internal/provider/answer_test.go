package provider

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAnswerMiddlewareKeepsLongSuccess: a JSON success longer than what is
// looked at is given on whole; a short one with an error is an
// *AnswerError.
func TestAnswerMiddlewareKeepsLongSuccess(t *testing.T) {
	long := `{"output":"` + strings.Repeat("x", 200<<10) + `"}`
	for _, tc := range []struct {
		name, body string
		foreign    bool
	}{
		{"long", long, false},
		{"short", `{"id":"r1"}`, false},
		{"an error", `{"error":"Unexpected endpoint or method."}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, "http://h/v1/x", nil)
			next := func(r *http.Request) (*http.Response, error) {
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(tc.body)), Request: r}, nil
			}
			resp, err := AnswerMiddleware(OpenAIShape)(req, next)
			var ae *AnswerError
			if errors.As(err, &ae) != tc.foreign {
				t.Fatalf("error %v", err)
			}
			if !tc.foreign {
				b, _ := io.ReadAll(resp.Body)
				if string(b) != tc.body {
					t.Errorf("body of %d bytes, want %d", len(b), len(tc.body))
				}
			}
		})
	}
}
