package queue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoArtifact is returned for an artifact that is not in the store.
var ErrNoArtifact = errors.New("queue: no such artifact")

// Artifact describes an object in the queue's artifact store.
type Artifact struct {
	Name string
	Size uint64
	// Digest is the content's SHA-256 as the store states it
	// ("SHA-256=" and the unpadded URL-safe base64 of the sum).
	Digest string
}

func (q *Queue) objectStore(ctx context.Context, create bool) (jetstream.ObjectStore, error) {
	store, err := q.js.ObjectStore(ctx, q.objects)
	if errors.Is(err, jetstream.ErrBucketNotFound) && create {
		storage := jetstream.FileStorage
		if q.cfg.Memory {
			storage = jetstream.MemoryStorage
		}
		store, err = q.js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      q.objects,
			Description: "truss work queue " + q.name + ": artifacts",
			Storage:     storage,
			Replicas:    q.cfg.Replicas,
			Compression: true,
		})
	}
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("%w: the store is empty", ErrNoArtifact)
	}
	if err != nil {
		return nil, fmt.Errorf("queue: artifact store: %w", err)
	}
	return store, nil
}

// PutArtifact stores r's content under name (a git bundle of a
// repository), replacing what was there. Only the coordinator may: a
// worker's permissions allow it to read the store, not write it (its
// large files go to PutUpload). Objects are chunked,
// so their size is not bounded by the message size.
func (q *Queue) PutArtifact(ctx context.Context, name string, r io.Reader) (Artifact, error) {
	if name == "" {
		return Artifact{}, errors.New("queue: an artifact needs a name")
	}
	store, err := q.objectStore(ctx, true)
	if err != nil {
		return Artifact{}, err
	}
	info, err := store.Put(ctx, jetstream.ObjectMeta{Name: name}, r)
	if err != nil {
		return Artifact{}, fmt.Errorf("queue: put artifact %s: %w", name, err)
	}
	return Artifact{Name: info.Name, Size: info.Size, Digest: info.Digest}, nil
}

// StatArtifact describes the artifact name.
func (q *Queue) StatArtifact(ctx context.Context, name string) (Artifact, error) {
	store, err := q.objectStore(ctx, false)
	if err != nil {
		return Artifact{}, err
	}
	info, err := store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Artifact{}, fmt.Errorf("%w: %s", ErrNoArtifact, name)
	}
	if err != nil {
		return Artifact{}, fmt.Errorf("queue: artifact %s: %w", name, err)
	}
	return Artifact{Name: info.Name, Size: info.Size, Digest: info.Digest}, nil
}

// GetArtifact writes the artifact name to w, checking its size and its
// SHA-256 against the store's record of it; a mismatch is an error (what
// was written to w is then not the artifact). It reads the store's
// stream with batched direct gets and makes no consumer, so that a client
// with a worker's permissions may: a worker may create no consumer, whose
// delivery subject the server would not check against its permissions.
func (q *Queue) GetArtifact(ctx context.Context, name string, w io.Writer) (Artifact, error) {
	store, err := q.objectStore(ctx, false)
	if err != nil {
		return Artifact{}, err
	}
	info, err := store.GetInfo(ctx, name)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		return Artifact{}, fmt.Errorf("%w: %s", ErrNoArtifact, name)
	}
	if err != nil {
		return Artifact{}, fmt.Errorf("queue: get artifact %s: %w", name, err)
	}
	a := Artifact{Name: info.Name, Size: info.Size, Digest: info.Digest}
	h := sha256.New()
	var n uint64
	var chunks uint32
	err = q.directRead(ctx, "OBJ_"+q.objects, "$O."+q.objects+".C."+info.NUID, 1, func(m *nats.Msg, _ uint64) (bool, error) {
		n += uint64(len(m.Data))
		chunks++
		if n > info.Size || chunks > info.Chunks {
			return false, fmt.Errorf("queue: get artifact %s: more than its %d bytes in %d chunks", name, info.Size, info.Chunks)
		}
		h.Write(m.Data)
		if _, err := w.Write(m.Data); err != nil {
			return false, err
		}
		return chunks < info.Chunks, nil
	})
	if err != nil {
		return Artifact{}, fmt.Errorf("queue: get artifact %s: %w", name, err)
	}
	if n != info.Size {
		return Artifact{}, fmt.Errorf("queue: get artifact %s: %d of its %d bytes", name, n, info.Size)
	}
	if got := "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil)); got != info.Digest {
		return Artifact{}, fmt.Errorf("queue: get artifact %s: its content's digest %s is not the store's %s", name, got, info.Digest)
	}
	return a, nil
}

// ArtifactCache keeps artifacts on a worker's disk, fetched once: each
// is stored under its digest, so a replaced artifact is fetched again and
// an unchanged one never is. Safe for concurrent use by a worker's slots.
type ArtifactCache struct {
	q   *Queue
	dir string

	mu       sync.Mutex
	inflight map[string]*sync.Mutex
}

// NewArtifactCache caches q's artifacts in dir.
func (q *Queue) NewArtifactCache(dir string) *ArtifactCache {
	return &ArtifactCache{q: q, dir: dir, inflight: map[string]*sync.Mutex{}}
}

// Path returns the path of a local copy of the artifact name, fetching it
// if the cache does not hold its current content. The file must not be
// changed; it stays until the cache directory is removed.
func (c *ArtifactCache) Path(ctx context.Context, name string) (string, error) {
	a, err := c.q.StatArtifact(ctx, name)
	if err != nil {
		return "", err
	}
	digest, ok := strings.CutPrefix(a.Digest, "SHA-256=")
	if !ok || digest == "" || strings.ContainsAny(digest, "/\\.") {
		return "", fmt.Errorf("queue: artifact %s: unexpected digest %q", name, a.Digest)
	}
	path := filepath.Join(c.dir, "sha256-"+strings.TrimRight(digest, "="))

	c.mu.Lock()
	l := c.inflight[path]
	if l == nil {
		l = &sync.Mutex{}
		c.inflight[path] = l
	}
	c.mu.Unlock()
	l.Lock()
	defer l.Unlock()

	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return "", fmt.Errorf("queue: artifact cache: %w", err)
	}
	f, err := os.CreateTemp(c.dir, ".fetch-*")
	if err != nil {
		return "", fmt.Errorf("queue: artifact cache: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	got, err := c.q.GetArtifact(ctx, name, f)
	if err == nil && got.Digest != a.Digest {
		err = fmt.Errorf("queue: artifact %s changed while it was fetched", name)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", fmt.Errorf("queue: artifact cache: %w", err)
	}
	return path, nil
}
