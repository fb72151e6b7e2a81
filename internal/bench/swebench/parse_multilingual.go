package swebench

import (
	"encoding/xml"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Ports of the SWE-bench Multilingual parsers in
// swebench/harness/log_parsers/{go,rust,java,javascript,c,php,ruby}.py
// (v4.1.0; HEAD where head is true).

// matchLines applies a regular expression to each stripped line (Python's
// re.match(pattern, line.strip())) and calls f with the submatches of each
// line that matches.
func matchLines(log, pattern string, f func(g []string)) {
	re := regexp.MustCompile(pyRe(pattern))
	for _, line := range pyLines(log) {
		if g := re.FindStringSubmatch(pyStrip(line)); g != nil {
			f(g)
		}
	}
}

// parseGoTest is parse_log_gotest: "--- PASS|FAIL|SKIP: name (duration)".
func parseGoTest(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$`, func(g []string) {
		m[g[2]] = map[string]Status{"PASS": StatusPassed, "FAIL": StatusFailed, "SKIP": StatusSkipped}[g[1]]
	})
	return m
}

// parseCargo is parse_log_cargo: "test name ... ok|FAILED" (other outcomes,
// such as ignored, are not recorded).
func parseCargo(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^test⟨s⟩+(⟨S⟩+)⟨s⟩+\.\.\.⟨s⟩+(⟨w⟩+)$`, func(g []string) {
		switch g[2] {
		case "ok":
			m[g[1]] = StatusPassed
		case "FAILED":
			m[g[1]] = StatusFailed
		}
	})
	return m
}

// parseMaven is parse_log_maven: each test runs in its own mvn command
// (traced with set -x, so "-Dtest=NAME" is in the log) and its "BUILD
// SUCCESS|FAILURE" is the test's result. v4.1.0 credits a result to the
// last -Dtest name seen; HEAD (head) pairs names and results first in,
// first out, so interleaved output still pairs them.
func parseMaven(log string, head bool) map[string]Status {
	name := regexp.MustCompile(pyRe(`^.*-Dtest=(⟨S⟩+).*$`))
	result := regexp.MustCompile(`^.*BUILD (SUCCESS|FAILURE)$`)
	status := map[string]Status{"SUCCESS": StatusPassed, "FAILURE": StatusFailed}
	m := map[string]Status{}
	current := "---NO TEST NAME FOUND YET---"
	var pending, unmatched []string
	for _, line := range pyLines(log) {
		line = pyStrip(line)
		if g := name.FindStringSubmatch(line); g != nil {
			if head {
				pending = append(pending, g[1])
			} else {
				current = g[1]
			}
		}
		g := result.FindStringSubmatch(line)
		if g == nil {
			continue
		}
		switch {
		case !head:
			m[current] = status[g[1]]
		case len(pending) > 0:
			m[pending[0]] = status[g[1]]
			pending = pending[1:]
		default:
			unmatched = append(unmatched, g[1])
		}
	}
	for len(pending) > 0 && len(unmatched) > 0 {
		m[pending[0]] = status[unmatched[0]]
		pending, unmatched = pending[1:], unmatched[1:]
	}
	return m
}

