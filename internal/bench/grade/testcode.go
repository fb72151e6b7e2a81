package grade

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/trussdev/truss/internal/gitsafe"
	"github.com/trussdev/truss/internal/hostfs"
	"github.com/trussdev/truss/internal/validate"
)

// The model's code runs in the test process, so nothing it prints proves
// anything by itself. Two things are decided before the tests run:
//
//   - the test code is the task's: every test file the model's patch
//     added, changed or deleted is put back as base_commit has it (removed
//     if new) before the test patch is applied over it;
//   - a change the model's patch made to a file that configures the tests
//     (which plugins pytest loads, which module replaces which in a Go
//     build, the file the test command was detected from) is flagged, not
//     undone: real fixes change setup.cfg and pyproject.toml too.

// isConfig reports whether the file at rel configures the tests
// (validate.IsTestConfig).
func isConfig(rel string) bool { return validate.IsTestConfig(rel) }

// isRootMarker reports whether rel is a file at the repository's root that
// validate.Detect reads.
func isRootMarker(rel string) bool {
	return !strings.Contains(rel, "/") && slices.Contains(validate.Markers(), rel)
}

// treeEntry is what a scan saw at a path: the SHA-256 of a regular file's
// content, of a symbolic link's target, or of another kind of file's
// type; conf is what matters of it as test configuration (for go.mod, its
// go, toolchain and replace lines; else sum).
type treeEntry struct {
	sum, conf [32]byte
}

// treeScan maps the slash-separated paths of the watched files (test code,
// test configuration, root markers) of a checkout to what was there.
type treeScan map[string]treeEntry

// scanTree scans the checkout at ws for the files it watches, without
// following symbolic links and skipping .git directories.
func scanTree(ws string) (treeScan, error) {
	root, err := os.OpenRoot(ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	scan := treeScan{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return nil
		}
		if !validate.IsTestCode(p) && !isConfig(p) && !isRootMarker(p) {
			return nil
		}
		var e treeEntry
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			link, err := root.Readlink(p)
			if err != nil {
				return err
			}
			e.sum = sha256.Sum256([]byte("symlink\x00" + link))
			e.conf = e.sum
		case t.IsRegular():
			data, err := root.ReadFile(p)
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			h := sha256.New()
			fmt.Fprintf(h, "file %o\x00", fi.Mode().Perm()&0o111)
			h.Write(data)
			h.Sum(e.sum[:0])
			e.conf = e.sum
			if path.Base(p) == "go.mod" {
				e.conf = sha256.Sum256([]byte(validate.ModDirectives(p, data)))
			}
		default:
			e.sum = sha256.Sum256([]byte("special " + t.String()))
			e.conf = e.sum
		}
		scan[p] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scanning the checkout: %w", err)
	}
	return scan, nil
}

// changed returns the paths, sorted, for which keep is true and whose
// entries before and after differ (present in one only, or with another
// sum, or another conf when conf is true).
func changed(before, after treeScan, keep func(string) bool, conf bool) []string {
	var out []string
	consider := func(p string) {
		if !keep(p) || slices.Contains(out, p) {
			return
		}
		b, inB := before[p]
		a, inA := after[p]
		switch {
		case inB != inA:
		case conf && b.conf != a.conf:
		case !conf && b.sum != a.sum:
		default:
			return
		}
		out = append(out, p)
	}
	for p := range before {
		consider(p)
	}
	for p := range after {
		consider(p)
	}
	slices.Sort(out)
	return out
}

// setAsideTestCode puts every test file the model's patch added, changed
// or deleted back as base_commit has it (removing those it does not
// have), and returns their paths, sorted; after is the checkout's scan
// once the model's patch is applied. The test patch is applied after
// this, so the graded test code is base + test_patch.
func (p *Prepared) setAsideTestCode(ctx context.Context, after treeScan) ([]string, error) {
	aside := changed(p.tree, after, validate.IsTestCode, false)
	if len(aside) == 0 {
		return nil, nil
	}
	var present []string
	for _, f := range aside {
		if _, ok := p.tree[f]; ok {
			present = append(present, f)
		}
	}
	base, err := baseFiles(ctx, p.git, p.base, present)
	if err != nil {
		return nil, fmt.Errorf("restoring the test code: %w", err)
	}
	files := make([]baseFile, 0, len(aside))
	for _, f := range aside {
		bf, ok := base[f]
		if !ok {
			bf = baseFile{path: filepath.FromSlash(f)}
		}
		files = append(files, bf)
	}
	if err := restore(p.ws, files); err != nil {
		return nil, fmt.Errorf("restoring the test code: %w", err)
	}
	return aside, nil
}

