package grade

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/bench"
	"github.com/trussdev/truss/internal/validate"
)

// detectedGoTest is the test command the grader runs for a Go module it
// detected: its test binaries are the ones goCheck asks again.
const detectedGoTest = "go test -json ./..."

// A test binary is the model's code as much as the test's: production code
// linked into it (an init function, say) can print go test's own lines
// for tests that never ran. Where the grader chose the command (the
// detected go test -json ./...), it asks the binary of each package in
// which a listed test passed two more questions, with the same build
// cache (so the same compiled code) and the test result cache off:
//
//  1. run a test that does not exist (a fresh random name): a binary that
//     reports any test run, or does not end with its package passed, is
//     not to be trusted;
//  2. run the listed tests alone: a binary that reports a test it was not
//     asked for is not to be trusted, and a listed test that passed in
//     the full run must pass again.
//
// Every listed test of a package not to be trusted failed. What is not
// caught: code that forges output only for the real tests' names when
// exactly they are asked for (that is visible in the patch).

// goEvent's fields as goCheck reads them are those of report.go's goEvent.

// goTestEvents reads the test2json events of out (lines that are not are
// skipped).
func goTestEvents(out string) []goEvent {
	var evs []goEvent
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		var ev goEvent
		if json.Unmarshal(line, &ev) != nil || ev.Action == "" {
			continue
		}
		evs = append(evs, ev)
	}
	return evs
}

// passedIn is a listed test reported passed in a package: name as listed,
// test as go test named it.
type passedIn struct {
	name, pkg, test string
}

// goCheckResult is what goCheck found: the packages whose binary cannot be
// trusted (sorted), the listed tests that failed because of it or
// because they did not pass again, and notes saying why.
type goCheckResult struct {
	untrusted []string
	failed    []string
	notes     []string
}

