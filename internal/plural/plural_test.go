package plural

import "testing"

func TestCount(t *testing.T) {
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "run", "1 run"},
		{0, "run", "0 runs"},
		{2, "run", "2 runs"},
		{1, "entry", "1 entry"},
		{13, "entry", "13 entries"},
		{2, "day", "2 days"},
		{1, "tool call", "1 tool call"},
		{3, "tool call", "3 tool calls"},
		{2, "signed checkpoint", "2 signed checkpoints"},
		{2, "pass", "2 passes"},
		{2, "match", "2 matches"},
		{2, "box", "2 boxes"},
		{-1, "byte", "-1 bytes"},
		{1, "more line", "1 more line"},
		{4, "more line", "4 more lines"},
	} {
		if got := Count(tc.n, tc.noun); got != tc.want {
			t.Errorf("Count(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
	if got := Count(int64(1), "byte"); got != "1 byte" {
		t.Errorf("int64: %q", got)
	}
	if got := Count(uint64(1<<63), "byte"); got != "9223372036854775808 bytes" {
		t.Errorf("uint64: %q", got)
	}
}
