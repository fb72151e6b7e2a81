//go:build heavy

package browsertest_test

import (
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/trussdev/truss/internal/browsertest"
)

// TestLog: a page's console error, uncaught exception and request are
// collected, and a quiet page reports nothing.
func TestLog(t *testing.T) {
	ctx := browsertest.Start(t, browsertest.Options{Width: 800, Height: 600, Timeout: 2 * time.Minute})
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		problems   []string // each a problem's beginning, in any order
		request    string   // a URL requested besides the page's own
	}{
		{"quiet", `<p>quiet</p>`, nil, ""},
		{"noisy", `<img src="http://127.0.0.1:9/missing.png"><script>console.error("bad thing"); throw new Error("uncaught");</script>`,
			[]string{"console.error: ", "exception: Uncaught", "request failed: "}, "http://127.0.0.1:9/missing.png"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".html")
			if err := os.WriteFile(p, []byte("<!DOCTYPE html><html><body>"+tc.body+"</body></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
			tab, cancel := chromedp.NewContext(ctx)
			defer cancel()
			var log browsertest.Log
			log.Listen(t, tab)
			u := (&url.URL{Scheme: "file", Path: p}).String()
			if err := chromedp.Do(tab, chromedp.Navigate(u), chromedp.Sleep(300*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			problems, requests := log.Snapshot()
			for _, want := range tc.problems {
				if !slices.ContainsFunc(problems, func(p string) bool { return strings.HasPrefix(p, want) }) {
					t.Errorf("no problem %q among %q", want, problems)
				}
			}
			if tc.problems == nil && len(problems) > 0 {
				t.Errorf("a quiet page: %q", problems)
			}
			if !slices.Contains(requests, u) || (tc.request != "" && !slices.Contains(requests, tc.request)) {
				t.Errorf("requests %q, want %s and %q", requests, u, tc.request)
			}
		})
	}
}