// safeImportPath is what goCheck passes to go test as a package: an
// import path's characters, nothing a shell or go test would read
// otherwise.
var safeImportPath = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._~+/-]*$`)

// goCheck asks again, in sh, the test binaries of the packages in which a
// listed test is reported passed in out (the full run's go test -json
// output); tests are the listed tests' verdicts so far, homes where a bare
// name counts, can the canary written before the full run. It checks the
// canary in the full run, then runs two go test commands (a test that does
// not exist; the listed tests with the canary, written beside the code of
// the packages that did not have it, where go list places them), each
// within left().
func goCheck(ctx context.Context, sh validate.Shell, out string, tests map[string]string, homes goHomes, can goCanary, left func() time.Duration) (goCheckResult, error) {
	var res goCheckResult
	var passed []passedIn
	full := goTestEvents(out)
	for _, ev := range full {
		if ev.Action != "pass" || ev.Test == "" {
			continue
		}
		for name, s := range tests {
			if s == bench.TestPassed && homes.counts(name, ev.Package, ev.Test) {
				passed = append(passed, passedIn{name: name, pkg: ev.Package, test: ev.Test})
			}
		}
	}
	if len(passed) == 0 {
		return res, nil
	}
	var pkgs, tops []string
	untrusted := map[string]string{}
	for _, p := range passed {
		if !slices.Contains(pkgs, p.pkg) {
			pkgs = append(pkgs, p.pkg)
		}
		top, _, _ := strings.Cut(p.test, "/")
		if !slices.Contains(tops, top) {
			tops = append(tops, top)
		}
	}
	slices.Sort(pkgs)
	slices.Sort(tops)
	// The canary in the full run: reported failed, in every package it
	// was written in.
	if can.name != "" {
		failed := map[string]bool{}
		for _, ev := range full {
			if ev.Test != can.name || !slices.Contains(can.inRun, ev.Package) {
				continue
			}
			switch ev.Action {
			case "fail":
				failed[ev.Package] = true
			case "pass":
				untrusted[ev.Package] = fmt.Sprintf("in the full run it reported %s, a test of the grader's that fails by construction, as passed", can.name)
			}
		}
		for _, pkg := range pkgs {
			if _, bad := untrusted[pkg]; !bad && slices.Contains(can.inRun, pkg) && !failed[pkg] {
				untrusted[pkg] = fmt.Sprintf("in the full run it did not report %s, a test of the grader's that fails by construction, as failed", can.name)
			}
		}
	}
	var asked []string
	for _, pkg := range pkgs {
		if safeImportPath.MatchString(pkg) {
			asked = append(asked, pkg)
		} else {
			untrusted[pkg] = fmt.Sprintf("its name %q is not an import path", pkg)
		}
	}
	distrustAll := func(why string) {
		for _, pkg := range pkgs {
			if _, ok := untrusted[pkg]; !ok {
				untrusted[pkg] = why
			}
		}
	}
	run := func(before, pattern, after string) ([]goEvent, bool, error) {
		cmd := "go test -json -count=1 -run " + shellQuote(pattern) + " " + strings.Join(asked, " ")
		if before != "" {
			cmd = before + "; " + cmd + "; " + after
		}
		r := sh.Run(ctx, cmd, left())
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		if r.Err != nil && r.ExitCode == nil && !r.TimedOut {
			return nil, false, fmt.Errorf("asking the test binaries again: %s", r.Err.Message)
		}
		return goTestEvents(r.Stdout + "\n" + r.Stderr), !r.TimedOut, nil
	}
	if len(asked) > 0 {
		absent := "TestTrussAbsent" + randomHex()
		evs, finished, err := run("", "^"+absent+"$", "")
		if err != nil {
			return res, err
		}
		if !finished {
			distrustAll("asked for a test that does not exist, it did not finish in time")
		}
		ended := map[string]bool{}
		for _, ev := range evs {
			switch {
			case ev.Test != "" && !slices.Contains(asked, ev.Package):
				distrustAll(fmt.Sprintf("asked for %s, which does not exist, the output named %s in %q, a package not asked for", absent, ev.Test, ev.Package))
			case ev.Test != "" && (ev.Action == "run" || ev.Action == "pass"):
				if _, ok := untrusted[ev.Package]; !ok {
					untrusted[ev.Package] = fmt.Sprintf("asked for %s, which does not exist, it reported %s as %s", absent, ev.Test, actionWord(ev.Action))
				}
			case ev.Test == "" && ev.Action == "pass":
				ended[ev.Package] = true
			}
		}
		for _, pkg := range asked {
			if _, ok := untrusted[pkg]; !ok && !ended[pkg] && finished {
				untrusted[pkg] = fmt.Sprintf("asked for %s, which does not exist, it did not report its package passed", absent)
			}
		}
		// The listed tests with the canary: the packages that did not
		// have it get one now, named afresh (the full run's names taken).
		canaries := map[string]string{}
		for _, pkg := range asked {
			if can.name != "" && slices.Contains(can.inRun, pkg) {
				canaries[pkg] = can.name
			}
		}
		var others []string
		for _, pkg := range asked {
			if _, ok := canaries[pkg]; !ok {
				others = append(others, pkg)
			}
		}
		var before, after, later string
		if len(others) > 0 {
			later = newCanaryName(tops, func(n string) bool {
				return n == can.name || slices.ContainsFunc(full, func(ev goEvent) bool { return ev.Test == n })
			})
			var placed []string
			var why map[string]string
			before, after, placed, why, err = placeCanary(ctx, sh, others, later, left)
			if err != nil {
				return res, err
			}
			for pkg, w := range why {
				untrusted[pkg] = w
			}
			for _, pkg := range placed {
				canaries[pkg] = later
			}
		}
		quoted := make([]string, 0, len(tops)+2)
		for _, t := range tops {
			quoted = append(quoted, regexp.QuoteMeta(t))
		}
		for _, n := range []string{can.name, later} {
			if n != "" && slices.ContainsFunc(asked, func(pkg string) bool { return canaries[pkg] == n }) {
				quoted = append(quoted, regexp.QuoteMeta(n))
			}
		}
		slices.Sort(quoted)
		evs, finished, err = run(before, "^("+strings.Join(quoted, "|")+")$", after)
		if err != nil {
			return res, err
		}
		if !finished {
			distrustAll("asked for the listed tests alone, it did not finish in time")
		}
		again := map[[2]string]bool{}
		canaryFailed := map[string]bool{}
		for _, ev := range evs {
			if ev.Test == "" {
				continue
			}
			top, _, _ := strings.Cut(ev.Test, "/")
			switch {
			case !slices.Contains(asked, ev.Package):
				distrustAll(fmt.Sprintf("asked for the listed tests alone, the output named %s in %q, a package not asked for", ev.Test, ev.Package))
			case canaries[ev.Package] != "" && top == canaries[ev.Package]:
				switch ev.Action {
				case "fail":
					canaryFailed[ev.Package] = true
				case "pass":
					if _, bad := untrusted[ev.Package]; !bad {
						untrusted[ev.Package] = fmt.Sprintf("it reported %s, a test of the grader's that fails by construction, as passed", top)
					}
				}
			case !slices.Contains(tops, top) && (ev.Action == "run" || ev.Action == "pass"):
				if _, ok := untrusted[ev.Package]; !ok {
					untrusted[ev.Package] = fmt.Sprintf("asked for %s alone, it reported %s as %s", strings.Join(tops, ", "), ev.Test, actionWord(ev.Action))
				}
			case ev.Action == "pass":
				again[[2]string{ev.Package, ev.Test}] = true
			}
		}
		for pkg, name := range canaries {
			if _, bad := untrusted[pkg]; !bad && !canaryFailed[pkg] && finished {
				untrusted[pkg] = fmt.Sprintf("it did not report %s, a test of the grader's that fails by construction, as failed", name)
			}
		}
		var notAgain []string
		for _, p := range passed {
			if _, bad := untrusted[p.pkg]; bad || again[[2]string{p.pkg, p.test}] || slices.Contains(notAgain, p.name) {
				continue
			}
			notAgain = append(notAgain, p.name)
		}
		if len(notAgain) > 0 {
			slices.Sort(notAgain)
			res.failed = append(res.failed, notAgain...)
			res.notes = append(res.notes, "these listed tests passed in the full run but not when their test binary was asked for them alone, so they failed: "+strings.Join(notAgain, ", "))
		}
	}
	for _, pkg := range pkgs {
		why, ok := untrusted[pkg]
		if !ok {
			continue
		}
		res.untrusted = append(res.untrusted, pkg)
		var names []string
		for _, p := range passed {
			if p.pkg == pkg && !slices.Contains(names, p.name) {
				names = append(names, p.name)
			}
		}
		slices.Sort(names)
		res.failed = append(res.failed, names...)
		res.notes = append(res.notes, fmt.Sprintf("the test binary of %s cannot be trusted (%s), so its listed tests failed: %s", pkg, why, strings.Join(names, ", ")))
	}
	return res, nil
}

// placeCanary asks go list, in sh, where each package of pkgs is, and
// returns the shell commands that write the canary name beside each
// one's code (before; a file already at its path is left, and the canary
// then missing) and remove it (after), the packages placed, and why
// the others are not trusted: a package go list cannot place (it failed;
// no directory, an unexpected name) is not, since a forger can break
// go.mod after the full run.
func placeCanary(ctx context.Context, sh validate.Shell, pkgs []string, name string, left func() time.Duration) (before, after string, placed []string, why map[string]string, _ error) {
	r := sh.Run(ctx, "go list -f '{{.ImportPath}}{{\"\\t\"}}{{.Dir}}{{\"\\t\"}}{{.Name}}' "+strings.Join(pkgs, " "), left())
	if err := ctx.Err(); err != nil {
		return "", "", nil, nil, err
	}
	file := canaryFile(name)
	var writes, removes []string
	for _, line := range strings.Split(r.Stdout, "\n") {
		f := strings.Split(strings.TrimSpace(line), "\t")
		if len(f) != 3 || !slices.Contains(pkgs, f[0]) || slices.Contains(placed, f[0]) || !filepath.IsAbs(f[1]) || !goIdent(f[2]) {
			continue
		}
		p := shellQuote(filepath.Join(f[1], file))
		// A file of that name already there is kept, and the package
		// is not placed.
		writes = append(writes, "if [ ! -e "+p+" ] && [ ! -L "+p+" ]; then printf '%s' "+shellQuote(canarySource(f[2], name))+" > "+p+"; fi")
		removes = append(removes, p)
		placed = append(placed, f[0])
	}
	why = map[string]string{}
	for _, pkg := range pkgs {
		if !slices.Contains(placed, pkg) {
			why[pkg] = "go list did not place it, so the grader's own failing test could not be asked of it"
		}
	}
	if len(placed) == 0 {
		return "", "", nil, why, nil
	}
	return strings.Join(writes, "; "), "rm -f " + strings.Join(removes, " "), placed, why, nil
}

// goIdent reports whether s is a Go package name go list could print.
func goIdent(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// actionWord says a test2json action in the words of a note.
func actionWord(action string) string {
	if action == "pass" {
		return "passed"
	}
	return "run"
}

// randomHex is 16 random hex digits.
func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
