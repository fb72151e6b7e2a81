package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"provider", "model", "logs", "base_url", "env_key", "anthropic", "openai", "ollama", "vertex", "vertex-gemini"}
	for _, tc := range []struct{ in, want string }{
		{"provder", "provider"},    // a letter left out
		{"providerr", "provider"},  // one added
		{"modle", "model"},         // two swapped: one edit
		{"baseurl", "base_url"},    // _ left out
		{"BASE-URL", "base_url"},   // case and -
		{"envkey", "env_key"},      // _ left out
		{"antropic", "anthropic"},  // a letter left out
		{"anthrpoic", "anthropic"}, // two swapped
		{"antrhpoic", "anthropic"}, // two swaps: within two for a long name
		{"olama", "ollama"},        // a letter left out, five letters
		{"vertex_gemini", "vertex-gemini"},
		{"vertx", "vertex"},
		{"vrtx", ""},     // two from vertex: too far for four letters
		{"bogus", ""},    // two from logs: too far for five letters
		{"x", ""},        // nothing near
		{"zzzzzzzz", ""}, // too far
		{"openaj", "openai"},
	} {
		if got := Nearest(tc.in, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Nearest("ab", []string{"ac", "bb"}); got != "" {
		t.Errorf("a tie named %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"same", "same", 0},
		{"ab", "ba", 1}, {"ca", "abc", 3}, {"modle", "model", 1},
	} {
		if got := Distance(tc.a, tc.b); got != tc.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func FuzzNearest(f *testing.F) {
	f.Add("provder", "provider")
	f.Fuzz(func(t *testing.T, a, b string) {
		if d := Distance(a, b); d != Distance(b, a) || d > max(len(a), len(b)) || (d == 0) != (a == b) {
			t.Fatalf("Distance(%q, %q) = %d", a, b, d)
		}
		if got := Nearest(a, []string{b}); got != "" && got != b {
			t.Fatalf("Nearest named %q, not one of the names", got)
		}
	})
}
