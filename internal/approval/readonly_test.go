package approval

import (
	"strings"
	"testing"
)

func TestReadOnly(t *testing.T) {
	tests := []struct {
		cmd  string
		want bool
	}{
		{"ls", true},
		{"ls -la src", true},
		{"cat a.go | grep -n func | head -20", true},
		{"git status && git diff --stat", true},
		{"git log --oneline -5; git show HEAD", true},
		{"rg -n 'TODO' internal/", true},
		{"find . -name '*.go' -type f", true},
		{"grep -r foo . 2>/dev/null", true},
		{"go vet ./... 2>&1", false},
		{"cat < input.txt", true},
		{"wc -l a b >/dev/null 2>&1", true},
		{"(cd sub && ls)", true},
		{"{ pwd; ls; }", true},
		{"sed -n '10,20p' main.go", true},
		{"echo \"hello world\"", true},
		{"cat <<'EOF'\nplain\nEOF", true},
		{"sort -u names.txt", true},
		{"! grep -q x f", true},
		// Not read-only.
		{"", false},
		{"   ", false},
		{"ls && rm x", false},
		{"rm -rf build", false},
		{"echo hi > f", false},
		{"echo hi >> f", false},
		{"cat a &> out", false},
		{"cat $(rm x)", false},
		{"cat `rm x`", false},
		{"cat <(rm x)", false},
		{"echo $HOME", false},
		{"ls &", false},
		{"X=1 ls", false},
		{"X=1", false},
		{"find . -delete", false},
		{"find . -name x -exec rm {} ;", false},
		{"find . -fprint out", false},
		{"sed -i s/a/b/ f", false},
		{"sed -n '1p;w out' f", false},
		{"sed 1p f", false},
		{"sort -o out in", false},
		{"sort --outp=out in", false},
		{"sort --out out in", false},
		{"sed -n 1p -e '1e touch x' f", false},
		{"sed -n 1p -i f", false},
		{"tree -o out", false},
		{"tree -R -H . ", false},
		{"tree -L 2", true},
		{"sed -n 1p a.txt b.txt", true},
		{"sort -uo out in", false},
		{"sort --output=out in", false},
		{"uniq in out", false},
		{"rg --pre ./evil x", false},
		{"rg --pre=./evil x", false},
		{"git push", false},
		{"git -c core.pager=evil log", false},
		{"git diff --output=patch", false},
		{"git diff --ext-diff", false},
		{"git branch -D main", false},
		{"cat <<EOF\n$(rm x)\nEOF", false},
		{"ls {a,b", true}, // an unclosed brace is literal text in bash
		{"ls 'unterminated", false},
		{"if true; then ls; fi", false},
		{"for f in *; do cat $f; done", false},
		{"f() { ls; }", false},
		{"exec 3>out", false},
		{"ls 3>out", false},
		{"ls {fd}>/dev/null", false},
		{"ls >&out", false},
		{"python -c 'print(1)'", false},
		{"env", false},
		{"time ls", false},
		{"ls; touch x", false},
		{"ls | tee out", false},
		{"echo $'\\x41'", false},
	}
	for _, tc := range tests {
		if got := ReadOnly(tc.cmd); got != tc.want {
			t.Errorf("ReadOnly(%q) = %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		"ls   -la":              "ls -la",
		"  git status&&ls  ":    "git status && ls",
		"echo 'a  b'":           "echo 'a  b'",
		"ls 'unterminated  x  ": "ls 'unterminated  x",
	} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzReadOnly: classifying any text never panics; a command judged
// read-only parses, prints back to a command judged the same way, and
// holds no substitution or assignment syntax outside quotes.
func FuzzReadOnly(f *testing.F) {
	for _, s := range []string{"ls", "ls && rm x", "cat $(rm x)", "git diff --output=x", "find . -exec rm {} ;",
		"sed -n '1,5p' f", "cat <<EOF\nx\nEOF", "echo hi > /dev/null 2>&1", "(cd a; ls) | wc -l", "X=1 ls", "ls &", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		ro := ReadOnly(cmd)
		canon := Canonical(cmd)
		if !ro {
			return
		}
		if _, err := parse(cmd); err != nil {
			t.Fatalf("read-only but does not parse: %q", cmd)
		}
		if !ReadOnly(canon) {
			t.Fatalf("read-only %q prints as %q, which is not", cmd, canon)
		}
		if strings.Contains(canon, "$(") && !strings.Contains(canon, "'") {
			t.Fatalf("read-only with a substitution: %q", canon)
		}
	})
}

// BenchmarkReadOnly classifies a typical pipeline.
func BenchmarkReadOnly(b *testing.B) {
	for b.Loop() {
		ReadOnly("git status && git diff --stat | head -50; rg -n 'func main' --glob '*.go' .")
	}
}
