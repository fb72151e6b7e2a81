//go:build unix

package hostfs

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestListFunc: every name once, with what it is, whatever the number of
// batches; a false from fn stops the listing there.
func TestListFunc(t *testing.T) {
	tests := []struct {
		name  string
		files int
		stop  int // fn returns false at this call; 0 for never
	}{
		{"empty", 0, 0},
		{"one batch", 10, 0},
		{"many batches", 3000, 0},
		{"stopped in the first batch", 3000, 5},
		{"stopped in a later batch", 3000, 2500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var want []string
			const long = "name-of-some-length-"
			for i := range tc.files {
				n := long + strconv.Itoa(i)
				want = append(want, n)
				if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			want = append(want, "sub")
			r, err := OpenRoot(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var got []string
			err = r.ListFunc(func(n string, i Info) bool {
				if i.IsDir() != (n == "sub") || i.Name() != n {
					t.Errorf("%s: %+v", n, i)
				}
				got = append(got, n)
				return len(got) != tc.stop
			})
			if err != nil {
				t.Fatal(err)
			}
			if tc.stop > 0 {
				if len(got) != tc.stop {
					t.Errorf("%d names handed, want %d", len(got), tc.stop)
				}
				return
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("listed %d names, want %d", len(got), len(want))
			}
		})
	}
}
