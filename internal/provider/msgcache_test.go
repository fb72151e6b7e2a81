package provider

import "testing"

// TestSeparatorDigests checks the written-out digests of the separators
// JoinBody adds against their bytes.
func TestSeparatorDigests(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want string
	}{{comma, commaDigest}, {closing, closeDigest}} {
		if got := digest(tc.b); got != tc.want {
			t.Errorf("digest(%q) = %s, the constant says %s", tc.b, got, tc.want)
		}
	}
}
