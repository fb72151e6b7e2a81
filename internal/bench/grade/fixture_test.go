package grade_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
)

// gitRepo is a scratch repository for a fixture.
type gitRepo struct {
	t   *testing.T
	dir string
}

// git runs git in the repository with a fixed identity and no user or
// system configuration, and returns its trimmed output.
func (r gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.email=dev@example.org", "-c", "user.name=Dev",
		"-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// write writes files (path: content) into the repository.
func (r gitRepo) write(files map[string]string) {
	r.t.Helper()
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
}

// commitFix makes the base commit of files, then the fix commit of fix
// (source and tests) over it, and returns the base and the fix's diff
// split as SWE-bench splits it: patch (everything outside tests/) and
// testPatch (tests/).
func commitFix(t *testing.T, base, fix map[string]string, msg string) (dir, baseCommit, patch, testPatch string) {
	t.Helper()
	r := gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	r.write(base)
	r.git("add", "-A")
	r.git("commit", "-qm", "Initial import")
	baseCommit = r.git("rev-parse", "HEAD")
	r.write(fix)
	r.git("add", "-A")
	r.git("commit", "-qm", msg)
	patch = r.git("diff", baseCommit, "HEAD", "--", ".", ":(exclude)tests") + "\n"
	testPatch = r.git("diff", baseCommit, "HEAD", "--", "tests") + "\n"
	return r.dir, baseCommit, patch, testPatch
}

// flaskTask writes a small repository laid out like pallets/flask (a
// src/ package, tests/, pyproject.toml) whose nested blueprint names are
// split wrongly (partition where rpartition is meant), with the fix
// committed after the base, and returns the task as SWE-bench publishes
// it: repo "pallets/flask", a version its spec table knows, no test_cmd,
// the gold patch and the test patch adding the FAIL_TO_PASS case. One
// PASS_TO_PASS test comes from the test patch (passing before and after),
// two from the existing tests.
func flaskTask(t *testing.T) *bench.Task {
	t.Helper()
	base := map[string]string{
		"pyproject.toml": `[project]
name = "Flask"
version = "2.3.0.dev"
requires-python = ">=3.8"

[tool.pytest.ini_options]
testpaths = ["tests"]
pythonpath = ["src"]
filterwarnings = ["error"]
`,
		"src/flask/__init__.py": `from .helpers import get_debug_flag as get_debug_flag

__version__ = "2.3.0.dev"
`,
		"src/flask/helpers.py": `from __future__ import annotations

import os
from functools import lru_cache


def get_debug_flag() -> bool:
    """Get whether debug mode should be enabled for the app, indicated by the
    :envvar:` + "`FLASK_DEBUG`" + ` environment variable. The default is ` + "`False`" + `.
    """
    val = os.environ.get("FLASK_DEBUG")
    return bool(val and val.lower() not in {"0", "false", "no"})


@lru_cache(maxsize=None)
def _split_blueprint_path(name: str) -> list[str]:
    out: list[str] = [name]

    if "." in name:
        out.extend(_split_blueprint_path(name.partition(".")[0]))

    return out
`,
		"tests/conftest.py": `import pytest


@pytest.fixture(autouse=True)
def _reset_os_environ(monkeypatch):
    monkeypatch.delenv("FLASK_DEBUG", raising=False)
`,
		"tests/test_helpers.py": `import pytest

from flask.helpers import get_debug_flag


@pytest.mark.parametrize(
    ("debug", "expect"),
    [
        ("", False),
        ("0", False),
        ("False", False),
        ("No", False),
        ("True", True),
    ],
)
def test_get_debug_flag(monkeypatch, debug, expect):
    monkeypatch.setenv("FLASK_DEBUG", debug)
    assert get_debug_flag() == expect
`,
	}
	fix := map[string]string{
		"src/flask/helpers.py": strings.Replace(base["src/flask/helpers.py"], `name.partition(".")`, `name.rpartition(".")`, 1),
		"tests/test_helpers.py": strings.Replace(base["tests/test_helpers.py"], "from flask.helpers import get_debug_flag\n",
			"from flask.helpers import _split_blueprint_path\nfrom flask.helpers import get_debug_flag\n", 1) + `

@pytest.mark.parametrize(
    ("name", "expect"),
    [
        ("a", ["a"]),
        ("a.b", ["a.b", "a"]),
        ("a.b.c", ["a.b.c", "a.b", "a"]),
    ],
)
def test_split_blueprint_path(name, expect):
    assert _split_blueprint_path(name) == expect
`,
	}
	dir, baseCommit, patch, testPatch := commitFix(t, base, fix, "Fix nested blueprint names split at the first dot (#4970)")
	return &bench.Task{
		InstanceID: "pallets__flask-4970", Repo: "pallets/flask", RepoDir: dir, BaseCommit: baseCommit,
		ProblemStatement: "A blueprint nested two levels deep does not run its parent's before_request functions.",
		Patch:            patch, TestPatch: testPatch, Version: "2.3",
		FailToPass: bench.TestList{"tests/test_helpers.py::test_split_blueprint_path[a.b.c-expect2]"},
		PassToPass: bench.TestList{"tests/test_helpers.py::test_split_blueprint_path[a.b-expect1]",
			"tests/test_helpers.py::test_get_debug_flag[-False]", "tests/test_helpers.py::test_get_debug_flag[True-True]"},
	}
}

// djangoTask writes a small repository laid out like django/django
// (django/, tests/runtests.py, tests/utils_tests/) and returns a task of
// it as SWE-bench publishes one, version 3.0 (whose spec sets the locale
// before the tests). Its runner is not real: the tests that use it give
// the log a fake shell returns.
func djangoTask(t *testing.T) *bench.Task {
	t.Helper()
	base := map[string]string{
		"django/__init__.py":   "VERSION = (3, 0, 0, 'alpha', 0)\n",
		"django/utils/text.py": "def capfirst(x):\n    return x and str(x)[0].upper() + str(x)[1:]\n",
		"tests/runtests.py":    "#!/usr/bin/env python\nraise SystemExit('not a real runner')\n",
		"tests/utils_tests/test_text.py": "from django.test import SimpleTestCase\nfrom django.utils import text\n\n\n" +
			"class TestUtilsText(SimpleTestCase):\n    def test_capfirst(self):\n        self.assertEqual(text.capfirst('a'), 'A')\n",
	}
	fix := map[string]string{
		"django/utils/text.py": "def capfirst(x):\n    if not x:\n        return x\n    return str(x)[0].upper() + str(x)[1:]\n",
		"tests/utils_tests/test_text.py": base["tests/utils_tests/test_text.py"] +
			"\n    def test_capfirst_lazy(self):\n        self.assertEqual(text.capfirst(''), '')\n",
	}
	dir, baseCommit, patch, testPatch := commitFix(t, base, fix, "Fixed #30000 -- Made capfirst() keep empty values.")
	return &bench.Task{
		InstanceID: "django__django-30000", Repo: "django/django", RepoDir: dir, BaseCommit: baseCommit,
		Patch: patch, TestPatch: testPatch, Version: "3.0",
		FailToPass: bench.TestList{"test_capfirst_lazy (utils_tests.test_text.TestUtilsText)"},
		PassToPass: bench.TestList{"test_capfirst (utils_tests.test_text.TestUtilsText)"},
	}
}
