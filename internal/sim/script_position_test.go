package sim

import (
	"strings"
	"testing"
)

// TestParseScriptSaysWhere: a script that does not decode is refused
// with the line and column of the fault.
func TestParseScriptSaysWhere(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{\"steps\": [\n  {\"say\": \"hi\"\n", "line 3, column 1: the script ends before a bracket or string is closed"},
		{"{\"steps\": [{\"say\": 3}]}", "line 1, column 20: "},
		{"{\"steps\": [\n  {\"say\": \"a\"},,\n]}", "line 2, column 16: "},
	} {
		_, err := ParseScript([]byte(tc.in))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseScript(%q) = %v; want %q", tc.in, err, tc.want)
		}
	}
}
