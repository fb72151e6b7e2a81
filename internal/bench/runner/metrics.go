package runner

import (
	"encoding/json"
	"path"
	"regexp"
	"strings"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/ledger"
	"github.com/trussdev/truss/internal/tool"
)

// Behaviour is what a run's ledger says the agent did.
type Behaviour struct {
	ToolCalls       map[string]int
	CapabilityCalls map[string]int
	Edits           bench.Edits
	Validation      bench.Validation
	Errors          bench.Errors
}

// The ledger entries' data members read here (docs/ledger.md).
type (
	callData struct {
		CallID  string `json:"call_id"`
		Tool    string `json:"tool"`
		Decoded bool   `json:"decoded"`
		Ops     []struct {
			Op   string          `json:"op"`
			Args json.RawMessage `json:"args"`
		} `json:"ops"`
	}
	resultData struct {
		CallID  string `json:"call_id"`
		IsError bool   `json:"is_error"`
		Results []struct {
			Op        string            `json:"op"`
			ExitCode  *int              `json:"exit_code"`
			TimedOut  bool              `json:"timed_out"`
			ErrorKind string            `json:"error_kind"`
			Changes   []tool.FileChange `json:"changes"`
		} `json:"results"`
	}
	responseData struct {
		Attempts int `json:"attempts"`
	}
)

// testCommand recognizes a shell command that runs a project's tests.
var testCommand = regexp.MustCompile(`\bgo\s+test\b|\bpytest\b|\bnpm\s+(run\s+)?test\b|\bcargo\s+(test|nextest)\b|\bmake\s+(check|test)\b|\btox\b|\bjest\b|\bvitest\b|\bmvn\b.*\btest\b|\bgradle\w*\b.*\btest\b|\bctest\b|\bphpunit\b|\brspec\b`)

// runsTests reports whether a shell command runs the tests: the task's
// own test command, or a known test runner.
func runsTests(cmd, taskTest string) bool {
	if taskTest != "" && strings.Contains(cmd, taskTest) {
		return true
	}
	return testCommand.MatchString(cmd)
}

// channel is the edit channel of an operation's file changes.
func channel(op string) string {
	switch {
	case op == string(tool.OpPatch) || op == string(tool.OpPatchOp):
		return "patch"
	case op == string(tool.OpExec):
		return "shell"
	case strings.HasPrefix(op, "file."):
		return "editor"
	}
	return ""
}

// ReadBehaviour reads a run's behaviour from its ledger's entries:
//
//   - tool_calls counts tool.call entries by tool name, capability_calls
//     their decoded operations by op;
//   - edits counts the distinct workspace files each channel changed, from
//     tool.result changes: file.patch and file.patch_op are "patch",
//     shell.exec "shell", every other file operation "editor" (changes
//     outside the workspace, such as memory files, do not count);
//   - validation: each validate call, and each shell command that runs
//     the tests (the task's test command or a known test runner), is a
//     run, passed when it exited 0 without error; finished_failing when
//     the last run failed;
//   - errors: tool results that failed for another reason than a
//     command's exit status, calls that could not be decoded or named
//     an unknown tool, and the provider's retries (attempts beyond the
//     first).
func ReadBehaviour(entries []ledger.Entry, taskTest string) (Behaviour, error) {
	b := Behaviour{ToolCalls: map[string]int{}, CapabilityCalls: map[string]int{}}
	// A call's kind of validation, by call id: "" none, else "validate"
	// or "shell".
	validation := map[string]string{}
	edits := map[string]map[string]bool{"editor": {}, "patch": {}, "shell": {}}
	decode := func(e ledger.Entry, v any) error {
		raw, err := json.Marshal(e.Data)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, v)
	}
	for _, e := range entries {
		switch e.Type {
		case "tool.call":
			var c callData
			if err := decode(e, &c); err != nil {
				return b, err
			}
			b.ToolCalls[c.Tool]++
			if !c.Decoded {
				b.Errors.InvalidCalls++
			}
			for _, op := range c.Ops {
				b.CapabilityCalls[op.Op]++
				switch op.Op {
				case string(tool.OpValidate):
					validation[c.CallID] = "validate"
				case string(tool.OpExec):
					var a tool.ExecArgs
					if json.Unmarshal(op.Args, &a) == nil && runsTests(a.Command, taskTest) {
						validation[c.CallID] = "shell"
					}
				}
			}
		case "tool.result":
			var r resultData
			if err := decode(e, &r); err != nil {
				return b, err
			}
			failed := false
			for _, res := range r.Results {
				switch tool.ErrorKind(res.ErrorKind) {
				case "", tool.ErrExit:
				case tool.ErrInvalidInput, tool.ErrUnknownTool:
					b.Errors.InvalidCalls++
				default:
					b.Errors.Tool++
				}
				if res.ErrorKind != "" || res.TimedOut || (res.ExitCode != nil && *res.ExitCode != 0) {
					failed = true
				}
				ch := channel(res.Op)
				for _, c := range res.Changes {
					for _, p := range []string{c.Path, c.MovedTo} {
						if ch != "" && p != "" && !path.IsAbs(p) {
							edits[ch][p] = true
						}
					}
				}
			}
			if _, ok := validation[r.CallID]; ok {
				b.Validation.RanTests = true
				b.Validation.Runs++
				b.Validation.LastPassed = !failed && !r.IsError
			}
		case "model.response":
			var r responseData
			if err := decode(e, &r); err != nil {
				return b, err
			}
			if r.Attempts > 1 {
				b.Errors.Retries += r.Attempts - 1
			}
		}
	}
	b.Validation.FinishedFailing = b.Validation.Runs > 0 && !b.Validation.LastPassed
	b.Edits = bench.Edits{Editor: len(edits["editor"]), Patch: len(edits["patch"]), Shell: len(edits["shell"])}
	return b, nil
}