// baseFiles reads paths (slash-separated) as commit has them, from the
// object store only (ls-tree and cat-file: no work tree file is read and
// no filter runs). A path commit does not hold as a file is an error.
func baseFiles(ctx context.Context, g gitsafe.Git, commit string, paths []string) (map[string]baseFile, error) {
	out := map[string]baseFile{}
	if len(paths) == 0 {
		return out, nil
	}
	list, err := g.Plumbing(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", commit)
	if err != nil {
		return nil, err
	}
	type obj struct {
		path string
		mode string
		oid  string
	}
	var objs []obj
	for _, rec := range strings.Split(list, "\x00") {
		meta, p, ok := strings.Cut(rec, "\t")
		if !ok || !slices.Contains(paths, p) {
			continue
		}
		f := strings.Fields(meta)
		if len(f) != 3 || f[1] != "blob" {
			continue
		}
		objs = append(objs, obj{path: p, mode: f[0], oid: f[2]})
	}
	if len(objs) != len(paths) {
		return nil, fmt.Errorf("base commit %s does not hold every file of %q as a file", commit, paths)
	}
	cmd, err := g.PlumbingCommand(ctx, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	var in strings.Builder
	for _, o := range objs {
		in.WriteString(o.oid + "\n")
	}
	cmd.Stdin = strings.NewReader(in.String())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	r := bufio.NewReader(stdout)
	var readErr error
	for _, o := range objs {
		var data []byte
		if data, readErr = readBatchObject(r); readErr != nil {
			break
		}
		bf := baseFile{path: filepath.FromSlash(o.path), present: true}
		switch o.mode {
		case "120000":
			bf.symlink, bf.link = true, string(data)
		case "100755":
			bf.perm, bf.data = 0o755, data
		default:
			bf.perm, bf.data = 0o644, data
		}
		out[o.path] = bf
	}
	if readErr != nil {
		_ = cmd.Process.Kill()
	}
	if err := cmd.Wait(); err != nil && readErr == nil {
		readErr = fmt.Errorf("git cat-file --batch: %w", err)
	}
	if readErr != nil {
		return nil, readErr
	}
	return out, nil
}

// maxBaseFile is the largest test file restored from the base commit.
const maxBaseFile = 1 << 30

// readBatchObject reads one object of `git cat-file --batch`'s output:
// "OID TYPE SIZE\n", the content, "\n".
func readBatchObject(r *bufio.Reader) ([]byte, error) {
	head, err := r.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("git cat-file --batch: %w", err)
	}
	f := strings.Fields(head)
	if len(f) != 3 {
		return nil, fmt.Errorf("git cat-file --batch: %q", strings.TrimSpace(head))
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n < 0 || n > maxBaseFile {
		return nil, fmt.Errorf("git cat-file --batch: size %q", f[2])
	}
	data := make([]byte, n+1)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("git cat-file --batch: %w", err)
	}
	if data[n] != '\n' {
		return nil, errors.New("git cat-file --batch: an object not followed by a newline")
	}
	return data[:n], nil
}

// configChanges returns the files configuring the tests that the model's
// patch changed, sorted, and a note for each: the file the test command
// was detected from (marker, "" for none: any change to it), and every
// test configuration file (for go.mod, a change to its go, toolchain or
// replace lines), at any depth. A file the test patch touches is not
// counted: the task's version of it is graded. after is the checkout's
// scan once the model's patch is applied.
func (p *Prepared) configChanges(after treeScan, marker string) (files, notes []string) {
	testPatch := map[string]bool{}
	for _, f := range p.restore {
		testPatch[filepath.ToSlash(f.path)] = true
	}
	// Test code was set aside: its version is the task's too.
	watched := func(f string) bool { return !testPatch[f] && !validate.IsTestCode(f) && (f == marker || isConfig(f)) }
	// The marker is compared whole, the other files by what configures.
	whole := changed(p.tree, after, func(f string) bool { return watched(f) && f == marker }, false)
	conf := changed(p.tree, after, func(f string) bool { return watched(f) && f != marker }, true)
	for _, f := range append(whole, conf...) {
		_, was := p.tree[f]
		_, is := after[f]
		what := "changed"
		switch {
		case was && !is:
			what = "deleted"
		case !was && is:
			what = "added"
		}
		files = append(files, f)
		if f == marker {
			notes = append(notes, fmt.Sprintf("the model's patch %s %s, which the test command (%s) was detected from", what, f, p.env.Test))
		} else {
			notes = append(notes, fmt.Sprintf("the model's patch %s %s, which configures the tests", what, f))
		}
	}
	return files, notes
}

// testScan scans the checkout's test code as the grader put it in place:
// the watched files (scanTree) and every file the test patch touches,
// whatever its kind.
func (p *Prepared) testScan() (treeScan, error) {
	scan, err := scanTree(p.ws)
	if err != nil {
		return nil, err
	}
	root, err := hostfs.OpenRoot(p.ws)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, f := range p.restore {
		name := filepath.ToSlash(f.path)
		info, err := root.Lstat(name)
		if err != nil {
			continue
		}
		var e treeEntry
		switch {
		case info.Mode&fs.ModeSymlink != 0:
			link, err := root.Readlink(name)
			if err != nil {
				return nil, err
			}
			e.sum = sha256.Sum256([]byte("symlink\x00" + link))
		case info.Mode.IsRegular():
			data, err := root.ReadFile(name, maxBaseFile)
			if err != nil {
				return nil, err
			}
			h := sha256.New()
			fmt.Fprintf(h, "file %o\x00", info.Mode.Perm()&0o111)
			h.Write(data)
			h.Sum(e.sum[:0])
		default:
			e.sum = sha256.Sum256([]byte("special " + info.Mode.Type().String()))
		}
		e.conf = e.sum
		scan[name] = e
	}
	return scan, nil
}

// buildOutput reports whether f is in a tree a build or an install writes
// and no test run collects from: build/, dist/, .eggs/, .tox/,
// node_modules/, site-packages/, a *.egg-info directory.
func buildOutput(f string) bool {
	for d := range strings.SplitSeq(path.Dir(f), "/") {
		switch {
		case d == "build", d == "dist", d == ".eggs", d == ".tox", d == "node_modules", d == "site-packages", strings.HasSuffix(d, ".egg-info"):
			return true
		}
	}
	return false
}

// setupTouchedTests returns the test code the setup commands changed,
// sorted: every test file of before (testScan once the test patch was
// applied, before the setup commands) and every file the test patch
// touches that is now changed, gone or back, and every test file now in a
// directory of the test patch's files (or below one) that was not there.
// A test file appearing elsewhere (a build copying a package's tests into
// build/) is not counted, but one in the root or in a directory above a
// test patch's file is (a conftest.py pytest loads for those tests, a
// sitecustomize.py the root's python runs), and a conftest.py anywhere
// but a build's output (buildOutput). Test configuration
// (validate.IsTestConfig) there, or in a directory of the test patch's
// files or below, that is new, gone or changed in what decides a run
// (validate.ConfigEssence) counts too: a pytest.ini whose addopts load a
// plugin, a go.mod's replace line, a go.work; and an entry_points.txt
// anywhere that registers pytest plugins (pytest11), as an install of
// the project writes one without them. A checkout that cannot be scanned now
// counts as changed ("." for its root).
func (p *Prepared) setupTouchedTests(before treeScan) []string {
	after, err := p.testScan()
	if err != nil {
		return []string{"."}
	}
	var dirs []string
	patchFiles := map[string]bool{}
	for _, f := range p.restore {
		name := filepath.ToSlash(f.path)
		patchFiles[name] = true
		dirs = append(dirs, path.Dir(name))
	}
	under := func(f string) bool {
		return slices.ContainsFunc(dirs, func(d string) bool { return d == "." || strings.HasPrefix(f, d+"/") })
	}
	// above reports whether f is in the root or in a directory of the
	// test patch's files or above one.
	above := func(f string) bool {
		d := path.Dir(f)
		return d == "." || slices.ContainsFunc(dirs, func(t string) bool { return t == d || strings.HasPrefix(t, d+"/") })
	}
	code := changed(before, after, func(f string) bool {
		if patchFiles[f] {
			return true
		}
		if !validate.IsTestCode(f) {
			return false
		}
		_, was := before[f]
		// A conftest.py anywhere pytest may collect from is loaded with
		// the tests it collects (a package's own, beside tests/): only
		// a build's output tree is left out.
		return was || under(f) || above(f) || path.Base(f) == "conftest.py" && !buildOutput(f)
	}, false)
	conf := changed(before, after, func(f string) bool {
		if !validate.IsTestConfig(f) {
			return false
		}
		if path.Base(f) == "entry_points.txt" {
			// Wherever it is (an install's *.egg-info in the root, on the
			// path of python -m pytest): pytest loads the plugins it
			// registers.
			// Gone, or unreadable now: it counts.
			root, err := hostfs.OpenRoot(p.ws)
			if err != nil {
				return true
			}
			defer root.Close()
			data, _, err := root.ReadHead(f, 1<<20)
			return err != nil || strings.Contains(string(data), "pytest11")
		}
		return under(f) || above(f)
	}, true)
	out := slices.Concat(code, conf)
	slices.Sort(out)
	return slices.Compact(out)
}
