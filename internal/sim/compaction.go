package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/lazyre"
)

// summaryMarker ends every summary the simulated model gives: how many
// model turns the summarized history held.
var summaryMarker = lazyre.Regexp{Expr: `\[simulated summary of ([0-9]+) model turns\]`}

// isSummaryRequest reports whether a request asks for a summary: the text
// after its last assistant turn contains the compaction prompt.
func isSummaryRequest(script *Script, body []byte) bool {
	prompt := DefaultCompactionPrompt
	if c := script.Compaction; c != nil && c.Prompt != "" {
		prompt = c.Prompt
	}
	return strings.Contains(lastResults(body), prompt)
}

// summaryStep is the step that answers a summary request whose history
// holds turns model turns.
func summaryStep(script *Script, turns int) *Step {
	st := &Step{Say: DefaultSummary}
	if c := script.Compaction; c != nil {
		if c.Say != "" {
			st.Say = c.Say
		}
		st.Faults = c.Faults
	}
	st.Say += fmt.Sprintf("\n\n[simulated summary of %d model turns]", turns)
	return st
}

// summarized returns the model turns that the latest summary in a
// request's history replaced (0 without one). A compacted history puts
// its summary before every model turn it kept, so these add to the turns
// the request holds.
func summarized(body []byte) int {
	m := summaryMarker.Get().FindAllSubmatch(body, -1)
	if len(m) == 0 {
		return 0
	}
	n, err := strconv.Atoi(string(m[len(m)-1][1]))
	if err != nil {
		return 0
	}
	return n
}
