package swebench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/trussdev/truss/internal/bench"
)

func readLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "e2e", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGradeEndToEnd grades logs written for these tests in the shape of
// real harness logs (test_output.txt) and compares the report with the
// report.json the harness writes for such a log, per rule set.
func TestGradeEndToEnd(t *testing.T) {
	django := Instance{
		InstanceID: "django__django-99001", Repo: "django/django", Version: "4.0",
		FailToPass: []string{"test_union_order (queries.tests.QuerySetTests)"},
		PassToPass: []string{"test_in_list (queries.tests.QuerySetTests)", "test_exists (queries.tests.QuerySetTests)", "test_slow (queries.tests.QuerySetTests)"},
	}
	astropy := Instance{
		InstanceID: "astropy__astropy-99002", Repo: "astropy/astropy", Version: "5.1",
		FailToPass: []string{"astropy/units/tests/test_format.py::test_ogip_grammar_fail[log(photon"},
		PassToPass: []string{"astropy/units/tests/test_format.py::test_unit_grammar"},
	}
	astropyPrefix := Instance{InstanceID: "astropy__astropy-99008", Repo: "astropy/astropy", Version: "5.1",
		FailToPass: []string{"astropy/units/tests/test_format.py::test_param[a-"}}
	pytest := Instance{
		InstanceID: "pytest-dev__pytest-99003", Repo: "pytest-dev/pytest", Version: "7.0",
		FailToPass: []string{"testing/test_skipping.py::test_fixed", "testing/test_skipping.py::test_known"},
		PassToPass: []string{"testing/test_skipping.py::test_other"},
	}
	pytestSkipF2P := pytest
	pytestSkipF2P.FailToPass = []string{"testing/test_skipping.py::test_fixed", "testing/test_skipping.py::test_gone"}
	spoof := Instance{InstanceID: "pallets__flask-99004", Repo: "pallets/flask", Version: "2.3",
		FailToPass: []string{"tests/test_core.py::test_fix"}, PassToPass: []string{"tests/test_core.py::test_keep"}}
	sympy := Instance{InstanceID: "sympy__sympy-99005", Repo: "sympy/sympy", Version: "1.12",
		FailToPass: []string{"test_equality"}, PassToPass: []string{"test_structure"}}
	outside := Instance{InstanceID: "pallets__flask-99006", Repo: "pallets/flask", Version: "2.3",
		FailToPass: []string{"tests/test_a.py::test_a"}}

	type want struct {
		applied, resolved bool
		f2p, p2p          Outcome
		tests             map[string]string
	}
	o := func(s, f []string) Outcome {
		if s == nil {
			s = []string{}
		}
		if f == nil {
			f = []string{}
		}
		return Outcome{Success: s, Failure: f}
	}
	cases := []struct {
		name  string
		inst  Instance
		log   string
		rules Rules
		want  want
	}{
		// A skipped P2P test lands in neither list; resolved.
		{"django resolved v4.1", django, "django-resolved.log", RulesV4_1, want{true, true,
			o(django.FailToPass, nil), o(django.PassToPass[:2], nil),
			map[string]string{django.FailToPass[0]: bench.TestPassed, django.PassToPass[0]: bench.TestPassed,
				django.PassToPass[1]: bench.TestPassed, django.PassToPass[2]: TestSkipped}}},
		{"django resolved v2.0", django, "django-resolved.log", RulesV2_0, want{true, true,
			o(django.FailToPass, nil), o(django.PassToPass[:2], nil), nil}},
		// v5: a skipped P2P test is maintained.
		{"django resolved v5", django, "django-resolved.log", RulesV5, want{true, true,
			o(django.FailToPass, nil), o(django.PassToPass, nil), nil}},
		// A dataset id cut at a space inside the parameters: v4.1's
		// parse_log_pytest_v2 cuts the log's name at the same space, so
		// it matches exactly; HEAD's keeps the whole name and v5 matches
		// the id as a prefix. Resolved either way, as in the harness.
		{"astropy truncated v4.1", astropy, "astropy-truncated.log", RulesV4_1, want{true, true,
			o(astropy.FailToPass, nil), o(astropy.PassToPass, nil), nil}},
		{"astropy truncated v5", astropy, "astropy-truncated.log", RulesV5, want{true, true,
			o(astropy.FailToPass, nil), o(astropy.PassToPass, nil), nil}},
		// An id truncated elsewhere: missing before v5, a prefix in v5.
		{"truncated prefix v4.1", astropyPrefix, "astropy-truncated.log", RulesV4_1, want{true, false,
			o(nil, astropyPrefix.FailToPass), o(nil, nil),
			map[string]string{astropyPrefix.FailToPass[0]: bench.TestMissing}}},
		{"truncated prefix v5", astropyPrefix, "astropy-truncated.log", RulesV5, want{true, true,
			o(astropyPrefix.FailToPass, nil), o(nil, nil),
			map[string]string{astropyPrefix.FailToPass[0]: bench.TestPassed}}},
		// XFAIL passes from v2.1; v2.0's parser does not know the word.
		{"xfail v4.1", pytest, "pytest-skip-xfail.log", RulesV4_1, want{true, true,
			o(pytest.FailToPass, nil), o(pytest.PassToPass, nil), nil}},
		{"xfail v2.0", pytest, "pytest-skip-xfail.log", RulesV2_0, want{true, false,
			o(pytest.FailToPass[:1], pytest.FailToPass[1:]), o(pytest.PassToPass, nil),
			map[string]string{pytest.FailToPass[0]: bench.TestPassed, pytest.FailToPass[1]: bench.TestMissing, pytest.PassToPass[0]: bench.TestPassed}}},
		// A missing F2P test fails.
		{"missing f2p", pytestSkipF2P, "pytest-skip-xfail.log", RulesV4_1, want{true, false,
			o(pytestSkipF2P.FailToPass[:1], pytestSkipF2P.FailToPass[1:]), o(pytest.PassToPass, nil), nil}},
		// Exit code 1 with only PASSED lines: resolved before v5, not applied in v5.
		{"spoofed v4.1", spoof, "spoofed.log", RulesV4_1, want{true, true,
			o(spoof.FailToPass, nil), o(spoof.PassToPass, nil), nil}},
		{"spoofed v5", spoof, "spoofed.log", RulesV5, want{false, false, Outcome{}, Outcome{}, nil}},
		// No markers: v2 grades the whole log, v3+ says not applied.
		{"old format v2.0", sympy, "old-format.log", RulesV2_0, want{true, false,
			o(nil, sympy.FailToPass), o(sympy.PassToPass, nil), nil}},
		{"old format v4.1", sympy, "old-format.log", RulesV4_1, want{false, false, Outcome{}, Outcome{}, nil}},
		// Results printed after the end marker: v4.0 finds none, v4.1 falls back.
		{"outside markers v4.0", outside, "stderr-outside.log", RulesV4_0, want{true, false,
			o(nil, outside.FailToPass), o(nil, nil), nil}},
		{"outside markers v4.1", outside, "stderr-outside.log", RulesV4_1, want{true, true,
			o(outside.FailToPass, nil), o(nil, nil), nil}},
		{"patch failed", spoof, "patch-failed.log", RulesV4_1, want{false, false, Outcome{}, Outcome{}, nil}},
		{"patch failed v2", spoof, "patch-failed.log", RulesV2_0, want{false, false, Outcome{}, Outcome{}, nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := Grade(c.inst, readLog(t, c.log), c.rules)
			if err != nil {
				t.Fatal(err)
			}
			if v.Rules != c.rules || v.PatchApplied != c.want.applied || v.Resolved != c.want.resolved {
				t.Fatalf("rules %s applied %v resolved %v, want %s %v %v", v.Rules, v.PatchApplied, v.Resolved, c.rules, c.want.applied, c.want.resolved)
			}
			if c.want.applied {
				if !reflect.DeepEqual(v.FailToPass, c.want.f2p) || !reflect.DeepEqual(v.PassToPass, c.want.p2p) {
					t.Errorf("F2P %+v P2P %+v, want %+v %+v", v.FailToPass, v.PassToPass, c.want.f2p, c.want.p2p)
				}
			}
			if c.want.tests != nil && !reflect.DeepEqual(v.Tests, c.want.tests) {
				t.Errorf("tests %v, want %v", v.Tests, c.want.tests)
			}
			// The report must say the same as the verdict.
			r := v.Report()[c.inst.InstanceID]
			if r.PatchSuccessfullyApplied != v.PatchApplied || r.Resolved != v.Resolved || !r.PatchExists {
				t.Errorf("report %+v disagrees with verdict", r)
			}
			if (r.InfraFailure != nil) != (c.rules == RulesV5) {
				t.Errorf("infra_failure present %v under %s", r.InfraFailure != nil, c.rules)
			}
		})
	}
}

