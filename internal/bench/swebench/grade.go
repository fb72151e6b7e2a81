package swebench

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/bench"
)

// The harness's log markers (constants/__init__.py).
const (
	MarkerApplyPatchFail  = ">>>>> Patch Apply Failed"
	MarkerApplyPatchPass  = ">>>>> Applied Patch"
	MarkerResetFailed     = ">>>>> Reset Failed"
	MarkerTestsError      = ">>>>> Tests Errored"
	MarkerTestsTimeout    = ">>>>> Tests Timed Out"
	MarkerStartTestOutput = ">>>>> Start Test Output"
	MarkerEndTestOutput   = ">>>>> End Test Output"
	// MarkerTestExitCode is followed by ": N" (v5's eval script).
	MarkerTestExitCode = ">>>>> Test Exit Code"
	// v2ResetFailed is the fifth not-applied marker of the v2 rules.
	v2ResetFailed = "Failed to reset task environment"
)

// TestSkipped is the verdict of a listed test the harness counted neither
// passed nor failed (a SKIPPED test before v5, an XFAIL test under v2.0, a
// status word the harness does not know), or a SKIPPED test under v5.
// internal/bench defines the other verdicts.
const TestSkipped = "skipped"

// Instance is what grading needs of a task.
type Instance struct {
	InstanceID string
	// Repo is the repository as the harness names it, "owner/name".
	Repo string
	// Version is the task's version field (its spec key).
	Version    string
	FailToPass []string
	PassToPass []string
	// Parser optionally names the log parser (HEAD's per-instance
	// log_parser field); empty means the repository's.
	Parser string
}

// Outcome is one test list's grading: the listed tests that succeeded and
// those that failed, each in the list's order. A test in neither was
// counted neither way.
type Outcome struct {
	Success []string `json:"success"`
	Failure []string `json:"failure"`
}

// Verdict is the grading of one instance's test log.
type Verdict struct {
	Rules      Rules
	InstanceID string
	// PatchIsNone: the prediction had no patch (model_patch null); nothing
	// else was graded.
	PatchIsNone bool
	// PatchApplied is report.json's patch_successfully_applied: the log
	// passed the rules' checks (no failure marker, markers present, and
	// under v5 a credible run).
	PatchApplied bool
	Resolved     bool
	// InfraFailure and InfraFailureReason are v5's advisory classification
	// of a run that was not applied (reason empty when none matched).
	InfraFailure       bool
	InfraFailureReason string
	// Status is the parsed status map (empty when the patch did not apply).
	Status map[string]Status
	// FailToPass and PassToPass are the lists' outcomes.
	FailToPass, PassToPass Outcome
	// Tests maps each listed test to bench.TestPassed, bench.TestFailed,
	// bench.TestMissing (listed, not in the log: failed) or TestSkipped.
	Tests map[string]string
}

// NoPatch is the verdict for a prediction with no patch at all.
func NoPatch(inst Instance, rules Rules) (*Verdict, error) {
	if err := rules.Check(); err != nil {
		return nil, err
	}
	return &Verdict{Rules: rules, InstanceID: inst.InstanceID, PatchIsNone: true,
		Status: map[string]Status{}, Tests: missingAll(inst)}, nil
}

func missingAll(inst Instance) map[string]string {
	t := map[string]string{}
	for _, n := range append(append([]string(nil), inst.FailToPass...), inst.PassToPass...) {
		t[n] = bench.TestMissing
	}
	return t
}

// Grade grades a test log (the content of the harness's test_output.txt, or
// a log of the same shape) under the rules: whether the patch applied, the
// FAIL_TO_PASS and PASS_TO_PASS outcomes, and whether the instance is
// resolved (every listed test succeeded; an empty list counts as all
// succeeded). The error is for an unknown rule set, repository or parser.
func Grade(inst Instance, log string, rules Rules) (*Verdict, error) {
	if err := rules.Check(); err != nil {
		return nil, err
	}
	parse, err := ParserFor(inst.Repo, inst.Parser, inst.InstanceID, rules)
	if err != nil {
		return nil, fmt.Errorf("grading %s: %w", inst.InstanceID, err)
	}
	v := &Verdict{Rules: rules, InstanceID: inst.InstanceID, Status: map[string]Status{}}
	sm, applied := statusMap(log, parse, rules)
	if !applied {
		v.Tests = missingAll(inst)
		if rules == RulesV5 {
			if reason, env := classifyInfra(log); reason != "" {
				v.InfraFailure, v.InfraFailureReason = env, reason
			}
		}
		return v, nil
	}
	v.PatchApplied = true
	v.Status = sm
	g := grader{sm: sm, rules: rules, failOnly: failOnlyRepos(rules)[inst.Repo]}
	v.FailToPass = g.outcome(inst.FailToPass, false)
	v.PassToPass = g.outcome(inst.PassToPass, true)
	// get_resolution_status: FULL when both rates are 1, a rate being
	// success/(success+failure) and 1 for an empty total; so resolved
	// exactly when neither list has a failure.
	v.Resolved = len(v.FailToPass.Failure) == 0 && len(v.PassToPass.Failure) == 0
	v.Tests = g.verdicts(inst, v)
	return v, nil
}

