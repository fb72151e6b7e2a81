package grade_test

import (
	"maps"
	"testing"

	"github.com/trussdev/truss/internal/bench/grade"
)

func TestParseGoTestJSON(t *testing.T) {
	out := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0}
{"Action":"fail","Package":"p","Test":"TestB/sub","Elapsed":0}
{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"pass","Package":"q","Test":"TestB/sub","Elapsed":0}
# a line that is not an event
{"ImportPath":"r [r.test]","Action":"build-fail"}
{"Action":"fail","Package":"p","Elapsed":0}
`
	v, ok := grade.ParseGoTestJSON([]byte(out))
	want := grade.Verdicts{"TestA": "passed", "p.TestA": "passed", "TestB/sub": "failed", "p.TestB/sub": "failed",
		"q.TestB/sub": "passed", "TestC": "failed", "p.TestC": "failed"}
	if !ok || !maps.Equal(v, want) {
		t.Fatalf("%v %v", ok, v)
	}
	if _, ok := grade.ParseGoTestJSON([]byte("ok  \tp\t0.1s\n")); ok {
		t.Fatal("plain output read as JSON")
	}
}

func TestParsePytest(t *testing.T) {
	for _, tc := range []struct {
		name string
		out  string
		ok   bool
		want grade.Verdicts
	}{
		{"-v and -rA", `tests/test_a.py::test_one PASSED                                   [ 25%]
tests/test_a.py::test_two FAILED                                   [ 50%]
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
PASSED tests/test_b.py::TestK::test_p[a - b]
FAILED tests/test_a.py::test_two - AssertionError: assert 1 == 2
ERROR tests/test_c.py::test_err - fixture 'x' not found
XFAIL tests/test_c.py::test_xf - reason
XPASS tests/test_c.py::test_xp
SKIPPED [1] tests/test_c.py:10: unconditional skip
FAILED some text that is not a test
========== 2 failed, 3 passed in 0.12s ==========
`, true, grade.Verdicts{"tests/test_a.py::test_one": "passed", "tests/test_a.py::test_two": "failed",
			"tests/test_b.py::TestK::test_p[a - b]": "passed", "tests/test_c.py::test_err": "failed",
			"tests/test_c.py::test_xf": "passed", "tests/test_c.py::test_xp": "failed"}},
		// pytest 7.2 -rA, a module whose import prints pytest's lines (a
		// summary header among them) and then fails: two summaries are
		// a forged report, read as one with no verdicts (every listed
		// test missing).
		{"collection error with forged lines", `============================= test session starts ==============================
platform linux -- Python 3.11.2, pytest-7.2.1, pluggy-1.0.0+repack
rootdir: /tmp/g2py, configfile: pytest.ini
collected 1 item / 1 error

==================================== ERRORS ====================================
______________________ ERROR collecting tests/test_add.py ______________________
ImportError while importing test module '/tmp/g2py/tests/test_add.py'.
Hint: make sure your test modules/packages have valid Python names.
Traceback:
tests/test_add.py:1: in <module>
    from calc import add
calc/__init__.py:8: in <module>
    raise ImportError("not ready")
E   ImportError: not ready
------------------------------- Captured stdout --------------------------------
PASSED tests/test_add.py::test_add
tests/test_sub.py::test_sub PASSED [ 50%]
=== short test summary info ===
PASSED tests/test_add.py::test_add
=========================== short test summary info ============================
ERROR tests/test_add.py
!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
=============================== 1 error in 0.10s ===============================
`, true, grade.Verdicts{}},
		// A summary printed once pytest is done (an atexit handler of the
		// graded code), after pytest's own and its counts.
		{"summary printed at exit", `tests/test_a.py::test_one FAILED [100%]
=========================== short test summary info ============================
FAILED tests/test_a.py::test_one - assert 1 == 2
============================== 1 failed in 0.02s ===============================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
`, true, grade.Verdicts{}},
		// The same without pytest's own summary (no -rA): a summary after
		// the counts.
		{"summary after the counts", `tests/test_a.py::test_one FAILED [100%]
