package swebench

import (
	"fmt"
	"sort"
	"strings"
)

// UnknownParserError is returned for a parser name the harness does not
// define.
type UnknownParserError struct{ Name string }

func (e *UnknownParserError) Error() string {
	return fmt.Sprintf("swebench: no log parser named %q", e.Name)
}

// UnknownRepoError is returned for a repository the harness has no entry
// for (in its parser map or its spec map).
type UnknownRepoError struct{ Repo string }

func (e *UnknownRepoError) Error() string {
	return fmt.Sprintf("swebench: repository %q is not one SWE-bench's harness knows", e.Repo)
}

// UnknownInstanceError is returned by a parser that dispatches on the
// instance (immutable-js, jekyll) for an instance it has no rule for, where
// the harness raises ValueError.
type UnknownInstanceError struct {
	Parser     string
	InstanceID string
}

func (e *UnknownInstanceError) Error() string {
	return fmt.Sprintf("swebench: %s has no rule for instance %q", e.Parser, e.InstanceID)
}

// parserAliases maps the harness's alias names to the function they name
// (log_parsers/python.py: parse_log_astroid = parse_log_pytest, …).
func parserAliases() map[string]string {
	return map[string]string{
		"parse_log_astroid":     "parse_log_pytest",
		"parse_log_flask":       "parse_log_pytest",
		"parse_log_marshmallow": "parse_log_pytest",
		"parse_log_pvlib":       "parse_log_pytest",
		"parse_log_pyvista":     "parse_log_pytest",
		"parse_log_sqlfluff":    "parse_log_pytest",
		"parse_log_xarray":      "parse_log_pytest",
		"parse_log_pydicom":     "parse_log_pytest_options",
		"parse_log_requests":    "parse_log_pytest_options",
		"parse_log_pylint":      "parse_log_pytest_options",
		"parse_log_astropy":     "parse_log_pytest_v2",
		"parse_log_scikit":      "parse_log_pytest_v2",
		"parse_log_sphinx":      "parse_log_pytest_v2",
	}
}

// parsers returns the parser functions by canonical name, in the variant
// the rules use.
func parsers(rules Rules) map[string]Parser {
	v := variantOf(rules)
	head, v21 := v.head, v.v21
	return map[string]Parser{
		"parse_log_pytest":         func(l string) map[string]Status { return parsePytest(l, v) },
		"parse_log_pytest_options": func(l string) map[string]Status { return parsePytestOptions(l, v) },
		"parse_log_pytest_v2":      func(l string) map[string]Status { return parsePytestV2(l, v) },
		"parse_log_matplotlib":     func(l string) map[string]Status { return parseMatplotlib(l, v) },
		"parse_log_seaborn":        parseSeaborn,
		"parse_log_django":         parseDjango,
		"parse_log_sympy":          func(l string) map[string]Status { return parseSympy(l, v21) },

		"parse_log_gotest":                 parseGoTest,
		"parse_log_cargo":                  parseCargo,
		"parse_log_maven":                  func(l string) map[string]Status { return parseMaven(l, head) },
		"parse_log_ant":                    parseAnt,
		"parse_log_gradle_custom":          func(l string) map[string]Status { return parseGradleCustom(l, head) },
		"parse_log_calypso":                parseCalypso,
		"parse_log_chart_js":               parseChartJS,
		"parse_log_marked":                 parseMarked,
		"parse_log_p5js":                   parseP5JS,
		"parse_log_react_pdf":              parseReactPDF,
		"parse_log_jest":                   func(l string) map[string]Status { return parseJest(l, head) },
		"parse_log_jest_json":              parseJestJSON,
		"parse_log_vitest":                 parseVitest,
		"parse_log_karma":                  parseKarma,
		"parse_log_tap":                    parseTAP,
		"parse_log_redis":                  parseRedis,
		"parse_log_jq":                     parseJq,
		"parse_log_doctest":                parseDoctest,
		"parse_log_micropython_test":       parseMicropython,
		"parse_log_googletest":             parseGoogletest,
		"parse_log_phpunit":                parsePHPUnit,
		"parse_log_minitest":               parseMinitest,
		"parse_log_cucumber":               parseCucumber,
		"parse_log_ruby_unit":              parseRubyUnit,
		"parse_log_rspec_transformed_json": parseRspecTransformedJSON,
	}
}