// statusMap is get_logs_eval: the parsed status map and whether the patch
// applied, under the rules.
func statusMap(content string, parse Parser, rules Rules) (map[string]Status, bool) {
	bad := []string{MarkerApplyPatchFail, MarkerResetFailed, MarkerTestsError, MarkerTestsTimeout}
	if rules.v2() {
		bad = append(bad, v2ResetFailed)
	}
	for _, b := range bad {
		if strings.Contains(content, b) {
			return nil, false
		}
	}
	if rules.v2() {
		if !strings.Contains(strings.ToLower(content), "applied patch") {
			return nil, false
		}
		// content.split(">>>>> Applied Patch (pred)")[-1]
		if i := strings.LastIndex(content, MarkerApplyPatchPass+" (pred)"); i >= 0 {
			content = content[i+len(MarkerApplyPatchPass+" (pred)"):]
		}
		return parse(content), true
	}
	if !strings.Contains(content, MarkerStartTestOutput) || !strings.Contains(content, MarkerEndTestOutput) {
		return nil, false
	}
	sm := parse(testOutputSlice(content))
	if len(sm) == 0 && (rules == RulesV4_1 || rules == RulesV5) {
		sm = parse(content)
	}
	if rules != RulesV5 {
		return sm, true
	}
	if len(sm) == 0 && !suiteRan(content) {
		return nil, false
	}
	if code, ok := testExitCode(content); ok && code != 0 && len(sm) > 0 {
		failed := false
		for _, s := range sm {
			if s == StatusFailed || s == StatusError {
				failed = true
				break
			}
		}
		if !failed {
			return nil, false
		}
	}
	return sm, true
}

// testOutputSlice is content.split(START)[1].split(END)[0]: the text after
// the first start marker, up to the next start marker or the first end
// marker, whichever comes first.
func testOutputSlice(content string) string {
	_, after, _ := strings.Cut(content, MarkerStartTestOutput)
	if i := strings.Index(after, MarkerStartTestOutput); i >= 0 {
		after = after[:i]
	}
	before, _, _ := strings.Cut(after, MarkerEndTestOutput)
	return before
}

// suiteRan is v5's SUITE_RAN: evidence in the log that a test runner ran at
// least one test.
func suiteRan(content string) bool {
	return regexp.MustCompile(pyRe(`(?m)Executed [1-9]⟨d⟩* of ⟨d⟩+` +
		`|TOTAL: [1-9]⟨d⟩* (?:SUCCESS|FAILED)` +
		`|[1-9]⟨d⟩* passing` +
		`|Tests:⟨s⟩+[1-9]⟨d⟩*` +
		`|Test Suites:⟨s⟩+(?:⟨d⟩+ ⟨w⟩+, )*[1-9]⟨d⟩* total` +
		`|^# tests [1-9]⟨d⟩*` +
		`|[1-9]⟨d⟩* specs?, ⟨d⟩+ failures?` +
		`|': ok$`)).MatchString(content)
}

// testExitCode is v5's parse_test_exit_code: the first ">>>>> Test Exit
// Code: N" in the log.
func testExitCode(content string) (int, bool) {
	g := regexp.MustCompile(pyRe(regexp.QuoteMeta(MarkerTestExitCode) + `:⟨s⟩*(-?[0-9]+)`)).FindStringSubmatch(content)
	if g == nil {
		return 0, false
	}
	n, err := strconv.Atoi(g[1])
	if err != nil {
		return 0, false // out of range; Python's int would not overflow
	}
	return n, true
}

