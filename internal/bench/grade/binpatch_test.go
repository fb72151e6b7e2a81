package grade_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench/grade"
)

// binaryPatch is git's own patch (git diff --binary) adding files (path:
// content) to an empty repository.
func binaryPatch(t *testing.T, files map[string][]byte) string {
	t.Helper()
	r := gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	for name, data := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.git("add", "-A")
	patch := r.git("diff", "--cached", "--binary") + "\n"
	if !strings.Contains(patch, "GIT binary patch") {
		t.Fatalf("git wrote no binary patch:\n%.500s", patch)
	}
	return patch
}

// git apply runs on the host: a patch whose binary hunks inflate past the
// grader's bound is a failed patch, refused before git writes anything;
// a fix that adds an ordinary binary file (an image, an archive) applies.
func TestGradeBoundsBinaryPatches(t *testing.T) {
	set := generated(t)
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	task := set.Tasks[0]
	icon := make([]byte, 200<<10)
	if _, err := rand.Read(icon); err != nil {
		t.Fatal(err)
	}
	// 72 MiB of zeros deflate to about 72 KiB.
	bomb := binaryPatch(t, map[string][]byte{"assets/zero.bin": make([]byte, 72<<20)})
	if len(bomb) > 1<<20 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	for _, tc := range []struct {
		name     string
		patch    string
		applied  bool
		resolved bool
		reason   string
	}{
		{"a fix with an image", task.Patch + binaryPatch(t, map[string][]byte{"docs/icon.png": icon}), true, true, ""},
		{"a fix with a file that inflates past the bound", task.Patch + bomb, false, false,
			"would have git apply write 72 MiB on the host, outside the sandbox's limits (the largest: a/assets/zero.bin b/assets/zero.bin (literal 75497472), 72 MiB), past the grader's bound of 64 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.PatchApplied != tc.applied || v.Resolved != tc.resolved || !strings.Contains(v.ApplyError, tc.reason) {
				t.Fatalf("applied %v resolved %v (%s: %q), want %v %v (%q)\n%s", v.PatchApplied, v.Resolved, v, v.ApplyError, tc.applied, tc.resolved, tc.reason, v.Log)
			}
			if !tc.applied && (v.String() != grade.NotResolvedPatchFailed || len(v.Tests) != 0) {
				t.Errorf("verdict %q, tests %v", v, v.Tests)
			}
		})
	}
}
