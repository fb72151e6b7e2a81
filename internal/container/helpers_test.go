package container

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/container/containertest"
	"github.com/trussdev/truss/internal/testenv"
)

// engineOnce finds and checks the engine once per test binary.
var engineOnce = sync.OnceValues(func() (*Engine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := Find(ctx, os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		return nil, err
	}
	if _, err := e.Check(ctx); err != nil {
		return nil, err
	}
	return e, nil
})

// unavailable skips the test with why, or fails it under CI=true, where
// the engine must work.
func unavailable(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("container tests need a working engine under CI: %s", why)
	}
	tb.Skipf("skipped: %s (install podman and runc, busybox-static and bash-static)", why)
}

// testEngine returns the engine, or skips (fails under CI).
func testEngine(tb testing.TB) *Engine {
	tb.Helper()
	e, err := engineOnce()
	if err != nil {
		unavailable(tb, err.Error())
	}
	return e
}

// imageOnce builds the test image once per test binary
// (containertest.Image).
var imageOnce = sync.OnceValues(func() (string, error) {
	e, err := engineOnce()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return containertest.Image(ctx, e)
})

// testImage returns the test image's reference.
func testImage(tb testing.TB) (*Engine, string) {
	tb.Helper()
	e := testEngine(tb)
	ref, err := imageOnce()
	if err != nil {
		unavailable(tb, err.Error())
	}
	return e, ref
}

// sessionName is a label value unique to one test.
func sessionName(tb testing.TB) string {
	return strings.NewReplacer("/", "-", " ", "-").Replace(tb.Name()) + "-" + newTag()[:8]
}

// assertNoContainers fails when a container of the session is left.
func assertNoContainers(tb testing.TB, e *Engine, session string) {
	tb.Helper()
	out, err := e.output(context.Background(), "ps", "-a", "-q", "--filter", "label="+LabelSession+"="+session)
	if err != nil {
		tb.Fatalf("list containers: %v", err)
	}
	if ids := strings.Fields(string(out)); len(ids) > 0 {
		e.output(context.Background(), e.rmArgs(ids...)...)
		tb.Errorf("containers of session %s left behind: %v", session, ids)
	}
}

// startEnv starts an environment for a test, closing it and checking that
// nothing is left at the end.
func startEnv(tb testing.TB, cfg Config) (*Engine, *Env) {
	tb.Helper()
	e, ref := testImage(tb)
	if cfg.Image == "" {
		cfg.Image = ref
	}
	if cfg.Workspace == "" {
		cfg.Workspace = tb.TempDir()
	}
	if cfg.Session == "" {
		cfg.Session = sessionName(tb)
	}
	tb.Cleanup(func() { assertNoContainers(tb, e, cfg.Session) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := e.Start(ctx, cfg)
	if err != nil {
		tb.Fatalf("start: %v", err)
	}
	tb.Cleanup(func() {
		if err := env.Close(context.Background()); err != nil {
			tb.Errorf("close: %v", err)
		}
	})
	return e, env
}

// TestMain fails the run when any container this test process owns is
// left after all the tests.
func TestMain(m *testing.M) {
	code := testenv.Run(m)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if e, err := Find(ctx, os.Getenv("TRUSS_TEST_ENGINE")); err == nil {
		out, err := e.output(ctx, "ps", "-a", "-q", "--filter", fmt.Sprintf("label=%s=%d", LabelOwnerPID, os.Getpid()))
		if ids := strings.Fields(string(out)); err == nil && len(ids) > 0 {
			fmt.Fprintf(os.Stderr, "containers left by the tests: %v\n", ids)
			e.output(ctx, e.rmArgs(ids...)...)
			code = 1
		}
	}
	os.Exit(code)
}
