// Package bench is Truss's benchmark runner: tasks in SWE-bench's format,
// arms (provider, model, surface, settings), runs of the agent loop in fresh
// workspaces, the grader at the verification boundary, and the results file
// the report reads.
package bench

import "strings"

// Result is one line of DIR/results.jsonl: one run (task × arm × repeat) of
// `truss bench run`, or one graded prediction of `truss bench grade`.
//
// The field names and JSON keys are the results file's format
// (docs/bench.md); readers other than Truss's own depend on them.
type Result struct {
	InstanceID string `json:"instance_id"`
	// Arm is the arm's name; for `bench grade` the prediction's
	// model_name_or_path.
	Arm string `json:"arm"`
	// Repeat counts from 1.
	Repeat   int  `json:"repeat"`
	Resolved bool `json:"resolved"`
	// PatchApplied is false when the model's patch did not apply to a
	// fresh checkout at base_commit ("not resolved: patch failed").
	PatchApplied bool `json:"patch_applied"`
	// Tests maps each listed FAIL_TO_PASS and PASS_TO_PASS test to
	// "passed", "failed" or "missing" (listed but did not run; counts as
	// failed). Unlisted tests are not in it.
	Tests map[string]string `json:"tests"`
	// Rules names the rules that decided the verdict: a SWE-bench harness
	// release ("swebench-v4.1.0") or "truss" (Truss's own reading of the
	// test runner's output); ImageID the image the grading ran in, when
	// it ran in one.
	Rules   string `json:"rules,omitempty"`
	ImageID string `json:"image_id,omitempty"`
	// VerdictSource says where the grading's verdicts came from ("go test
	// -json", "pytest", "junit", "exit status", "swebench:PARSER"), and
	// GradeNotes what the grader saw that bears on the verdict (a JUnit
	// report that disagrees with the test output, a model's patch that
	// changed the file the test command was detected from).
	VerdictSource string   `json:"verdict_source,omitempty"`
	GradeNotes    []string `json:"grade_notes,omitempty"`
	// TestCodeSetAside, ConfigChanged and UntrustedPackages are the
	// grading's (grade.Verdict's fields of the same names): the test files
	// of the model's patch put back as the task has them, the test
	// configuration it changed (graded as changed), and the Go packages
	// whose test binary reported tests it was not asked for (their listed
	// tests failed). A run with either of the last two is flagged
	// (Flagged): its verdict deserves a look at the patch.
	TestCodeSetAside  []string `json:"test_code_set_aside,omitempty"`
	ConfigChanged     []string `json:"config_changed,omitempty"`
	UntrustedPackages []string `json:"untrusted_packages,omitempty"`
	// TimedOut is the grading's: its setup and test commands did not
	// end in time, and the run resolves nothing.
	TimedOut bool `json:"timed_out,omitempty"`

	Turns   int     `json:"turns"`
	Tokens  Tokens  `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	// CostUnknown: the arm's model has no known prices, and CostUSD is 0,
	// not what the run spent.
	CostUnknown bool    `json:"cost_unknown,omitempty"`
	WallS       float64 `json:"wall_s"`
	ModelS      float64 `json:"model_s"`
	// ToolS is the agent's own tool calls' time (its commands, its
	// validation); HarnessS what is left of WallS without the model's,
	// the tools' and the grading tests' time: the runner's and the
	// harness's own cost.
	ToolS      float64 `json:"tool_s"`
	HarnessS   float64 `json:"harness_s"`
	StopReason string  `json:"stop_reason"`
	// ToolCalls counts calls by the tool name the model used;
	// CapabilityCalls by capability (file.view, shell.exec, …).
	ToolCalls       map[string]int `json:"tool_calls"`
	CapabilityCalls map[string]int `json:"capability_calls"`
	// Edits counts the files changed through each channel, from the
	// ledger's file changes.
	Edits      Edits      `json:"edits"`
	Validation Validation `json:"validation"`
	Errors     Errors     `json:"errors"`
	Ledger     LedgerRef  `json:"ledger"`

	// Worker and Deliveries say which worker ran it and how many
	// deliveries it took (scale-out; empty on a single machine's run
	// before the queue existed).
	Worker     string `json:"worker,omitempty"`
	Deliveries int    `json:"deliveries,omitempty"`
	// WorkerVersion is the version of the worker that made the run, as
	// its signed verdict states it: build version and revision, grader
	// and queue-protocol versions (scale-out).
	WorkerVersion string `json:"worker_version,omitempty"`

	// Error is set only when the run itself failed for a reason other
	// than the model's work (a repository that cannot be checked out, a
	// crash). Such a run is not resolved.
	Error string `json:"error,omitempty"`
}

// Test verdicts in Result.Tests.
const (
	TestPassed  = "passed"
	TestFailed  = "failed"
	TestMissing = "missing"
)

// Tokens are a run's token counts.
type Tokens struct {
	Input      int64 `json:"input"`
	Output     int64 `json:"output"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
}

// Edits counts changed files by the channel that changed them.
type Edits struct {
	Editor int `json:"editor"`
	Patch  int `json:"patch"`
	Shell  int `json:"shell"`
}

// Validation is what the agent did to check its work before it finished.
type Validation struct {
	// RanTests: the agent ran the task's tests or the validate tool.
	RanTests bool `json:"ran_tests"`
	Runs     int  `json:"runs"`
	// LastPassed: the last such run passed.
	LastPassed bool `json:"last_passed"`
	// FinishedFailing: the agent ended its work after a failing run.
	FinishedFailing bool `json:"finished_failing"`
}

// Errors counts what went wrong along the way without ending the run.
type Errors struct {
	Tool         int `json:"tool"`
	InvalidCalls int `json:"invalid_calls"`
	Retries      int `json:"retries"`
}

// LedgerRef names the run's signed ledger.
type LedgerRef struct {
	Dir  string `json:"dir"`
	Root string `json:"root"`
}

// Flagged reports whether the run's grading saw something that bears on
// its verdict beyond the tests' output: test configuration the patch
// changed, or a test binary whose output could not be trusted.
func (r *Result) Flagged() bool { return len(r.ConfigChanged) > 0 || len(r.UntrustedPackages) > 0 }

// Flags says in a few words why the run is flagged ("" when it is not).
func (r *Result) Flags() string {
	var f []string
	if len(r.ConfigChanged) > 0 {
		f = append(f, "test configuration changed: "+strings.Join(r.ConfigChanged, ", "))
	}
	if len(r.UntrustedPackages) > 0 {
		f = append(f, "test binary not trusted: "+strings.Join(r.UntrustedPackages, ", "))
	}
	return strings.Join(f, "; ")
}
