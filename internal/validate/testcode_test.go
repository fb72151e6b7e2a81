package validate_test

import (
	"testing"

	"github.com/trussdev/truss/internal/validate"
)

func TestIsTestCode(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"calc_test.go", true},
		{"a/b/zz_main_test.go", true},
		{"calc.go", false},
		{"testdata/x.go", true}, // only tests read testdata
		{"pkg/testdata/add.golden", true},
		{"conftest.py", true},
		{"tests/unit/conftest.py", true},
		{"tests/test_calc.py", true},
		{"pkg/calc_test.py", true},
		{"tests/helpers.py", true}, // SWE-bench's split: under tests/, test code
		{"tests/testing.py", true},
		{"tests/__init__.py", true},
		{"tests/runtests.py", true}, // Django's runner
		{"bin/test", true},          // sympy's runner
		{"django/contrib/auth/tests.py", true},
		{"pytest.py", true}, // shadows pytest under python -m pytest
		{"_pytest/runner.py", true},
		{"pluggy/__init__.py", true},
		{"vendor/modules.txt", true},
		{"vendor/github.com/stretchr/testify/assert/assertions.go", true},
		{"sub/vendor/x/y.go", true},
		{"vendor/README.md", false},
		{"e2e/run.sh", true},
		{"src/testutil/helpers.go", false}, // not one of the words, as a whole
		{"attestation.go", false},
		{"conftest.pyc", false},
		{"test_data.json", false},
		{"contest.py", false},
	} {
		if got := validate.IsTestCode(tc.path); got != tc.want {
			t.Errorf("IsTestCode(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
