package queue

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A worker's uploads (a run's ledger too large for its result message)
// go to a stream of their own, TRUSS_NAME_UPLOADS, on which a worker may
// publish and nothing else: it can neither read an upload (its own nor
// another's) nor remove or replace one. The stream refuses a rollup, a
// purge and the deletion of a message, whoever asks, so a message a
// client publishes there can only add to it. An upload is its parts, in
// order, on the subject truss.NAME.uploads.UPLOAD_NAME, each with the
// SHA-256 of the whole upload and its index in headers; the reader (the
// coordinator) takes, of the messages on that subject, the parts with the
// digest it was told, in order, up to the size it was told, and checks
// the digest of what it read. Parts another client adds under the same
// name, with another digest, are skipped, up to the size told plus one
// part (past it the upload is refused, so a result naming a small upload
// cannot make the reader read an unbounded stream); a client that knows the name
// and the digest before the reader reads can at worst make the upload
// unreadable — and neither is known to a client other than the uploader
// when the name derives from what the upload holds (a ledger's root).

// Headers of an upload's parts.
const (
	hdrUploadDigest = "Truss-Upload-Digest"
	hdrUploadPart   = "Truss-Upload-Part"
)

// uploadPart is the size of an upload's parts (within the server's
// message size, 1 MB by default).
const uploadPart = 256 << 10

var uploadNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Upload names an upload and states its content: its size and SHA-256.
type Upload struct {
	// Name is the caller's: letters, digits, '-' and '_', at most 128.
	Name string
	// Size is its length in bytes.
	Size int64
	// SHA256 is the hex SHA-256 of its content.
	SHA256 string
}

// ErrNoUpload is returned by GetUpload when no part of the upload is in
// the stream.
var ErrNoUpload = errors.New("queue: no such upload")

func (q *Queue) uploadSubject(name string) string { return q.subjUploads + "." + name }

// PutUpload stores data as the upload name and returns its description.
// A retry of the same upload within the duplicate window stores nothing
// twice. The uploader cannot read it back (a worker may not).
func (q *Queue) PutUpload(ctx context.Context, name string, data []byte) (Upload, error) {
	if !uploadNameRE.MatchString(name) {
		return Upload{}, fmt.Errorf("queue: upload name %q: letters, digits, '-' and '_' only, at most 128", name)
	}
	sum := sha256.Sum256(data)
	u := Upload{Name: name, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}
	// The message ids end in a nonce of this call's: no other client can
	// store a part under one first and have the real part dropped as its
	// duplicate.
	var nonce [12]byte
	rand.Read(nonce[:])
	for i := 0; i == 0 || i*uploadPart < len(data); i++ {
		part := data[i*uploadPart : min((i+1)*uploadPart, len(data))]
		m := &nats.Msg{Subject: q.uploadSubject(name), Data: part, Header: nats.Header{}}
		m.Header.Set(hdrUploadDigest, u.SHA256)
		m.Header.Set(hdrUploadPart, strconv.Itoa(i))
		id := u.SHA256 + ":" + strconv.Itoa(i) + ":" + hex.EncodeToString(nonce[:])
		err := retry(ctx, 5, func() error {
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err := q.js.PublishMsg(pctx, m, jetstream.WithMsgID(id), jetstream.WithExpectStream(q.streamUploads))
			return err
		})
		if err != nil {
			return Upload{}, fmt.Errorf("queue: upload %s part %d: %w", name, i, err)
		}
	}
	return u, nil
}

// GetUpload writes the upload u to w: of the parts on u's subject, those
// carrying u's digest, in order, up to u.Size bytes, streamed; it reads
// at most u.Size plus one part's bytes of other parts on the way. It returns
// an error when they do not make up u.Size bytes whose SHA-256 is u's
// (what was written to w is then not the upload). It reads the stream
// from its leader (a reader must be allowed to make a consumer: the
// coordinator). The caller bounds u.Size before.
func (q *Queue) GetUpload(ctx context.Context, u Upload, w io.Writer) error {
	if !uploadNameRE.MatchString(u.Name) {
		return fmt.Errorf("queue: upload name %q: letters, digits, '-' and '_' only, at most 128", u.Name)
	}
	if u.Size < 0 {
		return fmt.Errorf("queue: upload %s: size %d", u.Name, u.Size)
	}
	subj := q.uploadSubject(u.Name)
	st, err := q.js.Stream(ctx, q.streamUploads)
	if err != nil {
		return fmt.Errorf("queue: uploads stream: %w", err)
	}
	if _, err := st.GetLastMsgForSubject(ctx, subj); errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("%w: %s", ErrNoUpload, u.Name)
	} else if err != nil {
		return fmt.Errorf("queue: upload %s: %w", u.Name, err)
	}
	cons, err := q.js.OrderedConsumer(ctx, q.streamUploads, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{subj}, DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return fmt.Errorf("queue: upload %s: %w", u.Name, err)
	}
	h := sha256.New()
	var n, skipped int64
	next := 0
	for n < u.Size || next == 0 {
		m, err := cons.Next(jetstream.FetchMaxWait(directTimeout))
		if err != nil {
			return fmt.Errorf("queue: upload %s: %d of its %d bytes read: %w", u.Name, n, u.Size, err)
		}
		md, err := m.Metadata()
		if err != nil {
			return fmt.Errorf("queue: upload %s: %w", u.Name, err)
		}
		if m.Headers().Get(hdrUploadDigest) == u.SHA256 && m.Headers().Get(hdrUploadPart) == strconv.Itoa(next) {
			data := m.Data()
			if n+int64(len(data)) > u.Size {
				return fmt.Errorf("queue: upload %s: more than its %d bytes", u.Name, u.Size)
			}
			h.Write(data)
			if _, err := w.Write(data); err != nil {
				return err
			}
			n += int64(len(data))
			next++
			if n == u.Size {
				break
			}
		} else if skipped += int64(len(m.Data())); skipped > u.Size+uploadPart {
			// Whoever added them cannot make the reader read more
			// than about twice what the upload states.
			return fmt.Errorf("queue: upload %s: more than %d bytes of other parts before its own", u.Name, u.Size+uploadPart)
		}
		if md.NumPending == 0 {
			return fmt.Errorf("queue: upload %s: %d of its %d bytes in the stream", u.Name, n, u.Size)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != u.SHA256 {
		return fmt.Errorf("queue: upload %s: its content's SHA-256 is %s, not %s", u.Name, got, u.SHA256)
	}
	return nil
}
