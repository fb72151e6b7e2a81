package sim

import "testing"

// TestWorkspaceRoot: the workspace a request's prompt names, wherever the
// dialect carries the prompt, is the first one in the body; a container's
// workspace, a relative path or no sentence name none.
func TestWorkspaceRoot(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"messages system", `{"system":[{"type":"text","text":"Be brief.\n\nThe workspace root is /w/repo; the shell starts there. Name files…"}]}`, "/w/repo"},
		{"responses instructions", `{"instructions":"x\n\nThe workspace root is /a b/c; the shell starts there.","input":[]}`, "/a b/c"},
		{"gemini after contents", `{"contents":[{"parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"The workspace root is /g; the shell starts there."}]}}`, "/g"},
		{"the first of two", `{"system":"The workspace root is /one; the shell starts there.","messages":[{"content":"The workspace root is /two; the shell starts there."}]}`, "/one"},
		{"escaped", `{"system":"The workspace root is /q\"x\\y; the shell starts there."}`, `/q"x\y`},
		{"a container", `{"system":"The workspace root is /testbed, in a container from the image img, where the shell and the tests run;"}`, ""},
		{"relative", `{"system":"The workspace root is repo; the shell starts there."}`, ""},
		{"none", `{"system":"You are a model."}`, ""},
		{"not JSON", `The workspace root is /x; the shell starts there.`, ""},
	} {
		if got := workspaceRoot([]byte(tc.body)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