// TestReportJSON compares the report with report.json files of the
// harness's exact bytes (json.dumps(report, indent=4)), written for these
// tests from the harness's get_eval_report.
func TestReportJSON(t *testing.T) {
	inst := Instance{InstanceID: "django__django-99001", Repo: "django/django", Version: "4.0",
		FailToPass: []string{"test_union_order (queries.tests.QuerySetTests)"},
		PassToPass: []string{"test_in_list (queries.tests.QuerySetTests)", "test_exists (queries.tests.QuerySetTests)", "test_slow (queries.tests.QuerySetTests)", "test_gone (queries.tests.Q) — ü"}}
	for _, rules := range []Rules{RulesV2_0, RulesV4_1, RulesV5} {
		v, err := Grade(inst, readLog(t, "django-resolved.log"), rules)
		if err != nil {
			t.Fatal(err)
		}
		got := v.Report().MarshalPython()
		golden := filepath.Join("testdata", "e2e", "report."+string(rules)+".json")
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s report:\n%s\nwant\n%s", rules, got, want)
		}
		parsed, err := ParseReport(want)
		if err != nil {
			t.Fatal(err)
		}
		if !parsed.Equal(v.Report()) {
			t.Errorf("%s: parsed report differs from the verdict's", rules)
		}
		var generic map[string]any
		if err := json.Unmarshal(got, &generic); err != nil {
			t.Errorf("%s: not JSON: %v", rules, err)
		}
	}
	none, err := NoPatch(inst, RulesV2_0)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(none.Report().MarshalPython()); got != "{\n    \"django__django-99001\": {\n        \"patch_is_None\": false,\n        \"patch_exists\": false,\n        \"patch_successfully_applied\": false,\n        \"resolved\": false,\n        \"none\": true\n    }\n}" {
		t.Errorf("v2.0 none report:\n%s", got)
	}
	none, _ = NoPatch(inst, RulesV4_1)
	if r := none.Report()[inst.InstanceID]; !r.PatchIsNone || r.None != nil || r.TestsStatus != nil {
		t.Errorf("v4.1 none report %+v", r)
	}
}

