package awsauth

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestProcessStderr: a failed credential_process's error shows the last
// line of its standard error, cut, with what may be a credential masked.
func TestProcessStderr(t *testing.T) {
	for _, tc := range []struct{ stderr, want string }{
		{"refreshing\ntoken SECRET-abc123 expired", "token *** expired"},
		{"the token has expired", "the token has expired"},
		{"error: refresh_token=1//0gREFRESHSECRET invalid", "error: refresh_token=*** invalid"},
		{"bad session AKIAIOSFODNN7EXAMPLE0 for user", "bad session *** for user"},
		{strings.Repeat("x ", 150), strings.Repeat("x ", 100)[:200] + "…"},
	} {
		if got := stderrTail(tc.stderr); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.stderr, got, tc.want)
		}
	}
	t.Setenv("TRUSS_TEST_TOKEN", "SECRET-abc123")
	_, err := (&Process{Command: `echo starting >&2; echo "token $TRUSS_TEST_TOKEN expired" >&2; exit 3`}).Retrieve(context.Background())
	var pe *ProcessError
	if !errors.As(err, &pe) || strings.Contains(err.Error(), "SECRET") || !strings.HasSuffix(err.Error(), ": token *** expired") {
		t.Errorf("the error: %v", err)
	}
}
