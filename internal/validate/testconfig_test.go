package validate

import (
	"slices"
	"testing"
)

func TestConfigEssence(t *testing.T) {
	for _, tc := range []struct {
		rel, a, b string
		same      bool
	}{
		{"go.mod", "module m\n\ngo 1.22\n", "module m\n\ngo 1.22\n\nrequire x v1.0.0\n", true},
		{"go.mod", "module m\n\ngo 1.22\n", "module m\n\ngo 1.22\n\nreplace x => ./y\n", false},
		{"a/go.mod", "module m\n\ngo 1.22\n", "module m\n\ngo 1.99\n", false},
		{"go.mod", "module m\n", "not a go.mod {", false},
		{"go.mod", "module m\n\ngo 1.25\n", "module m\n\ngo 1.25\n\nignore ./calc\n", false},
		{"go.mod", "module m\n\ngo 1.25\n", "module m\n\ngo 1.25\n\ngodebug panicnil=1\n", false},
		{"package.json", `{"scripts":{"test":"jest"},"dependencies":{}}`, `{"dependencies":{"x":"1"},"scripts":{"test":"jest"}}`, true},
		{"package.json", `{"scripts":{"test":"jest"}}`, `{"scripts":{"test":"true"}}`, false},
		{"package.json", `{"scripts":{"test":"jest"}}`, `{"scripts":{"test":"jest","pretest":"sh x"}}`, false},
		{"Makefile", "test:\n\tgo test\n", "test:\n\ttrue\n", false},
		{"pytest.ini", "[pytest]\n", "[pytest]\n", true},
	} {
		if got := ConfigEssence(tc.rel, []byte(tc.a)) == ConfigEssence(tc.rel, []byte(tc.b)); got != tc.same {
			t.Errorf("%s: %q and %q the same: %v, want %v", tc.rel, tc.a, tc.b, got, tc.same)
		}
	}
	for rel, want := range map[string]bool{"pytest.ini": true, "a/b/setup.cfg": true, "go.work": true, "sub/go.mod": true, "go.sum": false, "main.go": false, "Makefile": false,
		".npmrc": true, "web/.npmrc": true, ".gitattributes": true, ".cargo/config.toml": true, "a/.cargo/config": true, "config.toml": false,
		"jest.config.js": true, "web/vitest.config.ts": true, ".mocharc.yml": true, "jest.js": false} {
		if IsTestConfig(rel) != want {
			t.Errorf("IsTestConfig(%q) = %v", rel, !want)
		}
	}
}

func TestCommandFiles(t *testing.T) {
	for cmd, want := range map[string][]string{
		"make test":                          {"GNUmakefile", "makefile", "Makefile"},
		"cd app && make -f build/ci.mk test": {"GNUmakefile", "makefile", "Makefile", "build/ci.mk"},
		"npm test":                           {"package.json"},
		"./run-tests.sh --fast":              {"run-tests.sh"},
		"python scripts/test.py -x":          {"scripts/test.py"},
		"go test ./...":                      nil,
		"go test -run=TestX ./pkg/...":       nil,
		"bash ../outside.sh":                 nil,
	} {
		if got := CommandFiles(cmd); !slices.Equal(got, want) {
			t.Errorf("CommandFiles(%q) = %q, want %q", cmd, got, want)
		}
	}
}
