package clitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/trussdev/truss/internal/container"
	"github.com/trussdev/truss/internal/container/containertest"
)

// The scripts' commands for task environments (testdata/script/env_*.txtar).

// testEngine finds a working engine and makes the test image once.
var testEngine = sync.OnceValues(func() (*container.Engine, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := container.Find(ctx, os.Getenv("TRUSS_TEST_ENGINE"))
	if err != nil {
		return nil, err
	}
	if _, err := e.Check(ctx); err != nil {
		return nil, err
	}
	return e, nil
})

var testImageRef = sync.OnceValues(func() (string, error) {
	e, err := testEngine()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	return containertest.Image(ctx, e)
})

// envCondition answers [env]: whether a container engine works here and
// has the test image. Under CI=true it must: the condition is an error.
func envCondition() (bool, error) {
	if _, err := testImageRef(); err != nil {
		if os.Getenv("CI") == "true" {
			return false, fmt.Errorf("task-environment scripts need a working engine under CI: %w", err)
		}
		return false, nil
	}
	return true, nil
}

// envimage: sets IMAGE to the test image (containertest: imgtool exists
// only in it); the script says [!env] skip first.
func envImage(ts *testscript.TestScript, neg bool, args []string) {
	ref, err := testImageRef()
	ts.Check(err)
	ts.Setenv("IMAGE", ref)
}

// envleft DIR N: exactly N containers of Truss's (label truss.owner.pid)
// have DIR bind-mounted.
func envLeft(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: envleft DIR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	dir, err := filepath.EvalSymlinks(ts.MkAbs(args[0]))
	ts.Check(err)
	e, err := testEngine()
	ts.Check(err)
	ctx := context.Background()
	ids, err := e.Containers(ctx, container.LabelOwnerPID)
	ts.Check(err)
	n := 0
	if len(ids) > 0 {
		out, _ := exec.CommandContext(ctx, e.Path, append([]string{"container", "inspect", "--format", "{{.Id}}{{range .Mounts}} {{.Source}}{{end}}"}, ids...)...).Output()
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			for _, src := range f[min(1, len(f)):] {
				if src == dir {
					n++
				}
			}
		}
	}
	if n != want {
		ts.Fatalf("%d containers have %s mounted, want %d", n, dir, want)
	}
}

// waitfile FILE: waits until FILE exists (at most a minute).
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	p := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear within a minute", p)
}
