package grade

import (
	"bytes"
	"compress/zlib"
	"crypto/rand"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// encode85 encodes data as git's binary hunks do: lines of at most 52
// bytes, each led by its length.
func encode85(data []byte) string {
	var b strings.Builder
	for len(data) > 0 {
		n := min(len(data), 52)
		line := data[:n]
		data = data[n:]
		if n <= 26 {
			b.WriteByte(byte('A' + n - 1))
		} else {
			b.WriteByte(byte('a' + n - 27))
		}
		for i := 0; i < n; i += 4 {
			var acc uint32
			for j := range 4 {
				acc <<= 8
				if i+j < n {
					acc |= uint32(line[i+j])
				}
			}
			var group [5]byte
			for k := 4; k >= 0; k-- {
				group[k] = git85[acc%85]
				acc /= 85
			}
			b.Write(group[:])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// deflated is data deflated as git's binary hunks hold it.
func deflated(data []byte) []byte {
	var b bytes.Buffer
	w, _ := zlib.NewWriterLevel(&b, zlib.BestCompression)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

// gitDiff runs git in dir (no user or system configuration) and returns
// its output.
func gitDiff(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=dev@example.org", "-c", "user.name=Dev", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// TestDeclaredWrites: what a patch declares it makes git apply write: a
// literal hunk its size, a delta its result's (read from its header, not
// from the hunk's own size), a copy its source's size and the patch's;
// the reverse hunks, which git apply does not inflate, nothing.
func TestDeclaredWrites(t *testing.T) {
	// git's own delta: a binary file of 300 KiB changed in one byte.
	dir := t.TempDir()
	gitDiff(t, dir, "init", "-q")
	img := make([]byte, 300<<10)
	rand.Read(img)
	if err := os.WriteFile(filepath.Join(dir, "img.bin"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	gitDiff(t, dir, "add", "-A")
	gitDiff(t, dir, "commit", "-qm", "base")
	img[100] ^= 0xff
	img = append(img, 1, 2, 3)
	if err := os.WriteFile(filepath.Join(dir, "img.bin"), img, 0o644); err != nil {
		t.Fatal(err)
	}
	realDelta := gitDiff(t, dir, "diff", "--binary")
	if !strings.Contains(realDelta, "\ndelta ") {
		t.Fatalf("git wrote no delta:\n%.400s", realDelta)
	}
	// A delta of 80 copies of a 1 MiB base file: 160 bytes of
	// instructions for 80 MiB.
	inst := []byte{0x80, 0x80, 0x40, 0x80, 0x80, 0x80, 0x28} // source 1 MiB, result 80 MiB (varints)
	for range 80 {
		inst = append(inst, 0xc0, 0x10) // copy from offset 0, size 0x100000
	}
	bombDelta := "diff --git a/big.bin b/big.bin\nindex 1111111..2222222 100644\nGIT binary patch\ndelta 167\n" + encode85(deflated(inst)) + "\ndelta 0\nHcmV?d00001\n\n"
	zeros := "diff --git a/z b/z\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\nliteral 268435456\n" + encode85(deflated(make([]byte, 1<<20))) + "\nliteral 0\nHcmV?d00001\n\n"
	copyBig := "diff --git a/big.bin b/c1\nsimilarity index 100%\ncopy from big.bin\ncopy to c1\n"
	base := func(name string) int64 {
		switch name {
		case "big.bin":
			return 1 << 20
		case "small":
			return 150
		}
		return 0
	}
	const stored = "0123456789abcdef0123456789abcdef01234567"
	blob := func(oid string) int64 {
		if oid == stored {
			return 4 << 20
		}
		return 0
	}
	// A diff with no binary data whose full index line names a blob of
	// the store: git apply writes the blob.
	storedBlob := func(i int) string {
		return fmt.Sprintf("diff --git a/x%d b/x%d\nnew file mode 100644\nindex 0000000000000000000000000000000000000000..%s\nBinary files /dev/null and b/x%d differ\n", i, i, stored, i)
	}
	// A text diff of big.bin: git apply reads it whole for each.
	textOfBig := "diff --git a/big.bin b/big.bin\n--- a/big.bin\n+++ b/big.bin\n@@ -1 +1 @@\n-a\n+b\n"
	for _, tc := range []struct {
		name  string
		patch string
		want  int64
	}{
		{"text", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-literal 5\n+delta 9\n", 0},
		{"git's delta", realDelta, int64(len(img))},
		{"a delta of copies", bombDelta, 80<<20 + 1<<20},
		{"a literal", zeros, 256 << 20},
		{"the reverse hunk", "GIT binary patch\nliteral 0\nHcmV?d00001\n\nliteral 999999999\nHcmV?d00001\n\n", 0},
		{"a literal with blanks and CRs", "GIT binary patch\r\nliteral   4096\r\n", 4096},
		{"a negative literal", "GIT binary patch\nliteral -1\n", math.MaxInt64},
		{"an overflowing literal", "GIT binary patch\nliteral 99999999999999999999\n", math.MaxInt64},
		// Each copy at its source's size, not the whole patch's length
		// each time.
		{"copies", strings.Repeat(copyBig, 3), 3 << 20},
		{"a quoted copy", "copy from \"big.bin\"\n", 1 << 20},
		{"copies of a file the patch changes", textOfBig + strings.Repeat(copyBig, 2), 1<<20 + 2*(1<<20+int64(len(textOfBig)))},
		{"many small copies of a large patch", strings.Repeat("diff --git a/small b/c\ncopy from small\ncopy to c\n", 70) + "diff --git a/data b/data\nnew file mode 100644\n--- /dev/null\n+++ b/data\n@@ -0,0 +1 @@\n+" + strings.Repeat("x", 1<<20) + "\n", 70 * 150},
		{"stored blobs", storedBlob(1) + storedBlob(2) + storedBlob(3), 3 * 4 << 20},
		{"a stored blob's abbreviated index", strings.Replace(storedBlob(1), stored, stored[:7], 1), 0},
		{"a blob not in the store", strings.Replace(storedBlob(1), stored, strings.Repeat("ab", 20), 1), 0},
		{"text diffs of one base file", strings.Repeat(textOfBig, 5), 5 << 20},
		{"a traditional diff", "--- big.bin.orig\t2024-01-01\n+++ big.bin\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n", 1 << 20},
		{"a removed line that looks like a header", "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n--- a/big.bin\n+++ b/big.bin\n x\n", 0},
		{"a binary delta's preimage", "diff --git a/big.bin b/big.bin\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 10\nHcmV?d00001\n\n", 1<<20 + 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := declaredWrites(tc.patch, base, blob)
			if err != nil {
				t.Fatal(err)
			}
			if w.total != tc.want {
				t.Fatalf("declared %d bytes (largest %s), want %d", w.total, w.largest, tc.want)
			}
		})
	}
	if _, err := declaredWrites("diff --git a/b b/b\nGIT binary patch\ndelta 5\nznot base 85\n\n", base, blob); err == nil || !strings.Contains(err.Error(), "result size cannot be read") {
		t.Errorf("a corrupt delta: %v", err)
	}
}
