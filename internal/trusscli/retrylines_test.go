package trusscli

import (
	"strings"
	"testing"
)

// TestRetryLines: a retry said before the task's echo is held until it,
// and said in order then; after, and when not held, at once.
func TestRetryLines(t *testing.T) {
	for _, tc := range []struct {
		name string
		held bool
		want string
	}{
		{"held until the echo", true, "› hi\nretry 2\nretry 3\nretry 4\n"},
		{"not held (--json)", false, "retry 2\nretry 3\n› hi\nretry 4\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			r := &retryLines{w: &out, held: tc.held}
			r.say("retry 2\n")
			r.say("retry 3\n")
			out.WriteString("› hi\n") // the printer's echo, then the release
			r.release()
			r.say("retry 4\n")
			r.release()
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
		})
	}
}
