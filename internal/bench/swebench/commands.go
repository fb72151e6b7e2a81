package swebench

import (
	"fmt"
	"regexp"
	"strings"
)

// The test commands of constants/python.py (v4.1.0; v2.0.13's
// constants.py has the same values). TEST_PYTEST is assigned twice there;
// the second value, "pytest -rA", is the one in effect.
const (
	cmdPytest        = "pytest -rA"
	cmdAstropyPytest = "pytest -rA -vv -o console_output_style=classic --tb=no"
	cmdDjango        = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
	cmdDjangoNoPar   = "./tests/runtests.py --verbosity 2"
	cmdSeaborn       = "pytest --no-header -rA"
	cmdSphinx        = "tox --current-env -epy39 -v --"
	cmdSympy         = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"
)

// UnknownVersionError is returned for a version the repository's spec map
// has no entry for.
type UnknownVersionError struct {
	Repo, Version string
	// Known lists the versions the spec map has, in its order.
	Known []string
}

func (e *UnknownVersionError) Error() string {
	return fmt.Sprintf("swebench: %s has no spec for version %q (known: %s)", e.Repo, e.Version, strings.Join(e.Known, " "))
}

// InstanceCommandsError is returned for a SWE-bench Multilingual
// repository: its harness spec gives each instance (keyed by its pull
// request number) its own command list, which is task data, not a rule;
// the task must carry its commands (Truss's test_cmd field).
type InstanceCommandsError struct{ Repo string }

func (e *InstanceCommandsError) Error() string {
	return fmt.Sprintf("swebench: %s runs instance-specific test commands; take them from the task's test_cmd", e.Repo)
}

// versions returns the spec map's versions of a repository in the order
// the harness defines them, each with its test command.
type versionCmd struct{ version, cmd string }

func each(cmd string, versions ...string) []versionCmd {
	out := make([]versionCmd, len(versions))
	for i, v := range versions {
		out[i] = versionCmd{v, cmd}
	}
	return out
}

// pythonSpecs is MAP_REPO_VERSION_TO_SPECS_PY's test_cmd values.
func pythonSpecs() map[string][]versionCmd {
	django := append(each(cmdDjango, "1.7", "1.8"), each(cmdDjangoNoPar, "1.9")...)
	django = append(django, each(cmdDjango, "1.10", "1.11", "2.0", "2.1", "2.2", "1.4", "1.5", "1.6",
		"3.0", "3.1", "3.2", "4.0", "4.1", "4.2", "5.0", "5.1", "5.2")...)
	return map[string][]versionCmd{
		"astropy/astropy": append(each(cmdPytest, "3.0", "3.1", "3.2", "4.1", "4.2", "4.3", "5.0", "5.1", "5.2", "v5.3"),
			each(cmdAstropyPytest, "0.1", "0.2", "0.3", "0.4", "1.1", "1.2", "1.3")...),
		"django/django":         django,
		"matplotlib/matplotlib": each(cmdPytest, "3.5", "3.6", "3.7", "3.8", "3.9", "3.1", "3.2", "3.3", "3.4", "3.0", "2.0", "2.1", "2.2", "1.0", "1.1", "1.2", "1.3", "1.4", "1.5"),
		"marshmallow-code/marshmallow": each(cmdPytest, "2.18", "2.19", "2.20", "3.0", "3.1", "3.10", "3.11", "3.12", "3.13",
			"3.15", "3.16", "3.19", "3.2", "3.4", "3.8", "3.9"),
		"mwaskom/seaborn": each(cmdSeaborn, "0.11", "0.12", "0.13", "0.14"),
		"pallets/flask":   each(cmdPytest, "2.0", "2.1", "2.2", "2.3", "3.0", "3.1"),
		"psf/requests": each(cmdPytest, "0.7", "0.8", "0.9", "0.11", "0.13", "0.14", "1.1", "1.2", "2.0", "2.2",
			"2.3", "2.4", "2.5", "2.7", "2.8", "2.9", "2.10", "2.11", "2.12", "2.17",
			"2.18", "2.19", "2.22", "2.26", "2.25", "2.27", "2.31", "3.0"),
		"pvlib/pvlib-python": each(cmdPytest, "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"),
		"pydata/xarray":      each(cmdPytest, "0.12", "0.18", "0.19", "0.20", "2022.03", "2022.06", "2022.09", "2023.07", "2024.05"),
		"pydicom/pydicom":    each(cmdPytest, "1.0", "1.1", "1.2", "1.3", "1.4", "2.0", "2.1", "2.2", "2.3", "2.4", "3.0"),
		"pylint-dev/astroid": each(cmdPytest, "2.10", "2.12", "2.13", "2.14", "2.15", "2.16", "2.5", "2.6", "2.7", "2.8", "2.9", "3.0"),
		"pylint-dev/pylint":  each(cmdPytest, "2.10", "2.11", "2.13", "2.14", "2.15", "2.16", "2.17", "2.8", "2.9", "3.0", "3.1", "3.2", "3.3", "4.0"),
		"pytest-dev/pytest": each(cmdPytest, "4.4", "4.5", "4.6", "5.0", "5.1", "5.2", "5.3", "5.4", "6.0", "6.2", "6.3",
			"7.0", "7.1", "7.2", "7.4", "8.0", "8.1", "8.2", "8.3", "8.4"),
		"pyvista/pyvista": each(cmdPytest, "0.20", "0.21", "0.22", "0.23", "0.24", "0.25", "0.26", "0.27", "0.28", "0.29",
			"0.30", "0.31", "0.32", "0.33", "0.34", "0.35", "0.36", "0.37", "0.38", "0.39", "0.40", "0.41", "0.42", "0.43"),
		"scikit-learn/scikit-learn": each(cmdPytest, "0.20", "0.21", "0.22", "1.3", "1.4", "1.5", "1.6"),
		"sphinx-doc/sphinx": each(cmdSphinx, "1.5", "1.6", "1.7", "1.8", "2.0", "2.1", "2.2", "2.3", "2.4", "3.0",
			"3.1", "3.2", "3.3", "3.4", "3.5", "4.0", "4.1", "4.2", "4.3", "4.4", "4.5",
			"5.0", "5.1", "5.2", "5.3", "6.0", "6.2", "7.0", "7.1", "7.2", "7.3", "7.4", "8.0", "8.1"),
		"sqlfluff/sqlfluff": each(cmdPytest, "0.10", "0.11", "0.12", "0.13", "0.4", "0.5", "0.6", "0.8", "0.9",
			"1.0", "1.1", "1.2", "1.3", "1.4", "2.0", "2.1", "2.2"),
		"sympy/sympy": each(cmdSympy, "0.7", "1.0", "1.1", "1.10", "1.11", "1.12", "1.2", "1.4", "1.5", "1.6",
			"1.7", "1.8", "1.9", "1.13", "1.14"),
	}
}

