package swebench

import (
	"regexp"
	"strings"
)

// Ports of swebench/harness/log_parsers/python.py (v4.1.0
// 726c5461e2ef52d83cf1ea2107870a8bb3328d57; log_parsers.py in the v2
// tags). The parsers of HEAD 7a21e05772954cc81471ae19d56f436cecf43c54 that
// differ, and v2.0's, take a variant.

// variant selects a release's version of a parser.
type variant struct {
	// head: HEAD 7a21e05's parsers.
	head bool
	// v20: v2.0.x, whose TestStatus has no XFAIL, so the parsers that test
	// a line against the status words do not know it.
	v20 bool
	// v21: v2.1.x (parse_log_sympy's "[OK]"/"[FAIL]" cut).
	v21 bool
}

func variantOf(r Rules) variant {
	return variant{head: r == RulesV5, v20: r == RulesV2_0, v21: r == RulesV2_1}
}

// words are the TestStatus values of the variant's release.
func (v variant) words() []Status {
	if v.v20 {
		return statusWords()[:4]
	}
	return statusWords()
}

// startsWithStatus is any(line.startswith(x.value) for x in TestStatus).
func (v variant) startsWithStatus(line string) bool {
	for _, s := range v.words() {
		if strings.HasPrefix(line, string(s)) {
			return true
		}
	}
	return false
}

// endsWithStatus is any(line.endswith(x.value) for x in TestStatus).
func (v variant) endsWithStatus(line string) bool {
	for _, s := range v.words() {
		if strings.HasSuffix(line, string(s)) {
			return true
		}
	}
	return false
}

// isSkipSummary is HEAD's _is_skip_summary: pytest's "SKIPPED [N]
// path:line: reason" summary line, whose [N] is a count, not a test.
func isSkipSummary(status, name string) bool {
	if status != string(StatusSkipped) || len(name) < 3 || name[0] != '[' || name[len(name)-1] != ']' {
		return false
	}
	return regexp.MustCompile(`^\[` + reD + `+\]$`).MatchString(name)
}

// parsePytest is parse_log_pytest: a line that starts with a status word
// gives name = its second word, status = its first; on FAILED lines " - "
// becomes " " first. head adds HEAD's skip-summary filter.
func parsePytest(log string, v variant) map[string]Status {
	m := map[string]Status{}
	for _, line := range pyLines(log) {
		if !v.startsWithStatus(line) {
			continue
		}
		if strings.HasPrefix(line, string(StatusFailed)) {
			line = strings.ReplaceAll(line, " - ", " ")
		}
		tc := pyFields(line)
		if len(tc) <= 1 {
			continue
		}
		if v.head && isSkipSummary(tc[0], tc[1]) {
			continue
		}
		m[tc[1]] = Status(tc[0])
	}
	return m
}

// parsePytestOptions is parse_log_pytest_options: parse_log_pytest, but in
// a name of the form main[option] an option that starts with one "/", and
// holds no "*", is cut to "/" + its last path element.
func parsePytestOptions(log string, v variant) map[string]Status {
	option := regexp.MustCompile(`(.*?)\[(.*)\]`)
	m := map[string]Status{}
	for _, line := range pyLines(log) {
		if !v.startsWithStatus(line) {
			continue
		}
		if strings.HasPrefix(line, string(StatusFailed)) {
			line = strings.ReplaceAll(line, " - ", " ")
		}
		tc := pyFields(line)
		if len(tc) <= 1 {
			continue
		}
		if v.head && isSkipSummary(tc[0], tc[1]) {
			continue
		}
		name := tc[1]
		if g := option.FindStringSubmatch(tc[1]); g != nil {
			main, opt := g[1], g[2]
			if strings.HasPrefix(opt, "/") && !strings.HasPrefix(opt, "//") && !strings.Contains(opt, "*") {
				opt = "/" + opt[strings.LastIndex(opt, "/")+1:]
			}
			name = main + "[" + opt + "]"
		}
		m[name] = Status(tc[0])
	}
	return m
}

// parseMatplotlib is parse_log_matplotlib: parse_log_pytest after
// MouseButton.LEFT and MouseButton.RIGHT become 1 and 3.
func parseMatplotlib(log string, v variant) map[string]Status {
	// The replacements never cross a line, so making them on the whole log
	// is making them on each line.
	log = strings.ReplaceAll(log, "MouseButton.LEFT", "1")
	log = strings.ReplaceAll(log, "MouseButton.RIGHT", "3")
	return parsePytest(log, v)
}

// parsePytestV2 is parse_log_pytest_v2: ANSI "[Nm" codes and the control
// characters U+0001..U+001F are removed from each line; a line that starts
// with a status word is read as in parse_log_pytest, and otherwise a line
// that ends with one is read as "name STATUS" (first word, second word).
// head is HEAD's variant: a FAILED line is cut at its first " - ", the name
// is every word after the status (joined by one space), the skip summary is
// dropped, and "name STATUS" takes all words but the last as the name.
func parsePytestV2(log string, v variant) map[string]Status {
	ansi := regexp.MustCompile(`\[(` + reD + `+)m`)
	m := map[string]Status{}
	for _, line := range pyLines(log) {
		line = ansi.ReplaceAllString(line, "")
		line = strings.Map(func(r rune) rune {
			if r >= 1 && r < 32 {
				return -1
			}
			return r
		}, line)
		switch {
		case v.startsWithStatus(line):
			if strings.HasPrefix(line, string(StatusFailed)) {
				if v.head {
					line, _, _ = strings.Cut(line, " - ")
				} else {
					line = strings.ReplaceAll(line, " - ", " ")
				}
			}
			tc := pyFields(line)
			if len(tc) < 2 {
				continue
			}
			if v.head {
				if !isSkipSummary(tc[0], tc[1]) {
					m[strings.Join(tc[1:], " ")] = Status(tc[0])
				}
			} else {
				m[tc[1]] = Status(tc[0])
			}
		case v.endsWithStatus(line):
			tc := pyFields(line)
			if len(tc) < 2 {
				continue
			}
			if v.head {
				m[strings.Join(tc[:len(tc)-1], " ")] = Status(tc[len(tc)-1])
			} else {
				m[tc[0]] = Status(tc[1])
			}
		}
	}
	return m
}

