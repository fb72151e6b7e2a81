package runner

import (
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
)

// TestProgressLineIsTerminalSafe: names from the tasks and the arms are
// shown with their escape sequences written out (termsafe.Name), and an
// error's control sequences are dropped, for each kind of line.
func TestProgressLineIsTerminalSafe(t *testing.T) {
	last := bench.Result{InstanceID: "evil\x1b[2J\x1b]0;title\x07", Arm: "arm\u202e", Repeat: 1, Error: "boom\x1b[31m red\nsecond line"}
	for _, tc := range []struct {
		name string
		p    Progress
		want []string
	}{
		{"finished", Progress{Done: 1, Total: 2, Last: last, Resolved: map[string]int{"arm\x1b[1m": 1}},
			[]string{`evil\x1b[2J\x1b]0;title\a`, `arm\u202e`, "error: boom red", `arm\x1b[1m 1`}},
		{"started", Progress{Event: EventStarted, Last: last, Worker: "w\x1b[K"}, []string{`started on w\x1b[K`}},
		{"note", Progress{Event: EventNote, Last: last, Note: "turn\x1b[2J 3"}, []string{": turn 3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			line := tc.p.Line()
			if strings.ContainsAny(line, "\x1b\x07\n\u202e") {
				t.Errorf("line %q holds a control character", line)
			}
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
		})
	}
}
