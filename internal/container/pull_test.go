package container

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/container/containertest"
)

// fakeEngine is an engine whose program is containertest.Fake.
type fakeEngine struct {
	*Engine
	fake *containertest.Fake
}

func newFakeEngine(t *testing.T) *fakeEngine {
	t.Helper()
	f, err := containertest.NewFake(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return &fakeEngine{Engine: &Engine{Name: Podman, Path: f.Path}, fake: f}
}

func fakeID(ref string) string { return containertest.FakeID(ref) }

func (f *fakeEngine) local(t *testing.T, ref string) {
	t.Helper()
	if err := f.fake.Local(ref); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeEngine) published(t *testing.T, ref string, delay int) {
	t.Helper()
	if err := f.fake.Publish(ref, delay); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeEngine) pulls(t *testing.T) map[string]int {
	t.Helper()
	n, err := f.fake.Pulls()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fakeEngine) inFlight(t *testing.T) int {
	t.Helper()
	n, err := f.fake.MostAtOnce()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *fakeEngine) pullPID(t *testing.T, ref string) int {
	t.Helper()
	pid, err := f.fake.PullPID(ref)
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestEnsurePresentIsNotPulled(t *testing.T) {
	f := newFakeEngine(t)
	f.local(t, "swebench/sweb.eval.x86_64.django_1776_django-11099:latest")
	id, err := f.Ensure(context.Background(), "swebench/sweb.eval.x86_64.django_1776_django-11099:latest")
	if err != nil || id != "sha256:"+fakeID("swebench/sweb.eval.x86_64.django_1776_django-11099:latest") {
		t.Fatalf("Ensure = %q, %v", id, err)
	}
	if n := f.pulls(t); len(n) != 0 {
		t.Errorf("pulled an image the store has: %v", n)
	}
}

// Many runs asking at once for an absent image share one pull; two images
// are two pulls, each once, and Docker Hub's names are pulled qualified.
func TestEnsurePullsOncePerImage(t *testing.T) {
	f := newFakeEngine(t)
	refs := []string{"swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest", "busybox:1.36"}
	for _, r := range refs {
		f.published(t, r, 0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		ref := refs[i%2]
		wg.Go(func() {
			id, err := f.Ensure(context.Background(), ref)
			if err == nil && id != "sha256:"+fakeID(ref) {
				err = fmt.Errorf("%s: ID %s", ref, id)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	want := map[string]int{"docker.io/swebench/sweb.eval.x86_64.astropy_1776_astropy-12907:latest": 1, "docker.io/library/busybox:1.36": 1}
	if got := f.pulls(t); !equalCounts(got, want) {
		t.Errorf("pulls %v, want %v", got, want)
	}
	// Now present: no pull more.
	if _, err := f.Ensure(context.Background(), refs[0]); err != nil {
		t.Fatal(err)
	}
	if got := f.pulls(t); !equalCounts(got, want) {
		t.Errorf("pulled again an image the store has: %v", got)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// An image that cannot be pulled is a *MissingImageError naming it and the
// engine's complaint, for every caller of the one pull; a later call tries
// again.
func TestEnsureMissingImage(t *testing.T) {
	f := newFakeEngine(t)
	const ref = "swebench/sweb.eval.x86_64.nobody_1776_nothing-1:latest"
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, err := f.Ensure(context.Background(), ref)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		me, ok := errors.AsType[*MissingImageError](err)
		if !ok {
			t.Fatalf("error %T %v, want a *MissingImageError", err, err)
		}
		if me.Image != ref || !me.Pulled || me.Engine != Podman {
			t.Errorf("%+v", me)
		}
		want := "image " + ref + ": not found locally and the pull failed: Error: initializing source docker://docker.io/" + ref + ": reading manifest latest in docker.io/" + ref + ": manifest unknown"
		if err.Error() != want {
			t.Errorf("message\n%s\nwant\n%s", err, want)
		}
		if _, ok := errors.AsType[*CommandError](err); !ok {
			t.Errorf("the engine's command error is not wrapped: %v", err)
		}
	}
	if n := f.pulls(t)["docker.io/"+ref]; n != 1 {
		t.Errorf("%d pulls, want 1", n)
	}
	if _, err := f.Ensure(context.Background(), ref); err == nil {
		t.Fatal("no error")
	}
	if n := f.pulls(t)["docker.io/"+ref]; n != 2 {
		t.Errorf("%d pulls after a later call, want 2 (a failure is not remembered)", n)
	}
}

func TestEnsureNoPull(t *testing.T) {
	f := newFakeEngine(t)
	f.NoPull = true
	f.published(t, "busybox:1.36", 0)
	_, err := f.Ensure(context.Background(), "busybox:1.36")
	me, ok := errors.AsType[*MissingImageError](err)
	if !ok || me.Pulled || !strings.Contains(err.Error(), "image busybox:1.36: not found locally, and pulls are off (run `podman pull busybox:1.36` first)") {
		t.Fatalf("%v", err)
	}
	if n := f.pulls(t); len(n) != 0 {
		t.Errorf("pulled with NoPull: %v", n)
	}
}

func TestEnsureBadReference(t *testing.T) {
	f := newFakeEngine(t)
	for _, ref := range []string{"", "-rm", "Upper/Case", "a b"} {
		if _, err := f.Ensure(context.Background(), ref); !errors.As(err, new(*ReferenceError)) {
			t.Errorf("Ensure(%q) = %v, want a *ReferenceError", ref, err)
		}
	}
}

// A caller that gives up leaves the pull to the others; the last one to
// leave stops it (the engine's process is killed), and the next caller
// starts a pull of its own.
func TestEnsureCancel(t *testing.T) {
	f := newFakeEngine(t)
	const shared = "shared:1"
	f.published(t, shared, 2)
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := f.Ensure(ctx, shared)
		first <- err
	}()
	second := make(chan error, 1)
	go func() {
		_, err := f.Ensure(context.Background(), shared)
		second <- err
	}()
	time.Sleep(300 * time.Millisecond)
	cancel()
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the canceled caller: %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the canceled caller still waits")
	}
	if err := <-second; err != nil {
		t.Errorf("the caller that waited: %v", err)
	}
	if n := f.pulls(t)["docker.io/library/"+shared]; n != 1 {
		t.Errorf("%d pulls, want 1", n)
	}

	const alone = "alone:1"
	f.published(t, alone, 30)
	tctx, tcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer tcancel()
	start := time.Now()
	if _, err := f.Ensure(tctx, alone); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ensure = %v, want the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Ensure returned after %v", d)
	}
	pid := f.pullPID(t, alone)
	gone := false
	for range 50 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			gone = true
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !gone {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Error("the pull no one waits for still runs")
	}
	f.published(t, alone, 0)
	if _, err := f.Ensure(context.Background(), alone); err != nil {
		t.Fatalf("a later call: %v", err)
	}
	if n := f.pulls(t)["docker.io/library/"+alone]; n != 2 {
		t.Errorf("%d pulls, want 2 (the stopped one and a new one)", n)
	}
}

// Prefetch ensures each image once, at most parallel at once, tells of
// each outcome, and a run's Ensure during it joins its pull.
func TestPrefetch(t *testing.T) {
	f := newFakeEngine(t)
	var refs []string
	for i := range 6 {
		refs = append(refs, fmt.Sprintf("swebench/sweb.eval.x86_64.o_1776_r-%d:latest", i))
	}
	for _, r := range refs[:5] {
		f.published(t, r, 0)
	}
	f.local(t, refs[0])
	list := append(slices.Clone(refs), "", refs[1], refs[2])
	var mu sync.Mutex
	outcomes := map[string]error{}
	calls := 0
	ran := make(chan error, 1)
	go func() {
		// A run needing an image the prefetch is pulling.
		time.Sleep(50 * time.Millisecond)
		_, err := f.Ensure(context.Background(), refs[1])
		ran <- err
	}()
	f.Prefetch(context.Background(), list, 2, func(ref string, err error) {
		mu.Lock()
		defer mu.Unlock()
		outcomes[ref] = err
		calls++
	})
	if err := <-ran; err != nil {
		t.Fatalf("the run's Ensure: %v", err)
	}
	if calls != len(refs) || len(outcomes) != len(refs) {
		t.Errorf("done called %d times for %d images: %v", calls, len(outcomes), outcomes)
	}
	for i, r := range refs {
		err := outcomes[r]
		if i < 5 && err != nil {
			t.Errorf("%s: %v", r, err)
		}
		if i == 5 && !errors.As(err, new(*MissingImageError)) {
			t.Errorf("%s: %v, want a *MissingImageError", r, err)
		}
	}
	n := f.pulls(t)
	if _, ok := n["docker.io/"+refs[0]]; ok {
		t.Errorf("pulled the image the store has")
	}
	for _, r := range refs[1:] {
		if n["docker.io/"+r] != 1 {
			t.Errorf("%s pulled %d times, want once", r, n["docker.io/"+r])
		}
	}
	if m := f.inFlight(t); m > 2 {
		t.Errorf("%d pulls at once, want at most 2 (the run joins the prefetch's pull)", m)
	}
}

func TestPrefetchCanceled(t *testing.T) {
	f := newFakeEngine(t)
	f.published(t, "slow:1", 30)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Canceled once the first pull runs: the test is about what a
	// cancellation does to a pull under way and to those not started,
	// whatever the machine's speed.
	go func() {
		for ctx.Err() == nil {
			if _, err := f.fake.PullPID("slow:1"); err == nil {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start := time.Now()
	var got []error
	f.Prefetch(ctx, []string{"slow:1", "never:1", "never:2"}, 1, func(_ string, err error) { got = append(got, err) })
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Prefetch returned after %v", d)
	}
	if len(got) != 1 || !errors.Is(got[0], context.Canceled) {
		t.Errorf("outcomes %v, want the first's cancellation only", got)
	}
	if n := f.pulls(t); len(n) != 1 {
		t.Errorf("pulls %v, want the first only", n)
	}
	if p, err := f.fake.PullPID("slow:1"); err == nil {
		for range 50 {
			if syscall.Kill(p, 0) != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		syscall.Kill(p, syscall.SIGKILL)
		t.Error("the canceled pull still runs")
	}
}

func TestQualified(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"busybox", "docker.io/library/busybox"},
		{"busybox:1.36", "docker.io/library/busybox:1.36"},
		{"swebench/sweb.eval.x86_64.django_1776_django-11099:latest", "docker.io/swebench/sweb.eval.x86_64.django_1776_django-11099:latest"},
		{"mswebench/ponylang_m_ponyc:pr-4595", "docker.io/mswebench/ponylang_m_ponyc:pr-4595"},
		{"docker.io/library/python:3.9", "docker.io/library/python:3.9"},
		{"ghcr.io/org/img:1", "ghcr.io/org/img:1"},
		{"localhost/truss-test:abc", "localhost/truss-test:abc"},
		{"localhost:5000/x", "localhost:5000/x"},
		{"registry:5000/x", "registry:5000/x"},
		{"a/b/c@sha256:" + strings.Repeat("a", 64), "docker.io/a/b/c@sha256:" + strings.Repeat("a", 64)},
		{"sha256:" + strings.Repeat("b", 64), "sha256:" + strings.Repeat("b", 64)},
	} {
		if got := Qualified(tc.in); got != tc.want {
			t.Errorf("Qualified(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestEnsureImportedImage (the real engine): an image imported on this
// host is found at once, without a pull (there is no registry here); an
// absent one is a *MissingImageError.
func TestEnsureImportedImage(t *testing.T) {
	e, ref := testImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	want, err := e.ImageID(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	id, err := e.Ensure(ctx, ref)
	if err != nil || id != want {
		t.Fatalf("Ensure(%s) = %q, %v; want %q", ref, id, err, want)
	}
	t.Logf("found %s in %v", ref, time.Since(start))
	// localhost names no registry there is: the pull fails at once, and
	// the engine says why.
	absent := "localhost/truss-test-absent:" + newTag()[:8]
	_, err = e.Ensure(ctx, absent)
	if me, ok := errors.AsType[*MissingImageError](err); !ok || !me.Pulled || !strings.HasPrefix(err.Error(), "image "+absent+": not found locally and the pull failed: ") {
		t.Fatalf("Ensure(%s) = %v, want a *MissingImageError", absent, err)
	}
	t.Logf("absent: %v", err)
}
