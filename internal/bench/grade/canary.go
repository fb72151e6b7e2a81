package grade

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/trussdev/truss/internal/hostfs"
)

// The grader's own failing test (the canary) catches a forger that needs
// no test's name, one that rewrites failures into passes: it must be
// reported failed. A forger that can tell it apart passes it honestly and
// forges the rest, so it is made to look like the task's tests: named
// from the words of the listed tests and of test names in general
// (TestAddEmpty beside TestAdd), in a file named from the same words,
// with a body that compares two numbers; and it is in the test patch's
// packages from the full run on, so a forger that records its binary's
// tests on a first run records it too. Asked again, it runs in the same
// go test command as the listed tests.

// goCanary is the canary written before the full run: its name and the
// import paths of the packages it was written in.
type goCanary struct {
	name  string
	inRun []string
}

// canaryWords are words of test names.
var canaryWords = []string{"Empty", "Nil", "Zero", "Negative", "Large", "Small", "Twice", "Order", "Basic", "Edge",
	"Invalid", "Default", "Error", "Values", "Unicode", "Concurrent", "Overflow", "Reset", "Missing", "Nested",
	"Multiple", "Single", "Long", "Short", "Limit", "Bounds", "Format", "Parse", "String", "Copy", "Close",
	"Timeout", "Retry", "Cache", "Config", "Options", "Merge", "Split", "Equal", "Compare", "Round", "Trip"}

// camelWord is a word of a Go test name.
var camelWord = regexp.MustCompile(`[A-Z][a-z0-9]*|[a-z0-9]+`)

// newCanaryName returns a fresh test name shaped like the listed tests'
// top-level names tops: Test, a word of theirs and a word of canaryWords,
// in either order, that taken does not hold.
func newCanaryName(tops []string, taken func(string) bool) string {
	var own []string
	for _, t := range tops {
		for _, w := range camelWord.FindAllString(strings.TrimPrefix(t, "Test"), -1) {
			if w = strings.ToUpper(w[:1]) + w[1:]; !slices.Contains(own, w) {
				own = append(own, w)
			}
		}
	}
	if len(own) == 0 {
		own = canaryWords
	}
	for i := 0; ; i++ {
		a, b := own[rand.N(len(own))], canaryWords[rand.N(len(canaryWords))]
		if rand.N(2) == 0 {
			a, b = b, a
		}
		name := "Test" + a + b
		if i >= 32 {
			name += fmt.Sprint(rand.N(1000))
		}
		if !taken(name) && !slices.Contains(tops, name) && !buildConstrained(canaryFile(name)) {
			return name
		}
	}
}

// goFileOS and goFileArch are the GOOS and GOARCH values a Go file name
// can end in (before _test.go), which constrain its build (go/build's
// lists): a canary in equal_wasm_test.go is built for wasm only, and
// never runs.
var (
	goFileOS   = []string{"aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl", "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos"}
	goFileArch = []string{"386", "amd64", "amd64p32", "arm", "armbe", "arm64", "arm64be", "loong64", "mips", "mipsle", "mips64", "mips64le", "mips64p32", "mips64p32le", "ppc", "ppc64", "ppc64le", "riscv", "riscv64", "s390", "s390x", "sparc", "sparc64", "wasm"}
)

// buildConstrained reports whether the test file name's last word (before
// _test.go) is a GOOS or GOARCH, which would leave the file out of other
// platforms' builds.
func buildConstrained(file string) bool {
	words := strings.Split(strings.TrimSuffix(file, "_test.go"), "_")
	last := words[len(words)-1]
	return len(words) > 1 && (slices.Contains(goFileOS, last) || slices.Contains(goFileArch, last))
}

// canaryFile is the file name for the canary name: its words in lower
// case, joined by "_", then "_test.go".
func canaryFile(name string) string {
	words := camelWord.FindAllString(strings.TrimPrefix(name, "Test"), -1)
	return strings.ToLower(strings.Join(words, "_")) + "_test.go"
}

