package bench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Want is a checkout that will be asked for: of Commit from the repository
// at Repo, made at a path under Near. Near must be on the file system of
// that path (the parent the caller makes its directories in), for a
// checkout made ahead there is moved into place with a rename.
type Want struct {
	Repo, Commit, Near string
}

// plan is one Plan call's checkouts still to be made ahead.
type plan struct {
	ahead   int
	pending []Want // in order, repositories absolute
	// dirs are the private directories, one per Near, where its
	// checkouts are made.
	dirs   map[string]string
	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the builder has stopped
	// inflight counts takers of this plan's spares between their
	// claim and their rename; withdraw waits for them (cond, under
	// Templates.mu).
	inflight int
	cond     *sync.Cond
}

// spare is a checkout made ahead for a plan.
type spare struct {
	plan *plan
	want Want
	dir  string
	// head and err are set, and finished, before done is closed.
	head     string
	err      error
	finished bool
	// claimed by a Checkout; abandoned when its taker gave up while it
	// was being made (the builder removes it then).
	claimed, abandoned bool
	done               chan struct{}
}

// Plan declares checkouts that callers of Checkout will ask for, in the
// order they are expected, and makes up to ahead of them ahead of time,
// one at a time, in the background (the template's fetch included), so
// that a run's checkout is a rename instead of writing its files while
// the run waits. A Checkout that matches a Want (same repository and
// commit, destination under Near) takes the first checkout made for it,
// waiting for it if it is being made; one that finds none is made as
// without a plan, and the Want it fulfils is not made ahead any more.
//
// Checkouts made ahead are kept in a private directory (mode 0700) in
// each Near, which Private lists: callers hide it from the commands they
// run, since it holds other tasks' trees. The returned withdraw stops the
// background work, waits for it, and removes every checkout made ahead
// and not taken; Plan's ctx ending stops the work too. A plan whose
// private directory cannot be made is no plan: checkouts are made as
// without one.
func (t *Templates) Plan(ctx context.Context, wants []Want, ahead int) (withdraw func()) {
	if t == nil || ahead <= 0 || len(wants) == 0 {
		return func() {}
	}
	p := &plan{ahead: ahead, dirs: map[string]string{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	p.ctx, p.cancel = context.WithCancel(ctx)
	for _, w := range wants {
		var err error
		if w.Repo, err = filepath.Abs(w.Repo); err != nil {
			continue
		}
		if w.Near == "" {
			w.Near = os.TempDir()
		}
		w.Near = filepath.Clean(w.Near)
		if _, ok := p.dirs[w.Near]; !ok {
			d, err := os.MkdirTemp(w.Near, ".truss-ahead-")
			if err != nil {
				p.dirs[w.Near] = ""
			} else {
				p.dirs[w.Near] = d
			}
		}
		if p.dirs[w.Near] != "" {
			p.pending = append(p.pending, w)
		}
	}
	t.mu.Lock()
	p.cond = sync.NewCond(&t.mu)
	t.plans = append(t.plans, p)
	t.mu.Unlock()
	go t.build(p)
	return func() { t.withdraw(p) }
}

// Private returns the directories where planned checkouts are made.
func (t *Templates) Private() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, p := range t.plans {
		for _, d := range p.dirs {
			if d != "" {
				out = append(out, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// build makes p's checkouts ahead, one at a time, keeping up to p.ahead
// made and not taken, until p is withdrawn or has none left.
func (t *Templates) build(p *plan) {
	defer close(p.done)
	for {
		t.mu.Lock()
		made := 0
		for _, s := range t.spares {
			if s.plan == p && !s.claimed {
				made++
			}
		}
		var s *spare
		if made < p.ahead && len(p.pending) > 0 && p.ctx.Err() == nil {
			s = &spare{plan: p, want: p.pending[0], done: make(chan struct{})}
			p.pending = p.pending[1:]
			t.spares = append(t.spares, s)
		}
		left := len(p.pending)
		t.mu.Unlock()
		if s == nil {
			if left == 0 {
				return
			}
			select {
			case <-p.kick:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		head, err := t.makeSpare(p, s)
		t.mu.Lock()
		s.head, s.err, s.finished = head, err, true
		if err != nil || s.abandoned {
			if s.dir != "" {
				os.RemoveAll(s.dir)
			}
			if !s.claimed || s.abandoned {
				t.spares = slices.DeleteFunc(t.spares, func(x *spare) bool { return x == s })
			}
		}
		t.mu.Unlock()
		close(s.done)
	}
}

// makeSpare makes s's checkout in its plan's private directory for s's
// Near.
func (t *Templates) makeSpare(p *plan, s *spare) (string, error) {
	dir, err := os.MkdirTemp(p.dirs[s.want.Near], "checkout-")
	if err != nil {
		return "", err
	}
	s.dir = dir
	return t.checkout(p.ctx, s.want.Repo, s.want.Commit, filepath.Join(dir, "repo"))
}

// takeSpare moves a checkout made ahead of (abs, commit) for a Near above
// dst into dst, waiting for it while it is being made. It reports false
// when there was none to take (then it withdraws the Want dst fulfils
// from its plan), or the one taken failed or could not be moved: the
// caller makes the checkout itself.
func (t *Templates) takeSpare(ctx context.Context, abs, commit, dst string) (string, bool) {
	dst = filepath.Clean(dst)
	under := func(near string) bool { return strings.HasPrefix(dst, near+string(filepath.Separator)) }
	t.mu.Lock()
	var s *spare
	for _, x := range t.spares {
		if !x.claimed && x.want.Repo == abs && x.want.Commit == commit && under(x.want.Near) {
			s = x
			break
		}
	}
	if s == nil {
		for _, p := range t.plans {
			if i := slices.IndexFunc(p.pending, func(w Want) bool { return w.Repo == abs && w.Commit == commit && under(w.Near) }); i >= 0 {
				p.pending = slices.Delete(p.pending, i, i+1)
				break
			}
		}
		t.mu.Unlock()
		return "", false
	}
	s.claimed = true
	p := s.plan
	p.inflight++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		p.inflight--
		p.cond.Broadcast()
		t.mu.Unlock()
		// Room for the next one.
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}()
	select {
	case <-s.done:
	case <-ctx.Done():
		t.mu.Lock()
		if !s.finished {
			s.abandoned = true // the builder removes it
			t.mu.Unlock()
		} else {
			t.mu.Unlock()
			t.dropSpare(s)
		}
		return "", false
	}
	if s.err != nil {
		t.dropSpare(s)
		return "", false
	}
	if err := moveInto(filepath.Join(s.dir, "repo"), dst); err != nil {
		t.dropSpare(s)
		return "", false
	}
	t.dropSpare(s)
	return s.head, true
}

// dropSpare forgets s, removing what is left of it.
func (t *Templates) dropSpare(s *spare) {
	os.RemoveAll(s.dir)
	t.mu.Lock()
	t.spares = slices.DeleteFunc(t.spares, func(x *spare) bool { return x == s })
	t.mu.Unlock()
}

// moveInto renames src to dst, which must not exist or be an empty
// directory.
func moveInto(src, dst string) error {
	if err := os.Rename(src, dst); err != nil {
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		// An existing directory: rename(2) would replace it were it
		// empty, but os.Rename refuses any directory as the new name.
		if err := os.Remove(dst); err != nil {
			return err
		}
		return os.Rename(src, dst)
	}
	return nil
}

// withdraw stops p's builder, waits for it and for p's takers in flight,
// and removes p's checkouts not taken and its private directories.
func (t *Templates) withdraw(p *plan) {
	p.cancel()
	<-p.done
	t.mu.Lock()
	for p.inflight > 0 {
		p.cond.Wait()
	}
	var left []*spare
	t.spares = slices.DeleteFunc(t.spares, func(s *spare) bool {
		if s.plan == p {
			left = append(left, s)
			return true
		}
		return false
	})
	t.plans = slices.DeleteFunc(t.plans, func(x *plan) bool { return x == p })
	p.pending = nil
	t.mu.Unlock()
	for _, s := range left {
		os.RemoveAll(s.dir)
	}
	for _, d := range p.dirs {
		if d != "" {
			os.RemoveAll(d)
		}
	}
}
