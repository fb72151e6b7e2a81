// Package changes finds the files that commands change in a workspace, with
// their contents before and after.
//
// File tools and patches report what they change themselves (a result's
// tool.FileChange list, with the bytes they read and wrote). A shell
// command does not: it may create, rewrite, delete or rename any file in
// the writable roots. A Tracker keeps a stat index of the roots (per file:
// type and permissions, size, inode, modification and change time — no
// content is read to build it) and, after each command, reads again the
// directories that inotify says changed (every directory, with a pool of
// goroutines, when events were lost or Options.NoWatch is set), comparing
// stat only; only the files whose stat changed are read and hashed. What
// it reports is exact where it says so:
//
//   - After contents are the bytes read by the scan that found the change.
//     A command still running in the background (started with &) can
//     change a file between the scan's stat and its read; the next scan
//     sees that change as one of its own.
//   - Before contents come from what the tracker kept: the content of
//     every file it has seen change (in a content store: one pack file in a
//     private directory, by SHA-256), the contents the file tools reported (Note),
//     and, for a git work tree, the index's blob of each file that was
//     clean at the baseline (read with `git cat-file` through gitsafe and
//     checked against its object id and the file's size). Every other
//     file — dirty or untracked at the baseline, or any file of a
//     workspace that is not a repository — is hashed and copied into the
//     store at the baseline, in the background, up to Options.MaxStore
//     bytes (and files up to Options.MaxFile). Past those caps a change
//     still has both digests but its before content was not kept: the
//     change's BeforeData is nil while Before is not the digest of no
//     bytes.
//   - A file whose stat is unchanged is taken as unchanged, as git does.
//     A stat taken within RacyWindow of a write could miss a second write
//     in the same timestamp tick, so such files are compared by content
//     at the next scan.
//
// Renames: a file that disappeared and a file that appeared with the same
// content are one change, Path → MovedTo; the same inode and modification
// time (what a rename keeps) are preferred, and required for an empty
// file. A rename over an existing
// file is the old path's delete and the new path's update (before: the
// content it replaced), as a patch's move over a file is written. A
// renamed directory gives one move per file under it.
//
// Symlinks are recorded as links and never followed: a change of a link
// (created, retargeted, removed) has neither digest, and its targets
// before and after (LinkBefore, LinkAfter). A change of a file's
// permission bits alone is an update whose before and after digests are
// equal. Directories are not recorded: an empty directory created or
// removed is no change. Sockets, FIFOs and devices are not tracked.
//
// Ignored entries (Options.Ignore; ".git" always) are neither read nor
// reported, nor anything under them.
package changes

import (
	"time"

	"github.com/trussdev/truss/internal/tool"
)

// Options configure a Tracker. The zero value is ready.
type Options struct {
	// Ignore lists what is not tracked besides ".git", which never is. A
	// pattern without '/' ("node_modules", "*.pyc") matches an entry of
	// that name at any depth; one with '/' ("build/out") matches the path
	// relative to its root. Patterns are path.Match patterns; everything
	// under an ignored directory is ignored. nil means DefaultIgnore(); an
	// empty, non-nil list ignores nothing but ".git".
	Ignore []string
	// StoreDir is the private directory of the content store (made with
	// mode 0700; the store is one pack file in it, removed by Close). ""
	// makes a temporary directory that Close removes.
	StoreDir string
	// MaxStore bounds the bytes the content store holds (default 1 GiB),
	// MaxFile the size of a file whose contents are kept and reported
	// (default 32 MiB; a larger file's change has digests only).
	MaxStore, MaxFile int64
	// Workers is the number of goroutines that walk and read (default 4
	// per CPU: stat calls wait on the kernel).
	Workers int
	// NoGit disables reading before contents from a git repository:
	// every file is copied at the baseline.
	NoGit bool
	// ScanAfter lists the operations after which Wrap scans; nil means
	// DefaultScanAfter().
	ScanAfter []tool.Op
	// NoWatch makes every scan walk every directory. By default the
	// kernel's inotify events say which directories changed, and a scan
	// reads only those (a full walk when events were lost).
	NoWatch bool
}

// DefaultScanAfter returns the operations that run commands: the shell and
// the project's checks.
func DefaultScanAfter() []tool.Op { return []tool.Op{tool.OpExec, tool.OpValidate} }

// RacyWindow is how recent a stat may be before it is not trusted to
// prove a file unchanged: file times advance in ticks of the kernel's
// coarse clock, a few milliseconds long.
const RacyWindow = 50 * time.Millisecond

// Defaults.
const (
	DefaultMaxStore = 1 << 30
	DefaultMaxFile  = 32 << 20
)
