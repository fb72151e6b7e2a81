package runner

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzUntar: a ledger archive comes from a worker, whom the coordinator
// does not trust. Whatever it holds, untar writes nothing outside its
// directory and fails rather than panics.
func FuzzUntar(f *testing.F) {
	seed := func(entries map[string]string) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for name, body := range entries {
			_ = tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
			_, _ = tw.Write([]byte(body))
		}
		_ = tw.Close()
		return b.Bytes()
	}
	f.Add(seed(map[string]string{"entries.jsonl": "{}\n", "payloads/a": "x"}))
	f.Add(seed(map[string]string{"../escape": "x"}))
	f.Add(seed(map[string]string{"/abs": "x"}))
	f.Add([]byte("not a tar archive"))
	f.Fuzz(func(t *testing.T, archive []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "ledger")
		_ = untar(bytes.NewReader(archive), dir)
		err := filepath.Walk(parent, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if p != parent && p != dir && !strings.HasPrefix(p, dir+string(filepath.Separator)) {
				t.Errorf("untar wrote %s, outside %s", p, dir)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
