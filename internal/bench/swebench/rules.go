package swebench

import (
	"errors"
	"fmt"
	"strings"
)

// Rules names the release of SWE-bench's harness whose grading rules apply.
// Each verdict records the Rules that produced it.
type Rules string

// The rule sets. Each is named for the release whose code it follows; the
// releases between two of them grade the same way as the older one unless
// noted.
const (
	// RulesV2_0 is v2.0.13 (7336033d65d32ec62f9ce2419aa8f3a757b06ce2),
	// the rules of v2.0.0–v2.0.13: the whole log is parsed (after the last
	// ">>>>> Applied Patch (pred)", which test_output.txt does not hold);
	// the patch did not apply if the log holds ">>>>> Patch Apply Failed",
	// ">>>>> Reset Failed", ">>>>> Tests Errored", ">>>>> Tests Timed Out"
	// or "Failed to reset task environment", or lacks "applied patch" in
	// any case; only PASSED passes (XFAIL is neither passed nor failed); a
	// None patch is reported as {"none": true}.
	RulesV2_0 Rules = "swebench-v2.0.13"
	// RulesV2_1 is v2.1.7: as RulesV2_0, but XFAIL passes (v2.1.0),
	// parse_log_sympy first cuts a trailing "[OK]"/"[FAIL]" (v2.1.0–v2.1.7)
	// and a None patch is reported as patch_is_None (v2.1.5).
	RulesV2_1 Rules = "swebench-v2.1.7"
	// RulesV4_0 is v4.0.4, the rules of v3.0.15–v4.0.4: only the text
	// between ": '>>>>> Start Test Output'" and ": '>>>>> End Test Output'"
	// is parsed, and the patch did not apply if either marker is missing
	// or the log holds one of the first four v2 failure markers; the
	// Multilingual FAIL_ONLY repositories (Chart.js, p5.js, marked) fail a
	// test only when the log says FAILED.
	RulesV4_0 Rules = "swebench-v4.0.4"
	// RulesV4_1 is v4.1.0 (726c5461e2ef52d83cf1ea2107870a8bb3328d57): as
	// RulesV4_0, but when the text between the markers parses to nothing
	// the whole log is parsed instead.
	RulesV4_1 Rules = "swebench-v4.1.0"
	// RulesV5 is v5 (v5.0.0–HEAD 7a21e05772954cc81471ae19d56f436cecf43c54):
	// as RulesV4_1, and: a run whose log parses to nothing and shows no
	// sign a suite ran is not applied; a run whose ">>>>> Test Exit Code:
	// N" is non-zero while no test is FAILED or ERROR is not applied
	// (spoofed output); a skipped FAIL_TO_PASS test fails and a skipped
	// PASS_TO_PASS test is maintained; a listed id truncated inside its
	// parameters (more "[" than "]") matches the parsed names it prefixes;
	// report.json gains infra_failure; the pytest parsers drop pytest's
	// "SKIPPED [N]" summary lines, and parse_log_pytest_v2, parse_log_jest,
	// parse_log_maven and parse_log_gradle_custom are HEAD's.
	RulesV5 Rules = "swebench-v5"
)

// DefaultRules are the rules Truss grades with when the caller does not
// choose: v2.0.13, the release that graded the SWE-bench Verified
// leaderboard's 2024 submissions (docs/bench.md explains the choice).
const DefaultRules = RulesV2_0

// ErrUnknownRules is wrapped by the error for a Rules value this package
// does not define.
var ErrUnknownRules = errors.New("swebench: unknown rules")

// AllRules returns every defined rule set, oldest first.
func AllRules() []Rules {
	return []Rules{RulesV2_0, RulesV2_1, RulesV4_0, RulesV4_1, RulesV5}
}

// Check returns nil if r is a defined rule set, else an error wrapping
// ErrUnknownRules.
func (r Rules) Check() error {
	for _, k := range AllRules() {
		if r == k {
			return nil
		}
	}
	return fmt.Errorf("%w %q (want one of %v)", ErrUnknownRules, string(r), AllRules())
}

// ParseRules returns the rule set named s; "" is DefaultRules. It also
// accepts the bare release ("v4.1.0", "4.1.0") of a defined set.
func ParseRules(s string) (Rules, error) {
	if s == "" {
		return DefaultRules, nil
	}
	for _, r := range AllRules() {
		if s == string(r) || "swebench-"+s == string(r) || "swebench-v"+s == string(r) {
			return r, nil
		}
	}
	return "", Rules(s).Check()
}

func (r Rules) v2() bool { return r == RulesV2_0 || r == RulesV2_1 }

// DetectRules returns the rule set of the releases that write a test log
// like this one, from the markers their eval scripts print: v5's exit code
// line (RulesV5); v3.0.15–v4.1's start and end of the test output
// (RulesV4_1); else the v2 releases' (DefaultRules). A log alone does not
// tell v2.0 from v2.1, nor v4.0 from v4.1: for those, the caller chooses.
func DetectRules(log string) Rules {
	switch {
	case strings.Contains(log, MarkerTestExitCode):
		return RulesV5
	case strings.Contains(log, MarkerStartTestOutput) || strings.Contains(log, MarkerEndTestOutput):
		return RulesV4_1
	}
	return DefaultRules
}
