package grade

import (
	"maps"
	"testing"
)

// The output is read by the parser for what the command runs: a pytest
// run's output holding lines shaped like go test -json events is read as
// pytest's report, and a Go run's holding pytest's lines as go test -json;
// a command of neither kind has both read, and a log holding both is no
// one run's.
func TestReadOutputFollowsTheCommand(t *testing.T) {
	goLog := `{"Action":"pass","Package":"m/calc","Test":"TestAdd"}` + "\n"
	pyLog := "============================= test session starts ==============================\n" +
		"=========================== short test summary info ============================\n" +
		"FAILED tests/test_add.py::test_add - assert 1 == 2\n" +
		"========================= 1 failed in 0.01s ==========================\n"
	forgedPy := `{"Action": "pass", "Test": "tests/test_add.py::test_add"}` + "\n" + pyLog
	forgedGo := goLog + "PASSED tests/test_add.py::test_add\n"
	for _, tc := range []struct {
		name, cmd, out string
		source         string
		want           Verdicts
		note           bool
	}{
		{"detected pytest, go events printed", detectedPytest, forgedPy, sourcePytest, Verdicts{"tests/test_add.py::test_add": "failed"}, false},
		{"a task's pytest, go events printed", "cd src && pytest -rA tests", forgedPy, sourcePytest, Verdicts{"tests/test_add.py::test_add": "failed"}, false},
		{"pytest with go events only", "python -m pytest -rA", goLog, "exit status", nil, false},
		{"detected go test, pytest lines printed", detectedGoTest, forgedGo, sourceGo, Verdicts{"TestAdd": "passed", "m/calc.TestAdd": "passed"}, false},
		{"go test -json with pytest lines only", "go test -json ./calc", "PASSED tests/test_add.py::test_add\n", "exit status", nil, false},
		{"go test without -json", "go test ./...", forgedGo, "", Verdicts{}, true},
		{"make, go events", "make test", goLog, sourceGo, Verdicts{"TestAdd": "passed", "m/calc.TestAdd": "passed"}, false},
		{"make, pytest", "make test", pyLog, sourcePytest, Verdicts{"tests/test_add.py::test_add": "failed"}, false},
		{"make, both", "make test", forgedPy, sourceMixed, Verdicts{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, source, note := readOutput(tc.out, tc.cmd)
			if tc.source == "" {
				tc.source = sourceMixed
			}
			if source != tc.source || !maps.Equal(v, tc.want) || (note != "") != tc.note {
				t.Fatalf("%v from %q, note %q; want %v from %q", v, source, note, tc.want, tc.source)
			}
		})
	}
}
