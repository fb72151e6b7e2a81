package containertest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Fake is a shell script standing in for podman, for the tests of what
// pulls images (container.Engine.Ensure): its image store and its
// registry are files in its directory. Use it as
// &container.Engine{Name: "podman", Path: f.Path}.
//
// `image inspect REF` answers from the store. `pull --quiet REF` appends
// "start REF" to the log, waits (Publish's delay; 0.2 s by default),
// appends "end REF", then copies the image from the registry to the
// store, or fails as podman does ("Error: initializing source
// docker://REF: reading manifest …: manifest unknown", status 125) when
// the registry has no such image. References are read as podman reads
// short names: a leading docker.io/library/ or docker.io/ is taken off
// before looking. Any other command fails with status 2.
type Fake struct {
	// Dir holds the script, store/, registry/ and the log, pulls.
	Dir  string
	Path string
}

const fakeScript = `#!/bin/sh
dir=%q
key() { printf '%%s' "$1" | sed -e 's#^docker.io/library/##' -e 's#^docker.io/##' | tr '/:@' '___'; }
case "$1" in
image)
	k=$(key "$3")
	if [ -f "$dir/store/$k" ]; then
		printf '[{"Id":"%%s","RepoDigests":[],"Config":{"WorkingDir":"/testbed"}}]\n' "$(cat "$dir/store/$k")"
		exit 0
	fi
	echo "Error: inspecting object: $3: image not known" >&2
	exit 125;;
pull)
	k=$(key "$3")
	echo "start $3" >> "$dir/pulls"
	echo "Trying to pull $3..." >&2
	if [ -f "$dir/registry/$k.delay" ]; then
		d=$(cat "$dir/registry/$k.delay")
		if [ "$d" -ge 10 ]; then echo $$ > "$dir/registry/$k.pid"; exec sleep "$d"; fi
		sleep "$d"
	else
		sleep 0.2
	fi
	echo "end $3" >> "$dir/pulls"
	if [ -f "$dir/registry/$k" ]; then cp "$dir/registry/$k" "$dir/store/$k"; cat "$dir/registry/$k"; exit 0; fi
	echo "Error: initializing source docker://$3: reading manifest latest in $3: manifest unknown" >&2
	exit 125;;
esac
echo "fake engine: unexpected $*" >&2
exit 2
`

// NewFake makes a fake engine in dir, an empty directory (a test's
// TempDir), with an empty store and registry.
func NewFake(dir string) (*Fake, error) {
	for _, d := range []string{"store", "registry"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	path := filepath.Join(dir, "podman")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(fakeScript, dir)), 0o755); err != nil {
		return nil, err
	}
	return &Fake{Dir: dir, Path: path}, nil
}

// FakeID is the image ID (bare hex) the fake gives ref.
func FakeID(ref string) string {
	sum := sha256.Sum256([]byte(ref))
	return hex.EncodeToString(sum[:])
}

func fakeKey(ref string) string {
	return strings.NewReplacer("/", "_", ":", "_", "@", "_").Replace(ref)
}

// Local puts ref in the fake's store.
func (f *Fake) Local(ref string) error {
	return os.WriteFile(filepath.Join(f.Dir, "store", fakeKey(ref)), []byte(FakeID(ref)), 0o644)
}

// Publish puts ref in the fake's registry, its pull taking delay seconds
// (0: 0.2 s). With a delay of 10 s or more the pull's process writes its
// pid (PullPID) and sleeps in place, so that a test can see it killed.
func (f *Fake) Publish(ref string, delay int) error {
	if err := os.WriteFile(filepath.Join(f.Dir, "registry", fakeKey(ref)), []byte(FakeID(ref)), 0o644); err != nil {
		return err
	}
	p := filepath.Join(f.Dir, "registry", fakeKey(ref)+".delay")
	if delay <= 0 {
		if err := os.Remove(p); !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	return os.WriteFile(p, []byte(strconv.Itoa(delay)), 0o644)
}

// PullPID is the pid of the last slow pull of ref (Publish).
func (f *Fake) PullPID(ref string) (int, error) {
	b, err := os.ReadFile(filepath.Join(f.Dir, "registry", fakeKey(ref)+".pid"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Log is the pulls' log: "start REF" and "end REF" lines in the order
// they happened, REF as the engine was asked to pull it.
func (f *Fake) Log() ([]string, error) {
	b, err := os.ReadFile(filepath.Join(f.Dir, "pulls"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n"), nil
}

// Pulls counts the pulls started, by the reference pulled.
func (f *Fake) Pulls() (map[string]int, error) {
	log, err := f.Log()
	n := map[string]int{}
	for _, l := range log {
		if ref, ok := strings.CutPrefix(l, "start "); ok {
			n[ref]++
		}
	}
	return n, err
}

// MostAtOnce is the most pulls the log shows running at the same time.
func (f *Fake) MostAtOnce() (int, error) {
	log, err := f.Log()
	most, now := 0, 0
	for _, l := range log {
		if strings.HasPrefix(l, "start ") {
			now++
		} else {
			now--
		}
		most = max(most, now)
	}
	return most, err
}