// parseSeaborn is parse_log_seaborn: "FAILED name", "name PASSED …" (the
// second word is PASSED) or "PASSED name".
func parseSeaborn(log string) map[string]Status {
	m := map[string]Status{}
	for _, line := range pyLines(log) {
		parts := pyFields(line)
		switch {
		case strings.HasPrefix(line, string(StatusFailed)):
			if len(parts) >= 2 {
				m[parts[1]] = StatusFailed
			}
		case strings.Contains(line, " "+string(StatusPassed)+" "):
			if len(parts) >= 2 && parts[1] == string(StatusPassed) {
				m[parts[0]] = StatusPassed
			}
		case strings.HasPrefix(line, string(StatusPassed)):
			if len(parts) >= 2 {
				m[parts[1]] = StatusPassed
			}
		}
	}
	return m
}

// parseDjango is parse_log_django, with its multi-line rules.
func parseDjango(log string) map[string]Status {
	m := map[string]Status{}
	prevTest, havePrev := "", false
	for _, line := range pyLines(log) {
		line = pyStrip(line)
		if strings.Contains(line, "--version is equivalent to version") {
			m["--version is equivalent to version"] = StatusPassed
		}
		if before, _, ok := strings.Cut(line, " ... "); ok {
			prevTest, havePrev = before, true
		}
		for _, suffix := range []string{" ... ok", " ... OK", " ...  OK"} {
			if !strings.HasSuffix(line, suffix) {
				continue
			}
			// The harness's fix for django__django-7188, whose migration
			// output shares the test's line.
			if strings.HasPrefix(pyStrip(line), "Applying sites.0002_alter_domain_unique...test_no_migrations") {
				_, after, _ := strings.Cut(line, "...")
				line = pyStrip(after)
			}
			test := line
			if i := strings.LastIndex(line, suffix); i >= 0 {
				test = line[:i]
			}
			m[test] = StatusPassed
			break
		}
		if strings.Contains(line, " ... skipped") {
			test, _, _ := strings.Cut(line, " ... skipped")
			m[test] = StatusSkipped
		}
		if strings.HasSuffix(line, " ... FAIL") {
			test, _, _ := strings.Cut(line, " ... FAIL")
			m[test] = StatusFailed
		}
		if strings.HasPrefix(line, "FAIL:") {
			if f := pyFields(line); len(f) >= 2 {
				m[pyStrip(f[1])] = StatusFailed
			}
		}
		if strings.HasSuffix(line, " ... ERROR") {
			test, _, _ := strings.Cut(line, " ... ERROR")
			m[test] = StatusError
		}
		if strings.HasPrefix(line, "ERROR:") {
			if f := pyFields(line); len(f) >= 2 {
				m[pyStrip(f[1])] = StatusError
			}
		}
		// An "ok" on a later line (output came between "..." and "ok")
		// passes the last test that printed " ... ".
		if strings.HasPrefix(pyLstrip(line), "ok") && havePrev {
			m[prevTest] = StatusPassed
		}
	}
	// A test whose line a long multi-line message interrupted before its
	// "ok", in the three forms the harness knows.
	for _, p := range []string{
		`(?m)^(.*?)⟨s⟩\.\.\.⟨s⟩Testing against Django installed in ((?s:.*?)) silenced\)\.\nok$`,
		`(?m)^(.*?)⟨s⟩\.\.\.⟨s⟩Internal Server Error: /(.*)/\nok$`,
		`(?m)^(.*?)⟨s⟩\.\.\.⟨s⟩System check identified no issues \(0 silenced\)\nok$`,
	} {
		for _, g := range regexp.MustCompile(pyRe(p)).FindAllStringSubmatch(log, -1) {
			m[g[1]] = StatusPassed
		}
	}
	return m
}

// parseSympy is parse_log_sympy: every "_ path.py:name _" header is
// FAILED; a stripped line that starts with "test_" and ends with " E",
// " F" or " ok" gives its first word ERROR, FAILED or PASSED. v21 is the
// v2.1.x variant, which first cuts a trailing "[OK]" or "[FAIL]".
func parseSympy(log string, v21 bool) map[string]Status {
	m := map[string]Status{}
	header := regexp.MustCompile(`(_*) (.*)\.py:(.*) (_*)`)
	for _, g := range header.FindAllStringSubmatch(log, -1) {
		m[g[2]+".py:"+g[3]] = StatusFailed
	}
	for _, line := range pyLines(log) {
		line = pyStrip(line)
		if !strings.HasPrefix(line, "test_") {
			continue
		}
		if v21 && (strings.HasSuffix(line, "[FAIL]") || strings.HasSuffix(line, "[OK]")) {
			line = pyStrip(line[:strings.LastIndex(line, "[")])
		}
		f := pyFields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasSuffix(line, " E") {
			m[f[0]] = StatusError
		}
		if strings.HasSuffix(line, " F") {
			m[f[0]] = StatusFailed
		}
		if strings.HasSuffix(line, " ok") {
			m[f[0]] = StatusPassed
		}
	}
	return m
}
