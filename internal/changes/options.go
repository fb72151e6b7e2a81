// Package changes finds the files that commands change in a workspace, with
// their contents before and after.
//
// File tools and patches report what they change themselves (a result's
// tool.FileChange list, with the bytes they read and wrote). A shell
// command does not: it may create, rewrite, delete or rename any file in
// the writable roots. A Tracker keeps a stat index of the roots (per file:
// type and permissions, size, device and inode, modification and change
// time — no content is read to build it) and, after each command, reads
// again the directories that inotify says changed (every directory, with a
// pool of goroutines, when events were lost or Options.NoWatch is set),
// comparing stat only; only the files whose stat changed are read and
// hashed.
//
// The roots are written by the commands it watches, so the tracker reads
// them as the host side reads every such tree (package hostfs): each root
// is a directory descriptor held open, and every listing, stat, read and
// readlink resolves beneath it, refusing every symbolic link on the way; a
// file is read only if it is the file listed (same device and inode); a
// file is opened O_NONBLOCK and only when the listing says it is a regular
// file, so a FIFO, socket or device is recorded by its stat and never
// opened. A directory swapped for a link between a listing and a read
// leads nowhere: the read finds the name gone.
//
// What it reports is exact where it says so:
//
//   - After contents are the bytes read by the scan that found the change.
//     A command still running in the background (started with &) can
//     change a file between the scan's stat and its read; the next scan
//     sees that change as one of its own.
//   - Before contents come from what the tracker kept: the content of
//     every file it has seen change (in a content store: one unnamed file
//     in a directory the caller puts out of every command's reach, by
//     SHA-256, each content checked against its digest when read back), the
//     contents the file tools reported (Note), and, for a git work tree,
//     the index's blob of each file that was clean at the baseline (read
//     with `git cat-file` through gitsafe and checked against its object
//     id and the file's size). Every other file — dirty or untracked at
//     the baseline, or any file of a workspace that is not a repository —
//     is hashed and copied into the store at the baseline, in the
//     background, up to Options.MaxStore bytes (and files up to
//     Options.MaxFile). A content that is not there says why: the change
//     has its digest and BeforeUnavailable or AfterUnavailable ("not
//     kept: …", "unreadable: …", ErrStoreAltered's text), never a wrong
//     content and never a silent gap.
//   - A file whose stat is unchanged is taken as unchanged, as git does.
//     A stat taken within RacyWindow of a write could miss a second write
//     in the same timestamp tick, so such files are compared by content
//     at the next scan.
//
// Renames: a file that disappeared and a file that appeared with the same
// content are one change, Path → MovedTo; the same inode and modification
// time (what a rename keeps) are preferred, and required for an empty
// file. A rename over an existing file is the old path's delete and the
// new path's update (before: the content it replaced), as a patch's move
// over a file is written. A renamed directory gives one move per file
// under it.
//
// Symlinks are recorded as links and never followed: a change of a link
// (created, retargeted, removed) has neither digest, and its targets
// before and after (LinkBefore, LinkAfter). A FIFO, socket or device is
// recorded with its Type and Mode, no digests. A file that cannot be read
// (its permissions) is recorded with its Mode and Size and no digest on
// that side. Every change found carries the file's Mode and Size. A
// change of a file's permission bits alone is an update whose before and
// after digests are equal. Directories are not recorded: an empty
// directory created or removed is no change.
//
// Memory does not grow with the roots: the stat index is kept on disk,
// beside the content store (an unnamed file sorted by directory, with a
// sparse table of offsets in memory), and only the directories changed
// since it was written are held in memory, up to Options.IndexMemory
// entries and Options.IndexBytes bytes (names and link targets counted);
// the baseline learns contents a chunk of files at a time, and where each
// content sits in the store is its entry's to remember. What the
// tracker keeps of one directory is bounded: its listing is read a batch
// of names at a time, and one whose entries, names and link targets
// would take more than Options.MaxDirBytes is too large to track (the
// reading stops there): it is recorded as such (Type "too_large") and
// what changes in it is not, while it stays so; once it is small again,
// what changed in it since it was last tracked is recorded by the scan
// that reads it.
//
// Cost is bounded: contents held in memory at once are at most
// Options.MaxHeld bytes (past it a change has digests only), and a scan
// that finds more than Options.BulkThreshold entries changed records one
// bulk change per root (tool.FileChange.Files: the count, Bytes, and a
// manifest of every file by digest as its after content), read in chunks.
// Directories matched by Options.Bulk (dependency trees and caches,
// DefaultBulk) are walked and hashed but never copied; what changed in
// each is one bulk change per scan. Only each root's own ".git" and what
// Options.Ignore names are not tracked.
package changes

import (
	"time"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/tool"
)