// classifyInfra is v5's infra_failure.classify_text: the first signature
// that matches the log, and whether it is an environment fault (rather
// than an ambiguous one).
func classifyInfra(text string) (reason string, environment bool) {
	if text == "" {
		return "", false
	}
	for _, s := range []struct {
		reason string
		env    bool
		re     string
	}{
		{"browser_launch_failed", true, `Failed to launch|Failed to connect to the bus`},
		{"display_unavailable", true, `cannot open display|Missing X server|unable to open X display`},
		{"out_of_memory", true, `Cannot allocate memory|OutOfMemoryError|^Killed$`},
		{"container_unavailable", true, `Error response from daemon|Cannot connect to the Docker daemon`},
		{"network_unreachable", true, `Could not resolve host|Temporary failure in name resolution`},
		{"missing_module", false, `Cannot find module|MODULE_NOT_FOUND|ModuleNotFoundError`},
		{"no_tests_collected", false, `no tests ran|collected 0 items`},
		{"tests_timed_out", false, pyRe(`Timeout error: ⟨d⟩+ seconds exceeded`)},
	} {
		if regexp.MustCompile(`(?m)` + s.re).MatchString(text) {
			return s.reason, s.env
		}
	}
	return "", false
}

// grader holds what get_eval_tests_report needs.
type grader struct {
	sm       map[string]Status
	rules    Rules
	failOnly bool
}

// key is v5's _resolve_case (exact name, else for a name with more "["
// than "]" the parsed names it prefixes, when they agree on pass versus
// fail); before v5 only the exact name.
func (g grader) key(name string) (string, bool) {
	if _, ok := g.sm[name]; ok {
		return name, true
	}
	if g.rules != RulesV5 || strings.Count(name, "[") <= strings.Count(name, "]") {
		return "", false
	}
	var matches []string
	for k := range g.sm {
		if strings.HasPrefix(k, name) {
			matches = append(matches, k)
		}
	}
	if len(matches) == 0 {
		return "", false
	}
	// The harness takes the first match in log order; Go's map has none,
	// so the smallest name stands in (the same outcome unless the matches
	// mix SKIPPED with other non-passing statuses).
	sort.Strings(matches)
	pass := g.passing(g.sm[matches[0]])
	for _, k := range matches[1:] {
		if g.passing(g.sm[k]) != pass {
			return "", false
		}
	}
	return matches[0], true
}

func (g grader) passing(s Status) bool {
	return s == StatusPassed || (s == StatusXFail && g.rules != RulesV2_0)
}

func (g grader) passed(name string) bool {
	k, ok := g.key(name)
	return ok && g.passing(g.sm[k])
}

func (g grader) failed(name string) bool {
	k, ok := g.key(name)
	if !ok {
		return true
	}
	s := g.sm[k]
	return s == StatusFailed || s == StatusError || (g.rules == RulesV5 && s == StatusSkipped)
}

func (g grader) maintained(name string) bool {
	if g.passed(name) {
		return true
	}
	k, ok := g.key(name)
	return g.rules == RulesV5 && ok && g.sm[k] == StatusSkipped
}

// outcome is get_eval_tests_report for one list; p2p selects v5's
// maintenance rule.
func (g grader) outcome(tests []string, p2p bool) Outcome {
	o := Outcome{Success: []string{}, Failure: []string{}}
	for _, t := range tests {
		switch {
		case g.failOnly:
			if s, ok := g.sm[t]; ok && s == StatusFailed {
				o.Failure = append(o.Failure, t)
			} else {
				o.Success = append(o.Success, t)
			}
		case p2p && g.maintained(t), !p2p && g.passed(t):
			o.Success = append(o.Success, t)
		case g.failed(t):
			o.Failure = append(o.Failure, t)
		}
	}
	return o
}

// verdicts is Truss's per-test view of the outcome.
func (g grader) verdicts(inst Instance, v *Verdict) map[string]string {
	t := map[string]string{}
	one := func(name string, o Outcome) string {
		k, present := g.key(name)
		switch {
		case present && g.sm[k] == StatusSkipped:
			return TestSkipped
		case contains(o.Success, name):
			return bench.TestPassed
		case contains(o.Failure, name) && !present:
			return bench.TestMissing
		case contains(o.Failure, name):
			return bench.TestFailed
		}
		return TestSkipped
	}
	for _, n := range inst.FailToPass {
		t[n] = one(n, v.FailToPass)
	}
	for _, n := range inst.PassToPass {
		t[n] = one(n, v.PassToPass)
	}
	return t
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
