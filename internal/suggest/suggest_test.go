package suggest

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"provider", "model", "base_url", "env_key", "anthropic", "openai", "ollama", "vertex", "vertex-gemini"}
	for _, tc := range []struct{ in, want string }{
		{"provder", "provider"},   // a letter left out
		{"providerr", "provider"}, // one added
		{"modle", "model"},        // a transposition: two edits
		{"baseurl", "base_url"},   // _ left out
		{"BASE-URL", "base_url"},  // case and -
		{"envkey", "env_key"},     //
		{"antropic", "anthropic"}, //
		{"olama", "ollama"},       //
		{"vertex_gemini", "vertex-gemini"},
		{"vertx", "vertex"},
		{"x", ""},            // nearer than it is long: nothing
		{"zzzzzzzz", ""},     // too far
		{"openaj", "openai"}, //
	} {
		if got := Nearest(tc.in, names); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// A tie names neither.
	if got := Nearest("ab", []string{"aa", "bb"}); got != "" {
		t.Errorf("a tie: %q", got)
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"same", "same", 0},
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
