package sandbox_test

import (
	"testing"

	"github.com/trussdev/truss/internal/sandbox"
)

func TestParseSize(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		bad  bool
	}{
		{"1024", 1024, false},
		{"512b", 512, false},
		{"64M", 64 << 20, false},
		{"64MiB", 64 << 20, false},
		{"2g", 2 << 30, false},
		{"1.5G", 3 << 29, false},
		{" 10 GB ", 10 << 30, false},
		{"1T", 1 << 40, false},
		{"none", -1, false},
		{"off", -1, false},
		{"", 0, true},
		{"lots", 0, true},
		{"-1G", 0, true},
		{"0", 0, true},
		{"G", 0, true},
		{"1iB", 0, true},
		{"9999999999T", 0, true},
		{"nan", 0, true},
		{"1e-9", 0, true},
	}
	for _, c := range cases {
		got, err := sandbox.ParseSize(c.in)
		if (err != nil) != c.bad || got != c.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, bad %v", c.in, got, err, c.want, c.bad)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for in, want := range map[int64]string{-1: "none", 512: "512 bytes", 2048: "2 KiB", 96 << 20: "96 MiB", 4 << 30: "4 GiB", 3 << 29: "1.5 GiB"} {
		if got := sandbox.FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParseSize: any input parses to a positive size or none, or fails;
// a size formatted in whole units parses back to itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"64M", "1.5G", "none", "512b", "lots", "1e3k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := sandbox.ParseSize(s)
		if err != nil {
			return
		}
		if n == 0 || n < -1 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if n > 0 && (n%(1<<30) == 0 || n < 1<<30 && n%(1<<20) == 0) {
			back, err := sandbox.ParseSize(sandbox.FormatSize(n))
			if err != nil || back != n {
				t.Fatalf("%d formats as %q, which parses as %d, %v", n, sandbox.FormatSize(n), back, err)
			}
		}
	})
}