// djangoEvalCommands is the eval_commands of django's specs: run before the
// tests, after the environment is activated.
func djangoEvalCommands(version string) []string {
	switch version {
	case "1.7", "1.8", "1.9", "1.10", "1.11", "2.0", "2.1", "2.2":
		return []string{"export LANG=en_US.UTF-8", "export LC_ALL=en_US.UTF-8",
			"export PYTHONIOENCODING=utf8", "export LANGUAGE=en_US:en"}
	case "3.0", "3.1", "3.2":
		return []string{"sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen",
			"export LANG=en_US.UTF-8", "export LANGUAGE=en_US:en", "export LC_ALL=en_US.UTF-8"}
	}
	return nil
}

// NonTestExts are the endings get_test_directives drops (NON_TEST_EXTS;
// "csv" has no dot in the harness, so any name ending in csv is dropped).
func NonTestExts() []string {
	return []string{".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml"}
}

// TestDirectives is get_test_directives: the b/ paths of the test patch's
// "diff --git a/… b/…" lines, in order, without those ending in a
// NonTestExts ending; for django/django each becomes a module label (".py"
// dropped, a leading "tests/" dropped, "/" made "."). Other repositories,
// sympy included, take the paths as they are.
func TestDirectives(repo, testPatch string) []string {
	var out []string
	for _, g := range regexp.MustCompile(`diff --git a/.* b/(.*)`).FindAllStringSubmatch(testPatch, -1) {
		d := g[1]
		skip := false
		for _, ext := range NonTestExts() {
			if strings.HasSuffix(d, ext) {
				skip = true
				break
			}
		}
		if skip {
			continue
		}
		if repo == "django/django" {
			d = strings.TrimSuffix(d, ".py")
			d = strings.TrimPrefix(d, "tests/")
			d = strings.ReplaceAll(d, "/", ".")
		}
		out = append(out, d)
	}
	return out
}

// Spec is what the harness runs to test one task.
type Spec struct {
	Repo, Version string
	// Setup are the spec's eval_commands, run before the tests (django's
	// locale settings).
	Setup []string
	// Command is the test command: the spec's test_cmd followed by the
	// test directives, joined by spaces, as make_eval_script_list_py
	// builds it.
	Command string
	// Directives are TestDirectives(Repo, test patch).
	Directives []string
	// Parser names the log parser (RepoParser).
	Parser string
}

// SpecFor returns the harness's test spec for a task of a SWE-bench
// (Python) repository: *UnknownRepoError for a repository the harness does
// not know, *InstanceCommandsError for a Multilingual one, and
// *UnknownVersionError for a version its spec map lacks.
func SpecFor(repo, version, testPatch string) (*Spec, error) {
	parser, err := RepoParser(repo)
	if err != nil {
		return nil, err
	}
	vs, ok := pythonSpecs()[repo]
	if !ok {
		return nil, &InstanceCommandsError{Repo: repo}
	}
	var known []string
	for _, vc := range vs {
		known = append(known, vc.version)
		if vc.version != version {
			continue
		}
		s := &Spec{Repo: repo, Version: version, Parser: parser, Directives: TestDirectives(repo, testPatch)}
		if repo == "django/django" {
			s.Setup = djangoEvalCommands(version)
		}
		s.Command = strings.Join(append([]string{vc.cmd}, s.Directives...), " ")
		return s, nil
	}
	return nil, &UnknownVersionError{Repo: repo, Version: version, Known: known}
}

// TestCommand returns the harness's test command for a task and the name of
// the parser that reads its log; the errors are SpecFor's.
func TestCommand(repo, version, testPatch string) (cmd, parser string, err error) {
	s, err := SpecFor(repo, version, testPatch)
	if err != nil {
		return "", "", err
	}
	return s.Command, s.Parser, nil
}
