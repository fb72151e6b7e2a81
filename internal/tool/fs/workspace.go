// Package fs executes Truss's file operations inside a workspace.
//
// Every path is resolved against the workspace root. Relative paths are taken
// relative to the root; absolute paths must lie inside the root or one of the
// configured extra roots. All reads and writes are resolved beneath a
// descriptor of the root (os.Root, and a hostfs.Root that follows only
// links staying beneath it), so a path that leads outside its root —
// through "..", an absolute path or a symlink, even one swapped in between
// check and use — is refused by the kernel-level resolution and nothing
// outside is read or written.
//
// A command in the sandbox can plant anything in a root, and the tools run
// on the host, so no open blocks: files are read through hostfs, opened
// O_NONBLOCK and fstat'ed, and anything but a regular file (a FIFO, a
// socket, a device) is refused with an ErrUnsupported error the model
// reads, as is an open a file lease would make wait (ErrIO); reads are
// capped; listings open each directory O_DIRECTORY beneath its parent.
//
// Writes are atomic (hostfs.Root.WriteFile): the new content goes to a
// file created O_EXCL|O_NOFOLLOW in a descriptor of the target's
// directory, is synced, takes the old file's mode, and is renamed over
// the target in that same directory, so a link planted at either name is
// replaced, never written through.
//
// Some paths are read-only to every operation, whatever the roots allow:
// every .git (a directory or a "gitdir:" file, at any depth of any root, in
// any letter case, also one made during the session), the directory a
// root's .git file names when it lies in a root, and Truss's project
// configuration (.truss at the primary root). A write, delete or rename of
// such a path, of anything below it, or of a directory holding one is an
// ErrReadOnly error.
package fs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/tool"
)

// RootSpec describes one extra root.
type RootSpec struct {
	Path     string
	ReadOnly bool
}

// ConfigDir is Truss's project configuration directory at the primary
// root, read-only to every operation.
const ConfigDir = ".truss"

// Workspace is a set of roots: the primary workspace root (read-write unless
// the workspace is read-only) and extra roots.
type Workspace struct {
	roots []root
	// gitdirs are the directories the roots' .git files name, absolute,
	// when they lie inside a root.
	gitdirs []string
	// locks are the mutexes of the writable roots, in the order of their
	// directories (so that workspaces sharing roots lock them alike).
	locks []*sync.Mutex
}

// Locks is a registry of one mutex per root directory, which serializes
// the changes made through every Workspace opened with it. A session owns
// one and opens each workspace on a shared directory with it (a
// workspace opened without one makes its own, so the executors sharing
// one *Workspace are serialized all the same). The zero value is ready.
type Locks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (l *Locks) get(dir string) *sync.Mutex {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*sync.Mutex{}
	}
	m, ok := l.m[dir]
	if !ok {
		m = &sync.Mutex{}
		l.m[dir] = m
	}
	return m
}

// WorkspaceOptions configure a workspace.
type WorkspaceOptions struct {
	// Extra are the roots besides the primary one.
	Extra []RootSpec
	// Locks serializes changes with the other workspaces opened with the
	// same registry; nil gives the workspace a registry of its own.
	Locks *Locks
	// Aliases are other absolute spellings of the primary root: a path
	// below one resolves to the same path below the root (the workspace's
	// path inside a task's container, which the model's shell sees).
	Aliases []string
}

// Lock locks the workspace's writable roots for a change and returns the
// function that unlocks them. The file executors hold it for every call
// that changes files (and the patch engine from reading a patch's files
// to writing them), so that two agents' changes never interleave.
func (w *Workspace) Lock() (unlock func()) {
	for _, m := range w.locks {
		m.Lock()
	}
	return func() {
		for i := len(w.locks) - 1; i >= 0; i-- {
			w.locks[i].Unlock()
		}
	}
}

type root struct {
	dir      string   // absolute, cleaned, symlinks resolved
	alias    []string // other spellings of dir (the unresolved form)
	readOnly bool
	r        *os.Root
	// h is the same directory for reads, listings and writes that must
	// never block: links are followed only while they stay beneath it.
	h *hostfs.Root
}

// Open opens a workspace rooted at dir with optional extra roots.
func Open(dir string, extra ...RootSpec) (*Workspace, error) {
	return OpenWith(dir, WorkspaceOptions{Extra: extra})
}

