package swebench

import (
	"reflect"
	"testing"
)

const djangoTestPatch = `diff --git a/tests/queries/tests.py b/tests/queries/tests.py
--- a/tests/queries/tests.py
+++ b/tests/queries/tests.py
diff --git a/tests/admin_views/test_forms.py b/tests/admin_views/test_forms.py
diff --git a/tests/fixtures/data.json b/tests/fixtures/data.json
diff --git a/docs/ref/models.txt b/docs/ref/models.txt
`

func TestTestCommand(t *testing.T) {
	cases := []struct {
		repo, version, patch string
		cmd, parser          string
	}{
		{"django/django", "4.0", djangoTestPatch,
			"./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 queries.tests admin_views.test_forms", "parse_log_django"},
		{"django/django", "1.9", djangoTestPatch,
			"./tests/runtests.py --verbosity 2 queries.tests admin_views.test_forms", "parse_log_django"},
		{"sympy/sympy", "1.12", "diff --git a/sympy/core/tests/test_basic.py b/sympy/core/tests/test_basic.py\n",
			"PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose sympy/core/tests/test_basic.py", "parse_log_sympy"},
		{"sphinx-doc/sphinx", "7.1", "diff --git a/tests/test_ext_autodoc.py b/tests/test_ext_autodoc.py\ndiff --git a/tests/roots/test-ext/conf.py b/tests/roots/test-ext/conf.py\n",
			"tox --current-env -epy39 -v -- tests/test_ext_autodoc.py tests/roots/test-ext/conf.py", "parse_log_sphinx"},
		{"astropy/astropy", "1.3", "diff --git a/astropy/io/tests/test_x.py b/astropy/io/tests/test_x.py\n",
			"pytest -rA -vv -o console_output_style=classic --tb=no astropy/io/tests/test_x.py", "parse_log_astropy"},
		{"astropy/astropy", "5.1", "diff --git a/astropy/io/tests/test_x.py b/astropy/io/tests/test_x.py\n",
			"pytest -rA astropy/io/tests/test_x.py", "parse_log_astropy"},
		{"mwaskom/seaborn", "0.12", "diff --git a/tests/test_core.py b/tests/test_core.py\ndiff --git a/tests/data.csv b/tests/data.csv\n",
			"pytest --no-header -rA tests/test_core.py", "parse_log_seaborn"},
		{"psf/requests", "2.27", "diff --git a/tests/test_requests.py b/tests/test_requests.py\n",
			"pytest -rA tests/test_requests.py", "parse_log_requests"},
		{"pallets/flask", "2.3", "", "pytest -rA", "parse_log_flask"},
	}
	for _, c := range cases {
		cmd, parser, err := TestCommand(c.repo, c.version, c.patch)
		if err != nil {
			t.Errorf("%s %s: %v", c.repo, c.version, err)
			continue
		}
		if cmd != c.cmd || parser != c.parser {
			t.Errorf("%s %s:\n got %q %s\nwant %q %s", c.repo, c.version, cmd, parser, c.cmd, c.parser)
		}
	}
	s, err := SpecFor("django/django", "2.2", djangoTestPatch)
	if err != nil || len(s.Setup) != 4 || s.Setup[2] != "export PYTHONIOENCODING=utf8" {
		t.Errorf("django 2.2 setup: %+v %v", s, err)
	}
	var ve *UnknownVersionError
	if _, _, err := TestCommand("django/django", "9.9", ""); !asErr(err, &ve) || len(ve.Known) == 0 {
		t.Errorf("unknown version: %v", err)
	}
	var ie *InstanceCommandsError
	if _, _, err := TestCommand("caddyserver/caddy", "6411", ""); !asErr(err, &ie) {
		t.Errorf("multilingual: %v", err)
	}
	var re *UnknownRepoError
	if _, _, err := TestCommand("x/y", "1", ""); !asErr(err, &re) {
		t.Errorf("unknown repo: %v", err)
	}
}

func TestTestDirectives(t *testing.T) {
	patch := "diff --git a/a b/c/test_x.py\ndiff --git a/p b/q/file.csv\ndiff --git a/p b/q/mycsv\ndiff --git a/x y b/x y/test z.py\n"
	if got, want := TestDirectives("pytest-dev/pytest", patch), []string{"c/test_x.py", "x y/test z.py"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q want %q", got, want)
	}
	if got, want := TestDirectives("django/django", "diff --git a/tests/x/tests.py b/tests/x/tests.py\ndiff --git a/django/tests/y.py b/django/tests/y.py\n"),
		[]string{"x.tests", "django.tests.y"}; !reflect.DeepEqual(got, want) {
		t.Errorf("django: got %q want %q", got, want)
	}
}
