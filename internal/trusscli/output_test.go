package trusscli

import (
	"errors"
	"testing"

	"github.com/trussdev/truss/internal/agent"
	"github.com/trussdev/truss/internal/harness"
)

// TestClosedOutputSaysWhatWasSaved: the message of a run whose output was
// closed says what became of its session, whatever the run's outcome.
func TestClosedOutputSaysWhatWasSaved(t *testing.T) {
	const closed = "truss: the output was closed; "
	for _, tc := range []struct {
		res  harness.Outcome
		err  error
		want string
	}{
		{harness.Outcome{Agent: agent.Outcome{Status: agent.StatusCanceled}, SessionID: "S"}, nil,
			"the run was stopped and saved as cancelled: session S"},
		{harness.Outcome{Agent: agent.Outcome{Status: agent.StatusCanceled}}, nil,
			"the run was stopped (the session is not saved: --no-session)"},
		{harness.Outcome{Agent: agent.Outcome{Status: agent.StatusCompleted}, SessionID: "S"}, nil,
			"the run had ended (completed) and is saved: session S"},
		{harness.Outcome{Agent: agent.Outcome{Status: agent.StatusFailed}, SessionID: "S", Unreached: true}, errors.New("ollama: cannot reach Ollama"),
			"the model was never reached (ollama: cannot reach Ollama), and nothing was saved"},
	} {
		if got := closedOutput(&tc.res, tc.err); got != closed+tc.want {
			t.Errorf("%+v:\n got %s\nwant %s", tc.res, got, closed+tc.want)
		}
	}
}