// OpenWith opens a workspace rooted at dir with options.
func OpenWith(dir string, o WorkspaceOptions) (*Workspace, error) {
	w := &Workspace{}
	specs := append([]RootSpec{{Path: dir}}, o.Extra...)
	for _, s := range specs {
		abs, err := filepath.Abs(s.Path)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace root %q: %w", s.Path, err)
		}
		real, err := filepath.EvalSymlinks(abs)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace root %q: %w", s.Path, err)
		}
		r, err := os.OpenRoot(real)
		if err != nil {
			w.Close()
			return nil, fmt.Errorf("workspace root %q: %w", s.Path, err)
		}
		h, err := hostfs.OpenRootWith(real, hostfs.Options{Beneath: true})
		if err != nil {
			r.Close()
			w.Close()
			return nil, fmt.Errorf("workspace root %q: %w", s.Path, err)
		}
		rt := root{dir: real, readOnly: s.ReadOnly, r: r, h: h}
		if abs != real {
			rt.alias = []string{abs}
		}
		if len(w.roots) == 0 {
			for _, a := range o.Aliases {
				if filepath.IsAbs(a) && filepath.Clean(a) != string(filepath.Separator) {
					rt.alias = append(rt.alias, filepath.Clean(a))
				}
			}
		}
		w.roots = append(w.roots, rt)
	}
	for _, rt := range w.roots {
		if dir := gitdirOf(rt.dir); dir != "" {
			w.gitdirs = append(w.gitdirs, dir)
		}
	}
	locks := o.Locks
	if locks == nil {
		locks = &Locks{}
	}
	var dirs []string
	for _, rt := range w.roots {
		if !rt.readOnly && !slices.Contains(dirs, rt.dir) {
			dirs = append(dirs, rt.dir)
		}
	}
	slices.Sort(dirs)
	for _, d := range dirs {
		w.locks = append(w.locks, locks.get(d))
	}
	return w, nil
}

// gitdirOf returns the directory named by dir's .git when that is a
// "gitdir:" file (a worktree or a submodule), symlinks resolved; "" when
// there is none.
func gitdirOf(dir string) string {
	// A .git directory, a link or a FIFO in its place is no gitdir file;
	// the read never blocks and stops at 64 KiB.
	b, err := hostfs.ReadFileIn(dir, ".git", 64<<10)
	if err != nil {
		return ""
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	target = strings.TrimSpace(target)
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	if real, err := filepath.EvalSymlinks(target); err == nil {
		return real
	}
	return filepath.Clean(target)
}

// Close releases the roots.
func (w *Workspace) Close() error {
	for _, r := range w.roots {
		r.r.Close()
		r.h.Close()
	}
	return nil
}

// Dir returns the primary root directory (absolute, symlinks resolved).
func (w *Workspace) Dir() string { return w.roots[0].dir }

// Resolved is a path resolved inside one root.
type Resolved struct {
	w       *Workspace
	root    *root
	primary bool
	Rel     string // relative to the root, OS separators; "." for the root itself
	Abs     string // absolute path (for messages)
}

// RootDir returns the directory of the root p lies in (absolute,
// symlinks resolved), for a caller that opens p by its Rel beneath it.
func (p Resolved) RootDir() string { return p.root.dir }

// Display returns the path relative to the primary root when it lies there,
// else the absolute path; '/' separated.
func (p Resolved) Display() string {
	if p.primary {
		return filepath.ToSlash(p.Rel)
	}
	return filepath.ToSlash(p.Abs)
}

// Resolve resolves name against the workspace. It refuses, with an
// ErrOutsideRoot error, any path that lies lexically outside every root or
// whose existing part leads outside its root through a symlink.
func (w *Workspace) Resolve(name string) (Resolved, error) {
	if name == "" {
		return Resolved{}, tool.Errorf(tool.ErrInvalidInput, "the path is empty")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return Resolved{}, tool.Errorf(tool.ErrInvalidInput, "the path %q contains a NUL byte", name)
	}
	abs := name
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.roots[0].dir, name)
	}
	abs = filepath.Clean(abs)
	for i := range w.roots {
		rt := &w.roots[i]
		for _, d := range append([]string{rt.dir}, rt.alias...) {
			rel, ok := within(d, abs)
			if !ok {
				continue
			}
			p := Resolved{w: w, root: rt, primary: i == 0, Rel: rel, Abs: filepath.Join(rt.dir, rel)}
			if err := w.checkLinks(p, name); err != nil {
				return Resolved{}, err
			}
			return p, nil
		}
	}
	return Resolved{}, outside(name)
}