// Options configure a Tracker. The zero value is ready.
type Options struct {
	// Ignore lists what is not tracked besides each root's own ".git",
	// which never is. A pattern without '/' ("dist", "*.o") matches an
	// entry of that name at any depth; one with '/' ("build/out") matches
	// the path relative to its root. Patterns are path.Match patterns;
	// everything under an ignored directory is ignored, its changes
	// recorded nowhere, so the list is the user's to set (a project's
	// configuration only when trusted). nil means DefaultIgnore(), which
	// ignores nothing more.
	Ignore []string
	// Defer, when not nil, holds the baseline until it is closed, or
	// until something waits for the baseline (Ready, Scan, ScanAll, Note,
	// a wrapped call, Close), which starts it at once: a session opens
	// its tracker before its first model request and takes the baseline
	// once the request has left, so that the walk does not compete with
	// the request for the CPU. nil takes the baseline at once.
	Defer <-chan struct{}
	// Bulk lists the directories (patterns as Ignore's) whose changes
	// are recorded as one bulk change per directory and scan: a manifest
	// of every file changed beneath, by digest, without contents. nil
	// means DefaultBulk().
	Bulk []string
	// StoreDir is the private directory of the content store, where the
	// tracker keeps before contents. It must be out of every command's
	// reach: outside every writable root (Open refuses one inside a
	// tracked root, ErrStoreInRoot) and hidden by the sandbox. It is made
	// with mode 0700; the store is one unnamed file in it (O_TMPFILE,
	// else a file unlinked as soon as it is made), so that not even a
	// process that can write the directory can open it, and every
	// content read back is checked against its digest. "" makes a
	// temporary directory that Close removes.
	StoreDir string
	// BulkThreshold: a scan that finds more entries changed than this
	// records them as one bulk change per root (default 1000).
	BulkThreshold int
	// BulkBytes: a scan whose changes' paths and link targets add up to
	// more bytes than this records them as one bulk change per root too
	// (default DefaultBulkBytes), so that a command's record is bounded
	// by bytes, not only by count: a few hundred files with paths of
	// 4 KiB are a manifest, not a record of megabytes.
	BulkBytes int
	// HashBytes bounds the bytes of file contents one scan reads to hash
	// them (default DefaultHashBytes): a file past what is left is
	// recorded with its size and metadata and no digest, its side's
	// Unavailable saying so. A command can make files of any apparent
	// size at no cost (truncate makes a sparse 4 GiB file in no blocks),
	// and every byte of them would be read: the host's time per command
	// is bounded by this, not by what the command chose.
	HashBytes int64
	// MaxHeld bounds the bytes of file contents the tracker holds in
	// memory at once, over all its workers and the changes a scan returns
	// (default 32 MiB); a content past it is recorded by digest only, its
	// side's Unavailable saying so.
	MaxHeld int64
	// MaxStore bounds the bytes the content store holds (default 1 GiB),
	// MaxFile the size of a file whose contents are kept and reported
	// (default 32 MiB; a larger file's change has digests only).
	MaxStore, MaxFile int64
	// IndexMemory bounds the entries of the stat index held in memory
	// (default DefaultIndexMemory, about 4 MB): the index is kept on disk,
	// beside the content store, and the directories changed since it was
	// last written are merged into it when they hold more entries than
	// this.
	IndexMemory int
	// IndexBytes bounds the same overlay by bytes (default
	// DefaultIndexBytes): each entry's record, its name and its link
	// target. A link's target is up to 4 KiB, so entries alone would let
	// a command that makes a few thousand long links hold a hundred
	// megabytes of the host's memory.
	IndexBytes int
	// MaxDirBytes bounds what the tracker keeps of one directory (default
	// DefaultMaxDirBytes): each entry's record, its name and its link
	// target (a link's size, before it is read), and for a subdirectory
	// its path and what reading it costs the scan (subdirBytes). A directory
	// past it is too large to track: a scan stops reading its listing at
	// the bound, keeps what the index had of it, reads none of its links
	// and files, and records it once (until it is tracked again or its
	// own stat changes) as a change of Type "too_large" whose
	// AfterUnavailable says "too large to track: …".
	MaxDirBytes int
	// Workers is the number of goroutines that walk and read (default 4
	// per CPU: stat calls wait on the kernel).
	Workers int
	// NoGit disables reading before contents from a git repository:
	// every file is copied at the baseline.
	NoGit bool
	// Repo, when set, is the workspace's .git as recorded when the
	// session began (gitsafe.Find): the first root uses git only while the
	// .git found from it is that one (the same device and inode), and not
	// at all when Repo is the zero Repo (the session began with no
	// repository, so any found now is the commands' own). When nil, each
	// root's .git is the one found from it at Open. Other roots always
	// record theirs at Open; a root uses git only while its recorded .git
	// is still the one found from it.
	Repo *gitsafe.Repo
	// GitPath, when set, is the PATH host git is found in (gitsafe.Git's
	// Path).
	GitPath string
	// ScanAfter lists the operations after which Wrap scans; nil means
	// DefaultScanAfter().
	ScanAfter []tool.Op
	// NoWatch makes every scan walk every directory. By default the
	// kernel's inotify events say which directories changed, and a scan
	// reads only those (a full walk when events were lost).
	NoWatch bool
	// MaxWatches bounds the inotify watches the tracker holds (default
	// DefaultMaxWatches): the kernel's limit is per user, shared with
	// the user's editors and tools. Past it, the directories not watched
	// make every scan a full walk until enough are gone.
	MaxWatches int
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
	DefaultMaxStore      = 1 << 30
	DefaultMaxFile       = 32 << 20
	DefaultMaxHeld       = 32 << 20
	DefaultBulkThreshold = 1000
	DefaultBulkBytes     = 256 << 10
	DefaultHashBytes     = 2 << 30
	DefaultMaxWatches    = 8192
	// DefaultMaxDirBytes is about 55,000 files of short names, 12,000
	// subdirectories, or 2,000 links with 4 KiB targets.
	DefaultMaxDirBytes = 8 << 20
	// SpoolManifest is the size past which a bulk change's manifest is
	// kept in a file with no name in the content store's directory
	// (tool.FileChange.AfterFile) instead of memory.
	SpoolManifest = 1 << 20
)

// CutError is a scan stopped by its context (the command's or the
// session's) before it read every directory or examined every entry that
// differed: the changes it returns are those it finished, and the next
// scan walks every directory, so nothing it left is lost, only recorded
// later.
type CutError struct{ Err error }

func (e *CutError) Error() string {
	return "the scan was cut before it read everything: " + e.Err.Error()
}

func (e *CutError) Unwrap() error { return e.Err }