// dispatchers are the parsers that choose another parser by the instance:
// parse_log_immutable_js by the id's last "-" field, parse_log_jekyll by
// its second.
func dispatch(name, instanceID string) (string, error) {
	fields := strings.Split(instanceID, "-")
	switch name {
	case "parse_log_immutable_js":
		switch fields[len(fields)-1] {
		case "2006":
			return "parse_log_jest", nil
		case "2005":
			return "parse_log_jest_json", nil
		}
	case "parse_log_jekyll":
		if len(fields) > 1 {
			switch fields[1] {
			case "9141", "8047", "8167":
				return "parse_log_minitest", nil
			case "8761", "8771":
				return "parse_log_cucumber", nil
			}
		}
	default:
		return name, nil
	}
	return "", &UnknownInstanceError{Parser: name, InstanceID: instanceID}
}

// ParserNames returns the names of every parser the harness defines
// (PARSER_REGISTRY's keys with the Multilingual parsers of v4.1.0), sorted.
// Aliases (parse_log_flask for parse_log_pytest, …) are included.
func ParserNames() []string {
	var names []string
	for n := range parsers(DefaultRules) {
		names = append(names, n)
	}
	for n := range parserAliases() {
		names = append(names, n)
	}
	names = append(names, "parse_log_immutable_js", "parse_log_jekyll")
	sort.Strings(names)
	return names
}

// ParserByName returns the parser the harness calls name, as the rules
// define it. An alias resolves to the function it names. The two parsers
// that dispatch on the instance (parse_log_immutable_js, parse_log_jekyll)
// need ParserFor.
func ParserByName(name string, rules Rules) (Parser, error) {
	if err := rules.Check(); err != nil {
		return nil, err
	}
	if a, ok := parserAliases()[name]; ok {
		name = a
	}
	p, ok := parsers(rules)[name]
	if !ok {
		return nil, &UnknownParserError{Name: name}
	}
	return p, nil
}