// parseAnt is parse_log_ant: "[junit] [PASS|FAIL|ERR] name".
func parseAnt(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^⟨s⟩*\[junit\]⟨s⟩+\[(PASS|FAIL|ERR)\]⟨s⟩+(.*)$`, func(g []string) {
		if g[1] == "PASS" {
			m[g[2]] = StatusPassed
		} else {
			m[g[2]] = StatusFailed
		}
	})
	return m
}

// parseGradleCustom is parse_log_gradle_custom: "name PASSED|FAILED" on a
// line not starting with ">". HEAD (head) also takes a "Class > method"
// line followed later by a line holding only PASSED or FAILED.
func parseGradleCustom(log string, head bool) map[string]Status {
	full := regexp.MustCompile(pyRe(`^([^>].+)⟨s⟩+(PASSED|FAILED)$`))
	nameOnly := regexp.MustCompile(pyRe(`^([^>]⟨S⟩*⟨s⟩+>⟨s⟩+⟨S⟩+)$`))
	statusOnly := regexp.MustCompile(`^(PASSED|FAILED)$`)
	m := map[string]Status{}
	pending, havePending := "", false
	for _, line := range pyLines(log) {
		s := pyStrip(line)
		if g := full.FindStringSubmatch(s); g != nil {
			m[g[1]] = Status(g[2])
			havePending = false
			continue
		}
		if !head {
			continue
		}
		if g := nameOnly.FindStringSubmatch(s); g != nil {
			pending, havePending = g[1], true
			continue
		}
		if havePending {
			if g := statusOnly.FindStringSubmatch(s); g != nil {
				m[pending] = Status(g[1])
				havePending = false
			}
		}
	}
	return m
}

// ansiEscape is swebench.harness.utils.ansi_escape.
func ansiEscape(s string) string {
	return regexp.MustCompile(`\x1B(?:[@-Z\\-_]|\[[0-?]*[ -/]*[@-~])`).ReplaceAllString(s, "")
}

// indentOf is len(line) - len(line.lstrip()), in characters.
func indentOf(line string) int {
	return utf8.RuneCountInString(line) - utf8.RuneCountInString(pyLstrip(line))
}

// parseCalypso is parse_log_calypso: jest's tree output after each
// " ./node_modules/.bin/jest ", names joined by " - " from the indented
// suite lines above them.
func parseCalypso(log string) map[string]Status {
	type suite struct {
		name   string
		indent int
	}
	ms := regexp.MustCompile(`\(` + reD + `+ms\)`)
	m := map[string]Status{}
	var stack []suite
	chunks := strings.Split(log, " ./node_modules/.bin/jest ")
	for _, chunk := range chunks[1:] {
		for _, line := range pyLines(chunk) {
			if strings.HasPrefix(line, "Test Suites") || strings.HasPrefix(line, "  ● ") {
				break
			}
			mark, st := "", Status("")
			switch s := pyStrip(line); {
			case strings.HasPrefix(s, "✓"):
				mark, st = "✓", StatusPassed
			case strings.HasPrefix(s, "✕"):
				mark, st = "✕", StatusFailed
			}
			if mark != "" {
				p := `^⟨s⟩+` + mark + `⟨s⟩(.*)`
				if ms.MatchString(line) {
					p = `^⟨s⟩+` + mark + `⟨s⟩(.*)\(⟨d⟩+ms\)$`
				}
				g := regexp.MustCompile(pyRe(p)).FindStringSubmatch(line)
				if g == nil {
					continue // the harness raises here
				}
				names := make([]string, len(stack))
				for i, s := range stack {
					names[i] = s.name
				}
				m[pyStrip(strings.Join(names, " - ")+" - "+g[1])] = st
				continue
			}
			if in := indentOf(line); in > 0 {
				for len(stack) > 0 && stack[len(stack)-1].indent >= in {
					stack = stack[:len(stack)-1]
				}
				stack = append(stack, suite{pyStrip(line), in})
			}
		}
	}
	return m
}

// parseChartJS is parse_log_chart_js: karma's "Chrome N.N (…) name FAILED"
// lines, after ANSI escapes are removed; it records failures only.
func parseChartJS(log string) map[string]Status {
	log = ansiEscape(log)
	re := regexp.MustCompile(pyRe(`(?m)Chrome⟨s⟩[⟨d⟩\.]+⟨s-nl⟩\(.+?\)⟨s-nl⟩(.*)FAILED$`))
	m := map[string]Status{}
	for _, g := range re.FindAllStringSubmatch(log, -1) {
		m[g[1]] = StatusFailed
	}
	return m
}

// parseMarked is parse_log_marked: jasmine's "N) name" failure lines.
func parseMarked(log string) map[string]Status {
	re := regexp.MustCompile(pyRe(`^⟨d⟩+\)⟨s⟩(.*)`))
	m := map[string]Status{}
	for _, line := range pyLines(log) {
		if g := re.FindStringSubmatch(line); g != nil {
			m[pyStrip(g[1])] = StatusFailed
		}
	}
	return m
}

// parseP5JS is parse_log_p5js: mocha's numbered failures, after JSON and
// XML blocks are removed; names of several lines (each indented deeper
// than the last) are joined by ":".
func parseP5JS(log string) map[string]Status {
	log = ansiEscape(log)
	log = p5jsRemoveJSON(log)
	log = p5jsRemoveXML(log)
	fail := regexp.MustCompile(`(?ms)^` + reS + `*(` + reD + `+)\)(.{0,1000}?):`)
	m := map[string]Status{}
	for _, g := range fail.FindAllStringSubmatch(log, -1) {
		if !p5jsValidFail(g[2]) {
			continue
		}
		parts := strings.Split(g[2], "\n")
		for i := range parts {
			parts[i] = pyStrip(parts[i])
		}
		m[strings.Join(parts, ":")] = StatusFailed
	}
	return m
}

func p5jsRemoveJSON(log string) string {
	var out []string
	inObj, inList := false, false
	for _, line := range pyLines(log) {
		s := strings.TrimRightFunc(line, pySpace)
		switch {
		case strings.HasSuffix(s, "{"):
			inObj = true
			continue
		case strings.HasSuffix(s, "["):
			inList = true
			continue
		case s == "}" && inObj:
			inObj = false
			continue
		case s == "]" && inList:
			inList = false
			continue
		case inObj || inList:
			continue
		case strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}"):
			continue
		case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// p5jsRemoveXML removes <tag>…</tag> blocks as remove_xml_blocks does. Go's
// regexp has no back-references, so the first <tag> whose closing tag
// follows is found by hand: the earliest closing match wins, as in the
// Python pattern <(\w+)>[\s\S]*?</\1>.
func p5jsRemoveXML(log string) string {
	open := regexp.MustCompile(`<(` + reW + `+)>`)
	for {
		start, end, tag := -1, -1, ""
		for _, loc := range open.FindAllStringSubmatchIndex(log, -1) {
			t := log[loc[2]:loc[3]]
			if i := strings.Index(log[loc[1]:], "</"+t+">"); i >= 0 {
				start, end, tag = loc[0], loc[1]+i+len("</"+t+">"), t
				break
			}
		}
		if start < 0 {
			return log
		}
		n := strings.Count(log[start:end], "<"+tag+">") - 1
		if n < 0 {
			n = 0
		}
		log = log[:start] + strings.Repeat("<"+tag+">", n) + log[end:]
	}
}

func p5jsValidFail(name string) bool {
	last := 0
	for _, line := range strings.Split(name, "\n") {
		in := indentOf(line)
		if in <= last {
			return false
		}
		last = in
	}
	return true
}

// parseReactPDF is parse_log_react_pdf: "PASS name (time)" and "FAIL name
// (time)" lines, the time cut in the first of its forms that matches.
func parseReactPDF(log string) map[string]Status {
	type pat struct {
		re *regexp.Regexp
		st Status
	}
	var pats []pat
	for _, w := range []struct {
		word string
		st   Status
	}{{"PASS", StatusPassed}, {"FAIL", StatusFailed}} {
		for _, tail := range []string{`⟨s⟩\([⟨d⟩\.]+ms\)`, `⟨s⟩\([⟨d⟩\.]+⟨s⟩s\)`, `⟨s⟩\([⟨d⟩\.]+s\)`, ``} {
			pats = append(pats, pat{regexp.MustCompile(pyRe(`^` + w.word + `⟨s⟩(.*)` + tail)), w.st})
		}
	}
	m := map[string]Status{}
	for _, line := range pyLines(log) {
		for _, p := range pats {
			if g := p.re.FindStringSubmatch(line); g != nil {
				m[g[1]] = p.st
				break
			}
		}
	}
	return m
}

// parseJest is parse_log_jest (jest --verbose): "✓|✕|○ name (time)".
// HEAD (head) strips the name.
func parseJest(log string, head bool) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^⟨s⟩*(✓|✕|○)⟨s⟩(.+?)(?:⟨s⟩\((⟨d⟩+⟨s⟩*m?s)\))?$`, func(g []string) {
		name := g[2]
		if head {
			name = pyStrip(name)
		}
		m[name] = map[string]Status{"✓": StatusPassed, "✕": StatusFailed, "○": StatusSkipped}[g[1]]
	})
	return m
}

