package container

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Pulling. Start never pulls (its `run --pull never`): a session's image
// is the user's to provide. A benchmark's per-task images are many and
// published (SWE-bench's on Docker Hub), so the benchmark asks Ensure
// for each before it starts a container from it: present in the
// engine's store, the image is used as it is; absent, the engine pulls
// it, once however many runs ask for it at the same time.

// MissingImageError says an image is not in the engine's store and could
// not be pulled into it: the pull failed (Err is the engine's
// *CommandError, whose Stderr is its complaint), or pulls are off
// (Engine.NoPull; Err is the store's *ImageNotFoundError).
type MissingImageError struct {
	// Engine is the engine's name, Image the reference asked for.
	Engine, Image string
	// Pulled is true when a pull was tried.
	Pulled bool
	Err    error
}

func (e *MissingImageError) Error() string {
	if !e.Pulled {
		return fmt.Sprintf("image %s: not found locally, and pulls are off (run `%s pull %s` first)", e.Image, e.Engine, e.Image)
	}
	msg := e.Err.Error()
	if ce, ok := errors.AsType[*CommandError](e.Err); ok {
		msg = complaint(ce)
	}
	return fmt.Sprintf("image %s: not found locally and the pull failed: %s", e.Image, msg)
}

func (e *MissingImageError) Unwrap() error { return e.Err }

// complaint is what an engine said when a command failed: the last
// non-empty line of its standard error (a pull's progress and retries
// come before its verdict), else the exit status.
func complaint(ce *CommandError) string {
	last := ""
	for l := range strings.Lines(ce.Stderr) {
		if l = strings.TrimSpace(l); l != "" {
			last = l
		}
	}
	if last == "" {
		return fmt.Sprintf("%s exited with status %d", ce.Args[0], ce.ExitCode)
	}
	return last
}

// pull is one pull in flight: its waiters share it.
type pull struct {
	done    chan struct{} // closed when id and err are set
	id      string
	err     error
	waiters int                // Ensure calls waiting for it
	cancel  context.CancelFunc // stops the pull once no one waits
}

// pulls is the engine's pulls in flight, by reference.
type pulls struct {
	mu     sync.Mutex
	flight map[string]*pull
}

// Ensure makes sure the image ref is in the engine's store and returns its
// ID (config digest, "sha256:…"). Present, it returns at once without
// asking a registry. Absent, the engine pulls it (`podman pull`,
// `docker pull`; a reference without a registry is Docker Hub's, as
// Docker and SWE-bench's harness read it), unless NoPull is set. Calls
// for the same reference while its pull is in flight share that pull:
// an image is pulled once however many runs ask for it at once. The pull
// goes on while any caller still waits and stops when the last one's ctx
// ends; a failed pull is not remembered, so a later call tries again.
//
// When the image is absent and cannot be pulled the error is a
// *MissingImageError naming the image and the engine's complaint; an
// invalid reference is a *ReferenceError; ctx's end is ctx.Err().
func (e *Engine) Ensure(ctx context.Context, ref string) (string, error) {
	if err := ValidateReference(ref); err != nil {
		return "", err
	}
	id, err := e.ImageID(ctx, ref)
	if err == nil {
		return id, nil
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	if e.NoPull {
		return "", &MissingImageError{Engine: e.Name, Image: ref, Err: err}
	}
	p := e.join(ref)
	defer e.leave(ref, p)
	select {
	case <-p.done:
		return p.id, p.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// join returns ref's pull in flight, starting it when there is none, and
// counts the caller among its waiters.
func (e *Engine) join(ref string) *pull {
	e.pulls.mu.Lock()
	defer e.pulls.mu.Unlock()
	if p := e.pulls.flight[ref]; p != nil {
		p.waiters++
		return p
	}
	if e.pulls.flight == nil {
		e.pulls.flight = map[string]*pull{}
	}
	// The pull is no one caller's: it has a context of its own, ended
	// when its last waiter leaves.
	ctx, cancel := context.WithCancel(context.Background())
	p := &pull{done: make(chan struct{}), waiters: 1, cancel: cancel}
	e.pulls.flight[ref] = p
	go func() {
		defer cancel()
		p.id, p.err = e.pull(ctx, ref)
		e.pulls.mu.Lock()
		if e.pulls.flight[ref] == p {
			delete(e.pulls.flight, ref)
		}
		e.pulls.mu.Unlock()
		close(p.done)
	}()
	return p
}

// leave uncounts a waiter of p; the last one to leave before the pull
// ends stops it, and a caller that comes later starts another.
func (e *Engine) leave(ref string, p *pull) {
	e.pulls.mu.Lock()
	defer e.pulls.mu.Unlock()
	p.waiters--
	if p.waiters > 0 {
		return
	}
	select {
	case <-p.done:
	default:
		p.cancel()
		if e.pulls.flight[ref] == p {
			delete(e.pulls.flight, ref)
		}
	}
}

// pull pulls ref unless it has arrived since the caller looked (a pull
// that has just ended), and returns its ID.
func (e *Engine) pull(ctx context.Context, ref string) (string, error) {
	if id, err := e.ImageID(ctx, ref); err == nil {
		return id, nil
	}
	if _, err := e.output(ctx, "pull", "--quiet", Qualified(ref)); err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", &MissingImageError{Engine: e.Name, Image: ref, Pulled: true, Err: err}
	}
	id, err := e.ImageID(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("image %s: pulled, yet not found in %s's store: %w", ref, e.Name, err)
	}
	return id, nil
}

// Qualified is ref with the registry Docker reads into a reference that
// names none: docker.io, and docker.io/library for a one-component name
// ("busybox:1" is docker.io/library/busybox:1). A reference naming a
// registry (a first component with '.' or ':', or localhost) or an image
// ID is returned as it is. Podman pulls the qualified name, so that no
// short-name resolution (registries.conf, a prompt) chooses another
// registry than Docker's.
func Qualified(ref string) string {
	if imageIDRE.Get().MatchString(ref) {
		return ref
	}
	first, rest, ok := strings.Cut(ref, "/")
	if !ok {
		return "docker.io/library/" + ref
	}
	if strings.ContainsAny(first, ".:") || first == "localhost" {
		return ref
	}
	return "docker.io/" + first + "/" + rest
}

// Prefetch ensures each image of refs (Ensure), at most parallel at once
// (at least 1), in the order given, each once; "" and repeated references
// are skipped. It returns when every image is ensured or ctx ends, and
// tells done, when set, of each image's outcome as it comes (nil for one
// that is there; calls to done may be concurrent). Run it in a goroutine
// of its own at a benchmark's start, in the order the runs will need the
// images: the pulls then overlap the agents' work, and a run that asks
// for an image being prefetched waits for that same pull.
func (e *Engine) Prefetch(ctx context.Context, refs []string, parallel int, done func(ref string, err error)) {
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	seen := map[string]bool{}
	for _, ref := range refs {
		if ref == "" || seen[ref] {
			continue
		}
		seen[ref] = true
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return
		}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := e.Ensure(ctx, ref)
			if done != nil {
				done(ref, err)
			}
		})
	}
	wg.Wait()
}