// repoParsers is MAP_REPO_TO_PARSER of v4.1.0: the parser name each
// repository's logs are read with (the harness's own alias names).
func repoParsers() map[string]string {
	return map[string]string{
		// log_parsers/python.py
		"astropy/astropy":              "parse_log_astropy",
		"django/django":                "parse_log_django",
		"marshmallow-code/marshmallow": "parse_log_marshmallow",
		"matplotlib/matplotlib":        "parse_log_matplotlib",
		"mwaskom/seaborn":              "parse_log_seaborn",
		"pallets/flask":                "parse_log_flask",
		"psf/requests":                 "parse_log_requests",
		"pvlib/pvlib-python":           "parse_log_pvlib",
		"pydata/xarray":                "parse_log_xarray",
		"pydicom/pydicom":              "parse_log_pydicom",
		"pylint-dev/astroid":           "parse_log_astroid",
		"pylint-dev/pylint":            "parse_log_pylint",
		"pytest-dev/pytest":            "parse_log_pytest",
		"pyvista/pyvista":              "parse_log_pyvista",
		"scikit-learn/scikit-learn":    "parse_log_scikit",
		"sqlfluff/sqlfluff":            "parse_log_sqlfluff",
		"sphinx-doc/sphinx":            "parse_log_sphinx",
		"sympy/sympy":                  "parse_log_sympy",
		// log_parsers/go.py
		"caddyserver/caddy":     "parse_log_gotest",
		"hashicorp/terraform":   "parse_log_gotest",
		"prometheus/prometheus": "parse_log_gotest",
		"gohugoio/hugo":         "parse_log_gotest",
		"gin-gonic/gin":         "parse_log_gotest",
		// log_parsers/rust.py
		"burntsushi/ripgrep": "parse_log_cargo",
		"sharkdp/bat":        "parse_log_cargo",
		"astral-sh/ruff":     "parse_log_cargo",
		"tokio-rs/tokio":     "parse_log_cargo",
		"uutils/coreutils":   "parse_log_cargo",
		"nushell/nushell":    "parse_log_cargo",
		"tokio-rs/axum":      "parse_log_cargo",
		// log_parsers/java.py
		"google/gson":           "parse_log_maven",
		"apache/druid":          "parse_log_maven",
		"javaparser/javaparser": "parse_log_maven",
		"projectlombok/lombok":  "parse_log_ant",
		"apache/lucene":         "parse_log_gradle_custom",
		"reactivex/rxjava":      "parse_log_gradle_custom",
		// log_parsers/javascript.py
		"Automattic/wp-calypso":     "parse_log_calypso",
		"chartjs/Chart.js":          "parse_log_chart_js",
		"markedjs/marked":           "parse_log_marked",
		"processing/p5.js":          "parse_log_p5js",
		"diegomura/react-pdf":       "parse_log_react_pdf",
		"babel/babel":               "parse_log_jest",
		"vuejs/core":                "parse_log_vitest",
		"facebook/docusaurus":       "parse_log_jest",
		"immutable-js/immutable-js": "parse_log_immutable_js",
		"mrdoob/three.js":           "parse_log_tap",
		"preactjs/preact":           "parse_log_karma",
		"axios/axios":               "parse_log_tap",
		// log_parsers/c.py
		"redis/redis":             "parse_log_redis",
		"jqlang/jq":               "parse_log_jq",
		"nlohmann/json":           "parse_log_doctest",
		"micropython/micropython": "parse_log_micropython_test",
		"valkey-io/valkey":        "parse_log_redis",
		"fmtlib/fmt":              "parse_log_googletest",
		// log_parsers/php.py
		"phpoffice/phpspreadsheet":  "parse_log_phpunit",
		"laravel/framework":         "parse_log_phpunit",
		"php-cs-fixer/php-cs-fixer": "parse_log_phpunit",
		"briannesbitt/carbon":       "parse_log_phpunit",
		// log_parsers/ruby.py
		"jekyll/jekyll":     "parse_log_jekyll",
		"fluent/fluentd":    "parse_log_ruby_unit",
		"fastlane/fastlane": "parse_log_rspec_transformed_json",
		"jordansissel/fpm":  "parse_log_rspec_transformed_json",
		"faker-ruby/faker":  "parse_log_ruby_unit",
		"rubocop/rubocop":   "parse_log_rspec_transformed_json",
	}
}

// RepoParser returns the name of the parser the harness reads repo's logs
// with (MAP_REPO_TO_PARSER), e.g. "parse_log_django" for "django/django".
func RepoParser(repo string) (string, error) {
	name, ok := repoParsers()[repo]
	if !ok {
		return "", &UnknownRepoError{Repo: repo}
	}
	return name, nil
}

// Repos returns every repository RepoParser knows, sorted.
func Repos() []string {
	var repos []string
	for r := range repoParsers() {
		repos = append(repos, r)
	}
	sort.Strings(repos)
	return repos
}

// ParserFor returns the parser for one instance: name if it is not empty
// (HEAD's per-instance log_parser field), else the repository's. It
// resolves the parsers that dispatch on the instance id.
func ParserFor(repo, name, instanceID string, rules Rules) (Parser, error) {
	if name == "" {
		var err error
		if name, err = RepoParser(repo); err != nil {
			return nil, err
		}
	}
	name, err := dispatch(name, instanceID)
	if err != nil {
		return nil, err
	}
	return ParserByName(name, rules)
}

// failOnlyRepos are the repositories graded EvalType.FAIL_ONLY: a listed
// test fails only if the log records it FAILED (v3.0.14+ constants
// FAIL_ONLY_REPOS; HEAD's set is larger).
func failOnlyRepos(rules Rules) map[string]bool {
	if rules == RulesV2_0 || rules == RulesV2_1 {
		return map[string]bool{} // v2 grades every repository pass-and-fail
	}
	m := map[string]bool{"chartjs/Chart.js": true, "processing/p5.js": true, "markedjs/marked": true}
	if rules == RulesV5 {
		m["bpmn-io/bpmn-js"] = true
		m["openlayers/openlayers"] = true
		m["eslint/eslint"] = true
	}
	return m
}