// parseJestJSON is parse_log_jest_json: "[PASSED|FAILED] name" lines made
// from jest --json by jq.
func parseJestJSON(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^\[(PASSED|FAILED)\]⟨s⟩(.+)$`, func(g []string) { m[g[2]] = Status(g[1]) })
	return m
}

// parseVitest is parse_log_vitest (--reporter=verbose): "✓|×|↓ name".
func parseVitest(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^⟨s⟩*(✓|×|↓)⟨s⟩(.+?)(?:⟨s⟩(⟨d⟩+⟨s⟩*m?s?|\[skipped\]))?$`, func(g []string) {
		m[g[2]] = map[string]Status{"✓": StatusPassed, "×": StatusFailed, "↓": StatusSkipped}[g[1]]
	})
	return m
}

// parseKarma is parse_log_karma: after "Starting browser", indented suite
// lines and "✔|✖ name" results, names joined by " > ", until "SUMMARY:".
func parseKarma(log string) map[string]Status {
	re := regexp.MustCompile(pyRe(`^(⟨s⟩*)?([✔✖])?⟨s⟩(.*)$`))
	m := map[string]Status{}
	indent, started := -1, false
	var suite []string
	for _, line := range pyLines(log) {
		if strings.HasPrefix(line, "SUMMARY:") {
			return m
		}
		if strings.Contains(line, "Starting browser") {
			started = true
			continue
		}
		if !started {
			continue
		}
		g := re.FindStringSubmatchIndex(line)
		if g == nil {
			continue
		}
		in, status := "", ""
		if g[2] >= 0 {
			in = line[g[2]:g[3]]
		}
		if g[4] >= 0 {
			status = line[g[4]:g[5]]
		}
		name := line[g[6]:g[7]]
		if in != "" && status == "" {
			n := utf8.RuneCountInString(in)
			if n > indent {
				indent = n
				suite = append(suite, name)
			} else if n < indent {
				indent = n
				if len(suite) > 0 {
					suite = suite[:len(suite)-1]
				}
				continue
			}
		}
		if status == "✔" || status == "✖" {
			full := strings.Join(append(append([]string(nil), suite...), name), " > ")
			if status == "✔" {
				m[full] = StatusPassed
			} else {
				m[full] = StatusFailed
			}
		}
	}
	return m
}

