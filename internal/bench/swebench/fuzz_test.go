package swebench

import (
	"os"
	"path/filepath"
	"testing"
)

// fuzzParser checks that a parser never panics and always returns a map,
// under every rule set's variant.
func fuzzParser(f *testing.F, name string) {
	if b, err := os.ReadFile(filepath.Join("testdata", "logs", name+".log")); err == nil {
		f.Add(string(b))
	}
	for _, s := range []string{"", "\n", "PASSED", "FAILED - x", "ok", " ... ok\nok", "[", "<doctest><TestCase>", "✓", "  ✓ (1ms)", "--- PASS:  ()", "1)\n  2):"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, log string) {
		for _, r := range AllRules() {
			p, err := ParserByName(name, r)
			if err != nil {
				t.Fatal(err)
			}
			if p(log) == nil {
				t.Fatal("nil map")
			}
		}
	})
}

func FuzzParsePytest(f *testing.F)        { fuzzParser(f, "parse_log_pytest") }
func FuzzParsePytestOptions(f *testing.F) { fuzzParser(f, "parse_log_pytest_options") }
func FuzzParsePytestV2(f *testing.F)      { fuzzParser(f, "parse_log_pytest_v2") }
func FuzzParseMatplotlib(f *testing.F)    { fuzzParser(f, "parse_log_matplotlib") }
func FuzzParseSeaborn(f *testing.F)       { fuzzParser(f, "parse_log_seaborn") }
func FuzzParseDjango(f *testing.F)        { fuzzParser(f, "parse_log_django") }
func FuzzParseSympy(f *testing.F)         { fuzzParser(f, "parse_log_sympy") }
func FuzzParseGoTest(f *testing.F)        { fuzzParser(f, "parse_log_gotest") }
func FuzzParseCargo(f *testing.F)         { fuzzParser(f, "parse_log_cargo") }
func FuzzParseMaven(f *testing.F)         { fuzzParser(f, "parse_log_maven") }
func FuzzParseAnt(f *testing.F)           { fuzzParser(f, "parse_log_ant") }
func FuzzParseGradleCustom(f *testing.F)  { fuzzParser(f, "parse_log_gradle_custom") }
func FuzzParseCalypso(f *testing.F)       { fuzzParser(f, "parse_log_calypso") }
func FuzzParseChartJS(f *testing.F)       { fuzzParser(f, "parse_log_chart_js") }
func FuzzParseMarked(f *testing.F)        { fuzzParser(f, "parse_log_marked") }
func FuzzParseP5JS(f *testing.F)          { fuzzParser(f, "parse_log_p5js") }
func FuzzParseReactPDF(f *testing.F)      { fuzzParser(f, "parse_log_react_pdf") }
func FuzzParseJest(f *testing.F)          { fuzzParser(f, "parse_log_jest") }
func FuzzParseJestJSON(f *testing.F)      { fuzzParser(f, "parse_log_jest_json") }
func FuzzParseVitest(f *testing.F)        { fuzzParser(f, "parse_log_vitest") }
func FuzzParseKarma(f *testing.F)         { fuzzParser(f, "parse_log_karma") }
func FuzzParseTAP(f *testing.F)           { fuzzParser(f, "parse_log_tap") }
func FuzzParseRedis(f *testing.F)         { fuzzParser(f, "parse_log_redis") }
func FuzzParseJq(f *testing.F)            { fuzzParser(f, "parse_log_jq") }
func FuzzParseDoctest(f *testing.F)       { fuzzParser(f, "parse_log_doctest") }
func FuzzParseMicropython(f *testing.F)   { fuzzParser(f, "parse_log_micropython_test") }
func FuzzParseGoogletest(f *testing.F)    { fuzzParser(f, "parse_log_googletest") }
func FuzzParsePHPUnit(f *testing.F)       { fuzzParser(f, "parse_log_phpunit") }
func FuzzParseMinitest(f *testing.F)      { fuzzParser(f, "parse_log_minitest") }
func FuzzParseCucumber(f *testing.F)      { fuzzParser(f, "parse_log_cucumber") }
func FuzzParseRubyUnit(f *testing.F)      { fuzzParser(f, "parse_log_ruby_unit") }
func FuzzParseRspecJSON(f *testing.F)     { fuzzParser(f, "parse_log_rspec_transformed_json") }

// FuzzGrade checks that grading never panics on any log, under any rules.
func FuzzGrade(f *testing.F) {
	f.Add("Applied patch\n: '>>>>> Start Test Output'\nPASSED a[b\n: '>>>>> End Test Output'\n>>>>> Test Exit Code: 1\n")
	f.Fuzz(func(t *testing.T, log string) {
		inst := Instance{InstanceID: "pytest-dev__pytest-1", Repo: "pytest-dev/pytest", FailToPass: []string{"a[b", "a"}, PassToPass: []string{"c"}}
		for _, r := range AllRules() {
			v, err := Grade(inst, log, r)
			if err != nil {
				t.Fatal(err)
			}
			_ = v.Report().MarshalPython()
		}
	})
}