// canaryFunc is the canary's function: a test that compares two numbers
// that differ.
func canaryFunc(name string) string {
	src := canarySource("x", name)
	return src[strings.Index(src, "func "):]
}

// plainTesting is an import of "testing" under its own name, alone or in
// an import block.
var plainTesting = regexp.MustCompile(`(?m)^(?:import[ \t]+)?[ \t]*"testing"[ \t]*$`)

// buildLine is a build constraint line.
var buildLine = regexp.MustCompile(`(?m)^//(?:go:build|[ \t]*\+build)[ \t]`)

// appendable reports whether the canary can go at the end of the test
// file data named file: it imports testing under its own name and is
// built on every platform (no constraint line, no GOOS or GOARCH in its
// name), so the canary is built and run wherever the file's tests are.
func appendable(file string, data []byte) bool {
	return plainTesting.Match(data) && !buildLine.Match(data) && !buildConstrained(file)
}

// canarySource is the canary's file in package pkg: a test that compares
// two numbers that differ.
func canarySource(pkg, name string) string {
	a := 1 + rand.N(1000)
	b := a + 1 + rand.N(1000)
	return fmt.Sprintf("package %s\n\nimport \"testing\"\n\nfunc %s(t *testing.T) {\n\tif got, want := %d, %d; got != want {\n\t\tt.Errorf(\"got %%d, want %%d\", got, want)\n\t}\n}\n", pkg, name, a, b)
}

// plantCanary writes the canary, before the full run, in the checkout at
// ws, in each of dirs that holds a test file of the test patch; tops are
// the listed tests' top-level names. It returns the canary and a function
// removing what it wrote.
func plantCanary(ws string, dirs []goTestDir, tops []string) (goCanary, func()) {
	var c goCanary
	var written []string
	type original struct {
		rel  string
		data []byte
		perm fs.FileMode
	}
	var appended []original
	remove := func() {
		if len(written) == 0 && len(appended) == 0 {
			return
		}
		if root, err := hostfs.OpenRoot(ws); err == nil {
			for _, f := range written {
				_ = root.Remove(f)
			}
			for _, o := range appended {
				_ = root.WriteFile(o.rel, o.data, o.perm)
			}
			root.Close()
		}
	}
	if len(dirs) == 0 {
		return c, remove
	}
	c.name = newCanaryName(tops, func(n string) bool {
		return slices.ContainsFunc(dirs, func(d goTestDir) bool { return slices.Contains(d.declared, n) })
	})
	root, err := hostfs.OpenRoot(ws)
	if err != nil {
		return c, remove
	}
	defer root.Close()
	file := canaryFile(c.name)
	for _, d := range dirs {
		if d.pkgName == "" {
			continue
		}
		// At the end of the test patch's own test file where it can go
		// there: no file of its own, whose name or time could tell it
		// apart, and none a patch could keep it out of.
		if d.testFile != "" {
			rel := path.Join(d.dir, d.testFile)
			info, ierr := root.Lstat(rel)
			data, err := root.ReadFile(rel, maxTestFile)
			if ierr == nil && err == nil && info.Mode.IsRegular() && appendable(d.testFile, data) {
				perm := info.Mode.Perm()
				if root.WriteFile(rel, append(append(slices.Clip(data), '\n'), canaryFunc(c.name)...), perm) == nil {
					appended = append(appended, original{rel, data, perm})
					c.inRun = append(c.inRun, d.importPath)
					continue
				}
			}
		}
		rel := path.Join(d.dir, file)
		if _, err := root.Lstat(rel); !hostfs.IsNotExist(err) {
			continue
		}
		if root.WriteFile(rel, []byte(canarySource(d.pkgName, c.name)), 0o644) != nil {
			continue
		}
		written = append(written, rel)
		c.inRun = append(c.inRun, d.importPath)
	}
	return c, remove
}