// parseTAP is parse_log_tap: "ok N name" and "not ok N name".
func parseTAP(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^(ok|not ok) (⟨d⟩+) (.+)$`, func(g []string) {
		if g[1] == "ok" {
			m[g[3]] = StatusPassed
		} else {
			m[g[3]] = StatusFailed
		}
	})
	return m
}

// parseRedis is parse_log_redis (redis, valkey): "[ok|err|skip|ignore]:
// name (time)"; a failed name loses its trailing " in FILE".
func parseRedis(log string) map[string]Status {
	in := regexp.MustCompile(pyRe(`⟨s⟩+in⟨s⟩+⟨S⟩+$`))
	m := map[string]Status{}
	matchLines(log, `^\[(ok|err|skip|ignore)\]:⟨s⟩(.+?)(?:⟨s⟩\((⟨d⟩+⟨s⟩*m?s)\))?$`, func(g []string) {
		switch g[1] {
		case "ok":
			m[g[2]] = StatusPassed
		case "err":
			m[in.ReplaceAllString(g[2], "")] = StatusFailed
		default:
			m[g[2]] = StatusSkipped
		}
	})
	return m
}

// parseJq is parse_log_jq: "PASS: name" and "FAIL: name".
func parseJq(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^⟨s⟩*(PASS|FAIL):⟨s⟩(.+)$`, func(g []string) {
		if g[1] == "PASS" {
			m[g[2]] = StatusPassed
		} else {
			m[g[2]] = StatusFailed
		}
	})
	return m
}

// parseMicropython is parse_log_micropython_test: "pass|FAIL|skip name".
func parseMicropython(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^(pass|FAIL|skip)⟨s⟩+(.+)$`, func(g []string) {
		m[g[2]] = map[string]Status{"pass": StatusPassed, "FAIL": StatusFailed, "skip": StatusSkipped}[g[1]]
	})
	return m
}

// parseGoogletest is parse_log_googletest: "[ OK ] name (time)" and
// "[ FAILED ] name (time)".
func parseGoogletest(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^.*\[⟨s⟩*(OK|FAILED)⟨s⟩*\]⟨s⟩(.*)⟨s⟩\(.*\)$`, func(g []string) {
		if g[1] == "OK" {
			m[g[2]] = StatusPassed
		} else {
			m[g[2]] = StatusFailed
		}
	})
	return m
}

// xmlNode is an element of a parsed XML document.
type xmlNode struct {
	name  string
	attrs map[string]string
	kids  []*xmlNode
}

// all returns the descendants of n named name, in document order (Python's
// element.findall(".//name")).
func (n *xmlNode) all(name string) []*xmlNode {
	var out []*xmlNode
	var walk func(*xmlNode)
	walk = func(x *xmlNode) {
		for _, k := range x.kids {
			if k.name == name {
				out = append(out, k)
			}
			walk(k)
		}
	}
	walk(n)
	return out
}

