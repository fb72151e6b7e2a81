// Package browsertest drives a headless Chromium for the tests of the
// pages Truss writes (the session page, the benchmark report): it finds
// Debian's chromium, starts it with a fresh profile, and collects what a
// page reports going wrong and every URL it requests. It is used by tests
// only, as internal/testenv is.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium returns the path of a Chromium to drive (Debian's package,
// else Chrome). Without one the test skips, except under CI (CI=true),
// where Chromium is installed and its absence is a failure.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no Chromium on PATH under CI (.ci/run installs Debian's chromium package)")
	}
	t.Skip("no Chromium on PATH (apt-get install chromium): the page is not checked in a browser")
	return ""
}

// Options say how the browser starts.
type Options struct {
	// Width and Height are the window's size in CSS pixels.
	Width, Height int
	// Timeout bounds the whole browser's life: a hung browser fails the
	// test instead of holding it up. It is not a performance assertion.
	Timeout time.Duration
}

// Start starts a headless Chromium with a fresh profile in a temporary
// directory of t's and returns a context for its first tab; the browser
// stops when t ends.
func Start(t testing.TB, o Options) context.Context {
	t.Helper()
	exe := Chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(o.Width, o.Height),
	)
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	return bctx
}

// Log collects what a page says went wrong — console errors, warnings
// and failed assertions, uncaught exceptions, log entries of level error
// or warning (failed loads, refused resources), failed requests, dialogs
// — and every URL the page requested. The zero Log is ready; Listen
// starts it on a tab.
type Log struct {
	mu       sync.Mutex
	problems []string
	requests []string
}

func (l *Log) add(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
}

// Listen collects the events of the tab ctx into l.
func (l *Log) Listen(t testing.TB, ctx context.Context) {
	t.Helper()
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				l.add("console.%s: %s", ev.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			desc := ""
			if d.Exception != nil {
				desc = d.Exception.Description
			}
			l.add("exception: %s %s (%s:%d)", d.Text, desc, d.URL, d.LineNumber)
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
				l.add("log %s (%s): %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventLoadingFailed:
			l.add("request failed: %s", ev.ErrorText)
		case *network.EventRequestWillBeSent:
			l.mu.Lock()
			l.requests = append(l.requests, ev.Request.URL)
			l.mu.Unlock()
		case *page.EventJavascriptDialogOpening:
			l.add("dialog %s: %s", ev.Type, ev.Message)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Snapshot returns what l has collected so far: the problems and the
// URLs requested.
func (l *Log) Snapshot() (problems, requests []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.problems...), append([]string(nil), l.requests...)
}