func outside(name string) error {
	return &tool.Error{Kind: tool.ErrOutsideRoot, Path: name,
		Message: fmt.Sprintf("the path %s is outside the workspace; only paths inside the workspace root (or a configured extra root) can be used", name)}
}

// within reports rel when abs is dir or lies below it.
func within(dir, abs string) (string, bool) {
	rel, err := filepath.Rel(dir, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// checkLinks resolves the longest existing prefix of p and refuses it when a
// symlink leads outside p's root. os.Root enforces the same at use; this
// check exists to give a clear message.
func (w *Workspace) checkLinks(p Resolved, name string) error {
	cur := p.Abs
	for {
		if _, err := os.Lstat(cur); err == nil {
			break
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return nil
		}
		cur = parent
	}
	real, err := filepath.EvalSymlinks(cur)
	if err != nil {
		// A dangling symlink: refuse unless its target stays inside.
		if target, lerr := os.Readlink(cur); lerr == nil {
			if !filepath.IsAbs(target) {
				target = filepath.Join(filepath.Dir(cur), target)
			}
			if _, ok := within(p.root.dir, filepath.Clean(target)); !ok {
				return outside(name)
			}
		}
		return nil
	}
	if _, ok := within(p.root.dir, real); !ok {
		return outside(name)
	}
	return nil
}

func (p Resolved) writable() error {
	if p.root.readOnly {
		return &tool.Error{Kind: tool.ErrReadOnly, Path: p.Display(),
			Message: fmt.Sprintf("the path %s is in a read-only root and cannot be changed", p.Display())}
	}
	if err := p.protected(); err != nil {
		return err
	}
	// Where the links of p's directories lead (a write checks again from
	// the descriptor it writes through).
	rel := filepath.ToSlash(p.Rel)
	for rel != "." {
		real, err := p.root.h.RealName(rel)
		if err == nil {
			if rel != filepath.ToSlash(p.Rel) {
				real = path.Join(real, strings.TrimPrefix(filepath.ToSlash(p.Rel), rel+"/"))
			}
			return p.reached(filepath.FromSlash(real))
		}
		if !hostfs.IsNotExist(err) {
			return nil // the operation itself reports what is wrong
		}
		rel = path.Dir(rel)
	}
	return nil
}

// protected refuses p when it is a protected path or lies below one, or
// is a directory that holds one (see the package documentation).
func (p Resolved) protected() error {
	why := ""
	parts := strings.Split(p.Rel, string(filepath.Separator))
	switch {
	case slices.ContainsFunc(parts, isGit):
		why = "in a .git directory: the repository's history and configuration are read-only to every tool"
	case p.primary && parts[0] == ConfigDir:
		why = "in Truss's project configuration (" + ConfigDir + "), which is read-only to every tool: the user edits it, and trusts it with `truss trust`"
	case slices.ContainsFunc(p.w.gitdirs, func(d string) bool { _, in := within(d, p.Abs); return in }):
		why = "in the repository's git directory, which is read-only to every tool"
	default:
		if fi, err := p.root.r.Lstat(p.Rel); err != nil || !fi.IsDir() {
			return nil
		}
		if p.primary && p.Rel == "." {
			why = "the workspace root, which holds Truss's project configuration"
			break
		}
		for _, d := range p.w.gitdirs {
			if _, in := within(p.Abs, d); in {
				why = "a directory holding the repository's git directory, which is read-only to every tool"
			}
		}
		if why != "" {
			break
		}
		p.walk(func(_ string, info hostfs.Info, err error) error {
			if err == nil && isGit(info.Name()) {
				why = "a directory holding a .git, which is read-only to every tool"
				return fs.SkipAll
			}
			return nil
		})
		if why == "" {
			return nil
		}
	}
	return &tool.Error{Kind: tool.ErrReadOnly, Path: p.Display(),
		Message: fmt.Sprintf("the path %s is %s", p.Display(), why)}
}

// isGit reports whether a path element names a .git, in any letter case
// (a case-insensitive file system takes .GIT for .git).
func isGit(name string) bool { return strings.EqualFold(name, ".git") }

// ReadFile reads the regular file at p, at most DefaultMaxFileBytes: see
// ReadFileMax.
func (p Resolved) ReadFile() ([]byte, error) { return p.ReadFileMax(DefaultMaxFileBytes) }

// ReadFileMax reads the regular file at p, at most max bytes, without
// ever blocking: it is opened O_NONBLOCK beneath its root (links followed
// while they stay beneath it) and fstat'ed. A FIFO, socket, device or
// directory is refused (ErrUnsupported), so is an open that a file lease
// would make wait (ErrIO), a link leading outside the root
// (ErrOutsideRoot) and a file over max (ErrInvalidInput): each a
// *tool.Error naming p. Other errors (a missing file, a permission) are
// returned as the OS gave them, for errors.Is.
func (p Resolved) ReadFileMax(max int64) ([]byte, error) {
	b, err := p.root.h.ReadFile(filepath.ToSlash(p.Rel), max)
	if err != nil {
		return nil, refusal(p.Display(), err)
	}
	return b, nil
}

// Open opens the regular file at p as ReadFileMax does and closes it,
// reading nothing: the error is the one ReadFileMax would return, but for
// the size.
func (p Resolved) Open() error {
	f, err := p.root.h.Open(filepath.ToSlash(p.Rel))
	if err != nil {
		return refusal(p.Display(), err)
	}
	return f.Close()
}

// Stat stats the file at p, following symlinks inside the root.
func (p Resolved) Stat() (fs.FileInfo, error) { return p.root.r.Stat(p.Rel) }

// walk calls fn for p and, when p is a directory, for everything beneath
// it, in lexical order, depth first, as fs.WalkDir does: name is
// slash-separated relative to the root, info is what fstatat said (links
// below p are reported, not descended into). Each directory is opened
// O_DIRECTORY|O_NONBLOCK by its name beneath the root's descriptor, so a
// directory swapped for a FIFO or for a link leading outside is an error
// for fn (called a second time for that directory, as fs.WalkDir does),
// never a hang nor a listing outside; one swapped for a link that stays
// beneath the root is listed as the link's target. fn's SkipDir skips a
// directory, SkipAll ends the walk.
func (p Resolved) walk(fn func(name string, info hostfs.Info, err error) error) error {
	base := filepath.ToSlash(p.Rel)
	info, err := p.root.h.Lstat(base)
	if err == nil && info.Mode&fs.ModeSymlink != 0 {
		// p itself may be a link that stays beneath the root.
		if d, derr := p.root.h.OpenDir(base); derr == nil {
			d.Close()
			info.Mode = info.Mode&^fs.ModeSymlink | fs.ModeDir
		}
	}
	if err != nil {
		err = fn(base, info, err)
	} else if err = fn(base, info, nil); err == nil && info.IsDir() {
		err = walkDir(p.root.h, base, fn)
	}
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// walkDir lists dir beneath h and calls fn for each entry, descending
// into directories: see Resolved.walk.
func walkDir(h *hostfs.Root, dir string, fn func(string, hostfs.Info, error) error) error {
	d, err := h.OpenDir(dir)
	var ents []hostfs.Entry
	if err == nil {
		ents, err = d.ReadDir()
		d.Close()
	}
	if err != nil {
		info, _ := h.Lstat(dir)
		if err = fn(dir, info, err); err != nil {
			if errors.Is(err, fs.SkipDir) {
				return nil
			}
			return err
		}
		return nil
	}
	for _, e := range ents {
		name := path.Join(dir, e.Name)
		err := fn(name, e.Info, nil)
		if err == nil && e.Info.IsDir() {
			err = walkDir(h, name, fn)
		}
		if errors.Is(err, fs.SkipDir) {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// WriteFileMode writes data to p atomically, creating parent directories.
// The file keeps its mode when it exists; a new file gets fileMode and new
// directories dirMode (0 for 0644 and 0755, less the umask). The write is
// hostfs.Root.WriteFile's: never through a link planted at p or at its
// temporary name, the directory held open from the temporary file's
// creation to the rename.
func (p Resolved) WriteFileMode(data []byte, fileMode, dirMode fs.FileMode) error {
	if err := p.writable(); err != nil {
		return err
	}
	r := p.root.r
	mode := fs.FileMode(0o644)
	if fileMode != 0 {
		mode = fileMode
	}
	if dirMode == 0 {
		dirMode = 0o755
	}
	if fi, err := r.Stat(p.Rel); err == nil {
		if fi.IsDir() {
			return isDir(p.Display())
		}
		mode = fi.Mode().Perm()
	}
	dir := filepath.Dir(p.Rel)
	if dir != "." {
		if err := r.MkdirAll(dir, dirMode); err != nil {
			return ioErr("create the directory for", p.Display(), err)
		}
	}
	// The name the write reaches, from the directory descriptor it uses:
	// a link inside the workspace (g -> .git) cannot carry it into a
	// protected directory, nor can one swapped in after writable looked.
	guard := func(real string) error { return p.reached(filepath.FromSlash(real)) }
	if err := p.root.h.WriteFileGuard(filepath.ToSlash(p.Rel), data, mode, guard); err != nil {
		var te *tool.Error
		if errors.As(err, &te) {
			return err
		}
		return ioErr("write", p.Display(), refusal(p.Display(), err))
	}
	return nil
}

// reached refuses p when real, the name beneath p's root that an
// operation on p reaches once the links of its directories are resolved,
// differs from p's own and is protected.
func (p Resolved) reached(real string) error {
	if real == p.Rel {
		return nil
	}
	q := p
	q.Rel, q.Abs = real, filepath.Join(p.root.dir, real)
	if err := q.protected(); err != nil {
		return &tool.Error{Kind: tool.ErrReadOnly, Path: p.Display(),
			Message: fmt.Sprintf("the path %s leads through a symbolic link to %s: %s", p.Display(), q.Display(), strings.TrimPrefix(err.Error(), "the path "+q.Display()+" is "))}
	}
	return nil
}

// refusal turns hostfs's refusals into the tool errors the model reads;
// other errors are returned as they are.
func refusal(path string, err error) error {
	reason := err
	var he *hostfs.Error
	if errors.As(err, &he) {
		reason = he.Err
	}
	switch {
	case errors.Is(err, hostfs.ErrEscapes), errors.Is(err, hostfs.ErrLink):
		return outside(path)
	case errors.Is(err, hostfs.ErrNotRegular):
		return &tool.Error{Kind: tool.ErrUnsupported, Path: path, Err: err,
			Message: fmt.Sprintf("the path %s %v; Truss reads and edits only regular files", path, reason)}
	case errors.Is(err, hostfs.ErrBusy):
		return &tool.Error{Kind: tool.ErrIO, Path: path, Err: err,
			Message: fmt.Sprintf("the file %s is held by another process with a file lease; Truss does not wait for it, try again later", path)}
	case errors.Is(err, hostfs.ErrTooLarge):
		return &tool.Error{Kind: tool.ErrInvalidInput, Path: path, Err: err,
			Message: fmt.Sprintf("the file %s %v: more than a tool reads", path, reason)}
	}
	return err
}

func isDir(path string) error {
	return &tool.Error{Kind: tool.ErrIsDir, Path: path, Message: fmt.Sprintf("the path %s is a directory", path)}
}

func notFound(path string) error {
	return &tool.Error{Kind: tool.ErrNotFound, Path: path, Message: fmt.Sprintf("the path %s does not exist", path)}
}

// ioErr maps an OS error to a typed tool error.
func ioErr(verb, path string, err error) error {
	var te *tool.Error
	if errors.As(err, &te) {
		return err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return notFound(path)
	case isEscape(err):
		return outside(path)
	case errors.Is(err, fs.ErrPermission):
		return &tool.Error{Kind: tool.ErrIO, Path: path, Err: err, Message: fmt.Sprintf("permission denied: cannot %s %s", verb, path)}
	}
	return &tool.Error{Kind: tool.ErrIO, Path: path, Err: err, Message: fmt.Sprintf("cannot %s %s: %v", verb, path, unwrapPath(err))}
}

func isEscape(err error) bool {
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
