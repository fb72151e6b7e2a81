package grade_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trussdev/truss/internal/bench"
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
			"would have git apply write or hold 72 MiB on the host, outside the sandbox's limits (the largest: a/assets/zero.bin b/assets/zero.bin (literal 75497472), 72 MiB), past the grader's bound of 64 MiB"},
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

// git apply takes a "Binary files … differ" diff's postimage from the
// object store when its full index line names a blob there, and reads a
// diff's preimage whole, once per diff: both count toward the bound, so a
// small patch naming a base file's blob 70 times, or changing the same
// base file in 70 diffs, is refused before git runs; one such diff
// applies.
func TestGradeBoundsStoredBlobsAndPreimages(t *testing.T) {
	r := gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q")
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'a' + byte(i%26)
		if i%64 == 63 {
			big[i] = '\n'
		}
	}
	r.write(map[string]string{"assets/big.txt": string(big), "README": "calc\n"})
	r.git("add", "-A")
	r.git("commit", "-qm", "Initial import")
	base := r.git("rev-parse", "HEAD")
	oid := r.git("rev-parse", "HEAD:assets/big.txt")
	stored := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "diff --git a/copy%d.txt b/copy%d.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..%s\nBinary files /dev/null and b/copy%d.txt differ\n", i, i, oid, i)
		}
		return b.String()
	}
	first := string(big[:64])
	edits := strings.Repeat("diff --git a/assets/big.txt b/assets/big.txt\n--- a/assets/big.txt\n+++ b/assets/big.txt\n@@ -1 +1 @@\n-"+first+"+x"+first, 70)
	task := bench.Task{InstanceID: "big", Repo: r.dir, RepoDir: r.dir, BaseCommit: base, TestCmd: "true", FailToPass: bench.TestList{"calc"}}
	g := &grade.Grader{Shells: &grade.Sandboxed{}, Dir: t.TempDir()}
	for _, tc := range []struct {
		name    string
		patch   string
		applied bool
		reason  string
	}{
		{"one stored blob", stored(1), true, ""},
		{"a stored blob 70 times", stored(70), false, "would have git apply write or hold 70 MiB on the host"},
		{"70 diffs of one base file", edits, false, "would have git apply write or hold 70 MiB on the host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := g.Grade(context.Background(), &task, tc.patch)
			if err != nil {
				t.Fatal(err)
			}
			if v.PatchApplied != tc.applied || !strings.Contains(v.ApplyError, tc.reason) {
				t.Fatalf("applied %v (%q), want %v (%q)", v.PatchApplied, v.ApplyError, tc.applied, tc.reason)
			}
		})
	}
}
