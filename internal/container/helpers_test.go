package container

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test image is made from the host's static busybox and bash
// (Debian's busybox-static and bash-static) and a tool, imgtool, that
// exists only in it; its working directory is /testbed and its PATH puts
// /opt/tool/bin first.
const (
	hostBusybox = "/bin/busybox"
	hostBash    = "/bin/bash-static"
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

// imageOnce builds the test image once per test binary.
var imageOnce = sync.OnceValues(func() (string, error) {
	e, err := engineOnce()
	if err != nil {
		return "", err
	}
	tarball, err := testRootfs()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(tarball)
	ref := "localhost/truss-test:" + hex.EncodeToString(sum[:6])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e.output(ctx, "image", "inspect", "--format", "{{.Id}}", ref); err == nil {
		return ref, nil
	}
	cmd := e.command(ctx, "import", "--change", "WORKDIR /testbed", "--change", "ENV PATH=/opt/tool/bin:/bin", "-", ref)
	if _, err := e.run(ctx, tarball, cmd); err != nil {
		return "", fmt.Errorf("import the test image: %w", err)
	}
	return ref, nil
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

// testRootfs is the test image's file system as a tarball.
func testRootfs() ([]byte, error) {
	bb, err := os.ReadFile(hostBusybox)
	if err != nil {
		return nil, fmt.Errorf("no static busybox: %w", err)
	}
	bash, err := os.ReadFile(hostBash)
	if err != nil {
		return nil, fmt.Errorf("no static bash: %w", err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dir := func(name string, mode int64) {
		tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: mode, ModTime: epoch})
	}
	file := func(name string, mode int64, data []byte) {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: mode, Size: int64(len(data)), ModTime: epoch})
		tw.Write(data)
	}
	for _, d := range []string{"bin", "etc", "opt", "opt/tool", "opt/tool/bin", "proc", "sys", "dev", "testbed", "root"} {
		dir(d, 0o755)
	}
	dir("tmp", 0o1777)
	file("bin/busybox", 0o755, bb)
	file("bin/bash", 0o755, bash)
	for _, applet := range []string{"sh", "ls", "cat", "echo", "id", "sleep", "ps", "stat", "mkdir", "rm", "touch", "grep", "wc", "true", "false", "env", "head", "kill", "test", "["} {
		tw.WriteHeader(&tar.Header{Name: "bin/" + applet, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777, ModTime: epoch})
	}
	file("etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\n"))
	file("etc/group", 0o644, []byte("root:x:0:\n"))
	// imgtool is the toolchain the host lacks: the task's tests need it.
	file("opt/tool/bin/imgtool", 0o755, []byte("#!/bin/sh\n# imgtool check FILE: passes when FILE says fixed\ncase \"$1\" in\ncheck) grep -q fixed \"$2\" && echo 'imgtool: 1 passed, 0 failed' && exit 0; echo 'imgtool: 0 passed, 1 failed'; exit 1;;\n*) echo imgtool-ok;;\nesac\n"))
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
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
	code := m.Run()
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