func TestGradeErrors(t *testing.T) {
	if _, err := Grade(Instance{Repo: "django/django"}, "", "swebench-v9"); !asErr(err, new(error)) || err == nil {
		t.Error("unknown rules accepted")
	}
	var re *UnknownRepoError
	if _, err := Grade(Instance{Repo: "x/y"}, "", DefaultRules); !asErr(err, &re) {
		t.Errorf("unknown repo: %v", err)
	}
	for _, s := range []string{"", "v4.1.0", "4.1.0", "swebench-v5"} {
		if _, err := ParseRules(s); err != nil {
			t.Errorf("ParseRules(%q): %v", s, err)
		}
	}
	if _, err := ParseRules("v3"); err == nil {
		t.Error("ParseRules(v3) accepted")
	}
}

// FAIL_ONLY repositories fail a test only when the log says FAILED.
func TestFailOnly(t *testing.T) {
	inst := Instance{InstanceID: "markedjs__marked-99007", Repo: "markedjs/marked", Version: "1.0",
		FailToPass: []string{"Marked Code spans should handle backticks", "Marked lists"}}
	log := "Applied patch test/specs.js cleanly.\n: '>>>>> Start Test Output'\n1) Marked Code spans should handle backticks\n: '>>>>> End Test Output'\n"
	v, err := Grade(inst, log, RulesV4_1)
	if err != nil {
		t.Fatal(err)
	}
	if v.Resolved || !reflect.DeepEqual(v.FailToPass.Failure, inst.FailToPass[:1]) || !reflect.DeepEqual(v.FailToPass.Success, inst.FailToPass[1:]) {
		t.Errorf("fail-only: %+v", v.FailToPass)
	}
	if v.Tests["Marked lists"] != bench.TestPassed {
		t.Errorf("an unlisted-in-log test of a fail-only repo is passed: %v", v.Tests)
	}
}
