package validate

import "strings"

// IsTestCode reports whether the file at rel (slash-separated, relative to
// the repository's root) is test code the grader holds to the task's
// version, at any depth:
//
//   - test files: Go's *_test.go; Python's test_*.py, *_test.py,
//     conftest.py and Django's tests.py; a test runner the command runs
//     (runtests.py, a file named test or tests: sympy's bin/test);
//   - everything under a directory named test, tests, testing, testdata
//     (which only Go's tests read: golden files) or e2e: SWE-bench splits
//     a fix commit into patch and test_patch by these words in its paths,
//     so a gold patch never touches them;
//   - what stands in for the test runner where the checkout comes first
//     on the import path (python -m pytest): pytest.py, and pytest's own
//     packages pytest, _pytest, pluggy and iniconfig, as a module or a
//     directory;
//   - Go's vendored packages (vendor/modules.txt and .go files under a
//     vendor directory): a fake vendored assertion library passes every
//     assertion of the task's own tests.
func IsTestCode(rel string) bool {
	parts := strings.Split(rel, "/")
	base := parts[len(parts)-1]
	for _, d := range parts[:len(parts)-1] {
		switch d {
		case "test", "tests", "testing", "testdata", "e2e", "pytest", "_pytest", "pluggy", "iniconfig":
			return true
		case "vendor":
			if base == "modules.txt" || strings.HasSuffix(base, ".go") {
				return true
			}
		}
	}
	switch base {
	case "conftest.py", "tests.py", "runtests.py", "test", "tests", "pytest.py", "pluggy.py", "iniconfig.py":
		return true
	}
	switch {
	case strings.HasSuffix(base, "_test.go"):
		return true
	case strings.HasSuffix(base, ".py"):
		return strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py")
	}
	return false
}
