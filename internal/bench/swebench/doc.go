// Package swebench re-implements the rules of SWE-bench's official
// evaluation harness (github.com/SWE-bench/SWE-bench, swebench/harness):
// the per-repository log parsers, the per-repository test commands and the
// grading that turns a task's FAIL_TO_PASS and PASS_TO_PASS lists and a
// test log (the harness's test_output.txt) into the harness's report.json.
//
// The harness changed its rules across releases; each rule set is a named
// Rules value (RulesV2_0 … RulesV5), recorded with every Verdict, so a
// verdict says which rules produced it. DefaultRules is the one Truss uses
// when a caller does not choose.
//
// The parsers are faithful ports of the Python functions of the same name:
// they split lines on "\n", strip and split words with Python's idea of
// whitespace, and use regular expressions whose classes (\s, \d, \w) are
// widened to Python's Unicode meaning. Where the Python function would raise
// (an IndexError on a line holding only a status word, an AttributeError on
// a regex that did not match) the harness records no report at all; the Go
// port skips that line instead, which docs/bench.md lists as a known
// difference.
//
// The package holds no mutable state: tables are built by functions on each
// call, and every exported function is safe for concurrent use.
package swebench