// parseXML parses an XML document into a tree; it returns nil if the
// document is not well formed (where ElementTree.fromstring raises).
func parseXML(s string) *xmlNode {
	d := xml.NewDecoder(strings.NewReader(s))
	root := &xmlNode{}
	stack := []*xmlNode{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := &xmlNode{name: t.Name.Local, attrs: map[string]string{}}
			for _, a := range t.Attr {
				n.attrs[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if len(root.kids) != 1 || len(stack) != 1 {
		return nil
	}
	return root.kids[0]
}

// parseDoctest is parse_log_doctest (doctest -r=xml): the <doctest>
// document in the log; each SubCase of each TestCase is "case > subcase",
// PASSED when every Expression in it has success="true".
func parseDoctest(log string) map[string]Status {
	m := map[string]Status{}
	start := strings.Index(log, "<doctest")
	if start < 0 {
		return m
	}
	end := strings.Index(log[start:], "</doctest>")
	if end < 0 {
		// The harness slices to find()+len, i.e. up to len("</doctest>")-1
		// characters past the start; such a fragment is never well formed.
		return m
	}
	root := parseXML(log[start : start+end+len("</doctest>")])
	if root == nil {
		return m
	}
	for _, tc := range root.all("TestCase") {
		for _, sc := range tc.all("SubCase") {
			passed := true
			for _, e := range sc.all("Expression") {
				if e.attrs["success"] != "true" {
					passed = false
				}
			}
			name := tc.attrs["name"] + " > " + sc.attrs["name"]
			if passed {
				m[name] = StatusPassed
			} else {
				m[name] = StatusFailed
			}
		}
	}
	return m
}

// parsePHPUnit is parse_log_phpunit (--testdox): "Suite (Class)" lines
// name the suite; "✔|✘|↩ name" lines are "suite > name".
func parsePHPUnit(log string) map[string]Status {
	suiteRe := regexp.MustCompile(pyRe(`^(⟨w⟩.+) \(.+\)$`))
	testRe := regexp.MustCompile(pyRe(`^⟨s⟩*([✔✘↩])⟨s⟩*(.*)$`))
	m := map[string]Status{}
	suite := "None"
	for _, line := range pyLines(log) {
		if g := suiteRe.FindStringSubmatch(line); g != nil {
			suite = g[1]
			continue
		}
		if g := testRe.FindStringSubmatch(line); g != nil {
			m[suite+" > "+g[2]] = map[string]Status{"✔": StatusPassed, "✘": StatusFailed, "↩": StatusSkipped}[g[1]]
		}
	}
	return m
}

// parseMinitest is parse_log_minitest: "name. … = … ./F/E …".
func parseMinitest(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^(.+)\. .*=.*(\.|F|E).*$`, func(g []string) {
		if g[2] == "." {
			m[g[1]] = StatusPassed
		} else {
			m[g[1]] = StatusFailed
		}
	})
	return m
}

// parseCucumber is parse_log_cucumber (--format progress): "name ....." or
// "name ...F".
func parseCucumber(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^(.*) \.+(\.|F)`, func(g []string) {
		if g[2] == "." {
			m[g[1]] = StatusPassed
		} else {
			m[g[1]] = StatusFailed
		}
	})
	return m
}

// parseRubyUnit is parse_log_ruby_unit (test-unit -v): "name: .|E|F|O".
func parseRubyUnit(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^⟨s⟩*(?:test: )?(.+):⟨s⟩+(\.|E\b|F\b|O\b)`, func(g []string) {
		switch g[2] {
		case ".":
			m[g[1]] = StatusPassed
		case "E", "F":
			m[g[1]] = StatusFailed
		case "O":
			m[g[1]] = StatusSkipped
		}
	})
	return m
}

// parseRspecTransformedJSON is parse_log_rspec_transformed_json: "name -
// passed|failed" lines made from rspec --format json by jq.
func parseRspecTransformedJSON(log string) map[string]Status {
	m := map[string]Status{}
	matchLines(log, `^(.+) - (passed|failed)`, func(g []string) {
		if g[2] == "passed" {
			m[g[1]] = StatusPassed
		} else {
			m[g[1]] = StatusFailed
		}
	})
	return m
}