============================== 1 failed in 0.02s ===============================
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
============================== 1 passed in 0.02s ===============================
`, true, grade.Verdicts{}},
		// pytest -rA --color=yes: the same report in colour.
		{"colour", "tests/test_a.py::test_one \x1b[32mPASSED\x1b[0m\x1b[32m [ 50%]\x1b[0m\ntests/test_a.py::test_two \x1b[31mFAILED\x1b[0m\x1b[31m [100%]\x1b[0m\n" +
			"\x1b[36m\x1b[1m=========================== short test summary info ============================\x1b[0m\n" +
			"\x1b[32mPASSED\x1b[0m tests/test_a.py::\x1b[1mtest_one\x1b[0m\n\x1b[31mFAILED\x1b[0m tests/test_a.py::\x1b[1mtest_two\x1b[0m - assert 1 == 2\n" +
			"\x1b[31m========================= \x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.02s\x1b[0m\x1b[31m ==========================\x1b[0m\n",
			true, grade.Verdicts{"tests/test_a.py::test_one": "passed", "tests/test_a.py::test_two": "failed"}},
		// Captured output of a passing test (-rA's PASSES section) and
		// of a failing one: only the summary counts.
		{"captured output", `tests/test_a.py::test_one PASSED [ 50%]
tests/test_a.py::test_two FAILED [100%]

=================================== FAILURES ===================================
___________________________________ test_two ___________________________________
----------------------------- Captured stdout call -----------------------------
PASSED tests/test_a.py::test_two
tests/test_a.py::test_two PASSED [100%]
==================================== PASSES ====================================
___________________________________ test_one ___________________________________
----------------------------- Captured stdout call -----------------------------
PASSED tests/test_a.py::test_three
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
FAILED tests/test_a.py::test_two - assert False
========================= 1 failed, 1 passed in 0.02s ==========================
`, true, grade.Verdicts{"tests/test_a.py::test_one": "passed", "tests/test_a.py::test_two": "failed"}},
		// A runner that prints pytest's summary lines with no header.
		{"no header", "PASSED tests/test_a.py::test_one\nFAILED tests/test_a.py::test_two\n", true,
			grade.Verdicts{"tests/test_a.py::test_one": "passed", "tests/test_a.py::test_two": "failed"}},
		{"nothing", "ok\n", false, grade.Verdicts{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := grade.ParsePytest([]byte(tc.out))
			if ok != tc.ok || !maps.Equal(v, tc.want) {
				t.Fatalf("%v %v, want %v %v", ok, v, tc.ok, tc.want)
			}
		})
	}
}

func TestParseJUnit(t *testing.T) {
	doc := `<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_a" name="test_one" time="0.1"/>
<testcase classname="tests.test_a" name="test_two"><failure message="x">trace</failure></testcase>
<testcase classname="tests.test_a" name="test_three"><skipped/></testcase>
<testsuite name="nested"><testcase name="TestGo"><error/></testcase></testsuite>
</testsuite></testsuites>`
	v, ok, err := grade.ParseJUnit([]byte(doc))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	for name, want := range map[string]string{"test_one": "passed", "tests.test_a.test_one": "passed", "tests.test_a::test_two": "failed",
		"test_three": "failed", "TestGo": "failed"} {
		if v[name] != want {
			t.Errorf("%s: %q, want %q", name, v[name], want)
		}
	}
	if _, _, err := grade.ParseJUnit([]byte("<testsuite><testcase name='x'>")); err == nil {
		t.Error("no error for a cut document")
	}
}

func FuzzParseGoTestJSON(f *testing.F) {
	f.Add([]byte(`{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"fail","Test":"TestA"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _ := grade.ParseGoTestJSON(b)
		for _, s := range v {
			if s != "passed" && s != "failed" {
				t.Fatalf("verdict %q", s)
			}
		}
	})
}

func FuzzParsePytest(f *testing.F) {
	f.Add([]byte("PASSED a.py::t\nFAILED a.py::u - x\na.py::v SKIPPED [ 1%]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _ := grade.ParsePytest(b)
		for k, s := range v {
			if k == "" || (s != "passed" && s != "failed") {
				t.Fatalf("%q: %q", k, s)
			}
		}
	})
}

func FuzzParseJUnit(f *testing.F) {
	f.Add([]byte(`<testsuite><testcase classname="c" name="n"><failure/></testcase></testsuite>`))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _, _ := grade.ParseJUnit(b)
		for _, s := range v {
			if s != "passed" && s != "failed" {
				t.Fatalf("verdict %q", s)
			}
		}
	})
}
