// Package cacheprog is a Go build cache program (GOCACHEPROG, the go
// command's protocol of cmd/go/internal/cacheprog) that gives a command
// a build cache of its own over caches it may read but never write.
//
// A get looks in the private directory first, then in each lower cache in
// order; a lower cache is a directory in the go command's own on-disk
// layout (<dir>/<aa>/<action ID>-a, one line "v1 <action ID> <output ID>
// <size> <unix nanos>", and <dir>/<aa>/<output ID>-d, the output), and a
// hit there is answered with the lower file's path, which is read but
// neither written nor touched (the go command's own cache updates the
// times of the entries it uses). A put writes only to the private
// directory, in the same layout, atomically, and only a body whose SHA-256
// is the output ID the go command gave. Anything malformed in a cache —
// an entry of the wrong length, another action's ID, an output of another
// size, a link, a directory (a cached executable) — is a miss.
//
// A lower cache's test results (outputs that begin as the go command's
// test logs do, "# test log\n") are misses too: a command that runs tests
// runs them itself, and never reports a result computed outside it.
//
// Truss runs the program by re-executing its own binary (Arg), inside the
// sandbox of the command that runs go, so what the program writes is what
// that command could write anyway; the lower caches stay unwritten because
// the sandbox makes them read-only, not because the program is polite.
package cacheprog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Arg is the first argument that makes a Truss binary the cache program;
// the private directory and the lower caches follow it.
const Arg = "__go-cache-prog"

// Command returns the GOCACHEPROG value that runs exe as the cache
// program with its private directory and lower caches, quoted as the go
// command splits it (cmd/internal/quoted). Every path must be absolute; a
// path holding both kinds of quote cannot be quoted and is an error.
func Command(exe, private string, lowers ...string) (string, error) {
	args := append([]string{exe, Arg, private}, lowers...)
	var b strings.Builder
	for i, a := range args {
		if i != 1 && !filepath.IsAbs(a) {
			return "", fmt.Errorf("the cache program's path %q is not absolute", a)
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		q, err := quote(a)
		if err != nil {
			return "", err
		}
		b.WriteString(q)
	}
	return b.String(), nil
}

// quote quotes one argument as cmd/internal/quoted.Split reads it: as it
// is without white space or quotes, else in the quote it does not hold.
func quote(a string) (string, error) {
	if a != "" && !strings.ContainsAny(a, " \t\n\r'\"") {
		return a, nil
	}
	switch {
	case !strings.Contains(a, "'"):
		return "'" + a + "'", nil
	case !strings.Contains(a, `"`):
		return `"` + a + `"`, nil
	}
	return "", fmt.Errorf("the path %q holds both kinds of quote: GOCACHEPROG cannot name it", a)
}

// Main is the program's whole life: args are the private directory and
// the lower caches (what follows Arg). It serves the go command on stdin
// and stdout until close or end of input, and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprintln(stderr, "truss go cache program: no private directory")
		return 2
	}
	c := &Cache{Private: args[0], Lowers: args[1:]}
	for _, d := range args {
		if !filepath.IsAbs(d) {
			fmt.Fprintf(stderr, "truss go cache program: %q is not an absolute path\n", d)
			return 2
		}
	}
	if err := Serve(stdin, stdout, c); err != nil {
		fmt.Fprintln(stderr, "truss go cache program:", err)
		return 1
	}
	return 0
}

// The commands of the protocol.
const (
	CmdGet   = "get"
	CmdPut   = "put"
	CmdClose = "close"
)

// Request is one request of the go command, as its line says; a put's
// body (BodySize bytes) follows it, read with Decoder.Body.
type Request struct {
	ID       int64
	Command  string
	ActionID []byte `json:",omitempty"`
	OutputID []byte `json:",omitempty"`
	BodySize int64  `json:",omitempty"`
}

// Response is the program's answer to the request of the same ID (ID 0,
// with KnownCommands, is the first message).
type Response struct {
	ID            int64
	Err           string     `json:",omitempty"`
	KnownCommands []string   `json:",omitempty"`
	Miss          bool       `json:",omitempty"`
	OutputID      []byte     `json:",omitempty"`
	Size          int64      `json:",omitempty"`
	Time          *time.Time `json:",omitempty"`
	DiskPath      string     `json:",omitempty"`
}

// HashSize is the size of action and output IDs (SHA-256).
const HashSize = sha256.Size

// MaxBody bounds a put's body.
const MaxBody = 16 << 30

// maxLine bounds a request's line (two IDs and a few numbers need about
// 200 bytes).
const maxLine = 4096

// SyntaxError is a stream the program cannot read on from: a line that is
// not a request, or a body that is not the base64 string of its size.
type SyntaxError struct{ Msg string }

func (e *SyntaxError) Error() string { return "malformed request stream: " + e.Msg }

// Decoder reads the go command's requests.
type Decoder struct {
	br *bufio.Reader
}

// NewDecoder reads requests from r.
func NewDecoder(r io.Reader) *Decoder { return &Decoder{br: bufio.NewReaderSize(r, 64<<10)} }

// Next reads the next request's line, skipping empty lines (the go
// command ends each request with one). It returns io.EOF at the end of
// input and a *SyntaxError for a line that is not a request or a size out
// of range. The caller checks the command and IDs, and must read a body
// of BodySize bytes (Body) before the next request.
func (d *Decoder) Next() (*Request, error) {
	for {
		line, err := d.line()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r Request
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, &SyntaxError{fmt.Sprintf("request %.80q: %v", line, err)}
		}
		if r.BodySize < 0 || r.BodySize > MaxBody {
			return nil, &SyntaxError{fmt.Sprintf("request %d: body size %d out of range", r.ID, r.BodySize)}
		}
		return &r, nil
	}
}

// line reads one line, without its newline, of at most maxLine bytes.
func (d *Decoder) line() ([]byte, error) {
	line, err := d.br.ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull) || len(line) > maxLine:
		return nil, &SyntaxError{"a request line longer than " + strconv.Itoa(maxLine) + " bytes"}
	case err == io.EOF && len(line) == 0:
		return nil, io.EOF
	case err == io.EOF:
		return nil, &SyntaxError{"input ends inside a request line"}
	case err != nil:
		return nil, err
	}
	return line[:len(line)-1], nil
}

// Body copies the body of the request just read, size bytes sent as a
// JSON string of their standard base64 on a line of its own, into w. A
// body of another size, or not in that form, is a *SyntaxError; an error
// of w's is returned as it is, once the body has been read past.
func (d *Decoder) Body(w io.Writer, size int64) error {
	if size == 0 {
		return nil
	}
	for {
		b, err := d.br.ReadByte()
		if err != nil {
			return &SyntaxError{"input ends before a body"}
		}
		if b == '"' {
			break
		}
		if b != '\n' && b != ' ' && b != '\r' && b != '\t' {
			return &SyntaxError{fmt.Sprintf("a body begins with %q, not a string", b)}
		}
	}
	q := &quoted{br: d.br}
	dec := base64.NewDecoder(base64.StdEncoding, q)
	sink := &stickyWriter{w: w}
	n, err := io.Copy(sink, io.LimitReader(dec, size+1))
	if err != nil {
		return &SyntaxError{fmt.Sprintf("a body: %v", err)}
	}
	if n != size {
		return &SyntaxError{fmt.Sprintf("a body of %d bytes, not %d", n, size)}
	}
	if !q.done {
		return &SyntaxError{"a body longer than its size"}
	}
	if b, err := d.br.ReadByte(); err != nil || b != '\n' {
		return &SyntaxError{"no newline after a body"}
	}
	return sink.err
}

// quoted reads what is left of a JSON string of base64 up to its closing
// quote, which it consumes.
type quoted struct {
	br   *bufio.Reader
	done bool
}

func (q *quoted) Read(p []byte) (int, error) {
	if q.done {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	if _, err := q.br.Peek(1); err != nil {
		return 0, io.ErrUnexpectedEOF
	}
	buf, _ := q.br.Peek(q.br.Buffered())
	end := bytes.IndexByte(buf, '"')
	if end >= 0 {
		buf = buf[:end]
	}
	if len(buf) > len(p) {
		buf, end = buf[:len(p)], -1
	}
	if bytes.IndexByte(buf, '\\') >= 0 {
		return 0, errors.New("an escape in a base64 string")
	}
	n := copy(p, buf)
	q.br.Discard(n)
	if end >= 0 {
		q.br.Discard(1)
		q.done = true
		if n == 0 {
			return 0, io.EOF
		}
	}
	return n, nil
}

// stickyWriter keeps writing's first error and swallows the rest, so
// that a body is read to its end however its writing fails.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err == nil {
		_, s.err = s.w.Write(p)
	}
	return len(p), nil
}

// Serve answers the requests read from r on w with c until close (after
// answering it) or the end of r. It returns a broken stream's error and
// a failed write's; a request it cannot serve is answered with Err.
func Serve(r io.Reader, w io.Writer, c *Cache) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	send := func(res *Response) error {
		if err := enc.Encode(res); err != nil {
			return err
		}
		return bw.Flush()
	}
	if err := send(&Response{KnownCommands: []string{CmdGet, CmdPut, CmdClose}}); err != nil {
		return err
	}
	d := NewDecoder(r)
	for {
		req, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		res := &Response{ID: req.ID}
		switch req.Command {
		case CmdGet:
			if len(req.ActionID) != HashSize {
				res.Err = fmt.Sprintf("get: an action ID of %d bytes", len(req.ActionID))
				break
			}
			e, ok := c.Get([HashSize]byte(req.ActionID))
			if !ok {
				res.Miss = true
				break
			}
			t := e.Time
			res.OutputID, res.Size, res.Time, res.DiskPath = e.OutputID[:], e.Size, &t, e.Path
		case CmdPut:
			path, err := c.put(d, req)
			if errors.As(err, new(*SyntaxError)) {
				return err
			}
			if err != nil {
				res.Err = err.Error()
				break
			}
			res.DiskPath = path
		case CmdClose:
			return send(res)
		default:
			if err := d.Body(io.Discard, req.BodySize); err != nil {
				return err
			}
			res.Err = fmt.Sprintf("unknown command %q", req.Command)
		}
		if err := send(res); err != nil {
			return err
		}
	}
}

// Cache is a private directory over lower caches, each in the go
// command's layout.
type Cache struct {
	// Private is where puts go; it is read first.
	Private string
	// Lowers are read, in order, after Private; never written.
	Lowers []string
}

// Entry is a cache hit: the output's ID and size, when it was put, and
// the file that holds it.
type Entry struct {
	OutputID [HashSize]byte
	Size     int64
	Time     time.Time
	Path     string
}

// entrySize is the length of an action entry: "v1 <hex id> <hex out>
// <size, padded to 20> <unix nanos, padded to 20>\n" (cmd/go/internal/cache).
const entrySize = 2 + 1 + 2*HashSize + 1 + 2*HashSize + 1 + 20 + 1 + 20 + 1

// testLog is how the go command's cached test results begin.
var testLog = []byte("# test log\n")

// Get looks id up in the private directory, then in each lower cache.
func (c *Cache) Get(id [HashSize]byte) (Entry, bool) {
	if e, ok := lookup(c.Private, id, false); ok {
		return e, true
	}
	for _, dir := range c.Lowers {
		if e, ok := lookup(dir, id, true); ok {
			return e, true
		}
	}
	return Entry{}, false
}

// fileName is where dir keeps id's file of kind ("a" or "d").
func fileName(dir string, id [HashSize]byte, kind string) string {
	h := hex.EncodeToString(id[:])
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

// lookup reads id's entry in dir and checks its output; lower refuses
// test results.
func lookup(dir string, id [HashSize]byte, lower bool) (Entry, bool) {
	b, ok := readEntry(fileName(dir, id, "a"))
	if !ok {
		return Entry{}, false
	}
	e, ok := ParseEntry(b, id)
	if !ok {
		return Entry{}, false
	}
	e.Path = fileName(dir, e.OutputID, "d")
	fi, err := os.Lstat(e.Path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != e.Size {
		return Entry{}, false
	}
	if lower && e.Size >= int64(len(testLog)) && isTestLog(e.Path) {
		return Entry{}, false
	}
	return e, true
}

// readEntry reads an action entry: a regular file of entrySize bytes at
// most (not a link, not a directory).
func readEntry(path string) ([]byte, bool) {
	f, ok := openRegular(path)
	if !ok {
		return nil, false
	}
	defer f.Close()
	buf := make([]byte, entrySize+1)
	n, _ := io.ReadFull(f, buf)
	if n > entrySize {
		return nil, false
	}
	return buf[:n], true
}

// isTestLog reports whether the file at path begins as a cached test
// result does; a file it cannot read counts as one.
func isTestLog(path string) bool {
	f, ok := openRegular(path)
	if !ok {
		return true
	}
	defer f.Close()
	head := make([]byte, len(testLog))
	if _, err := io.ReadFull(f, head); err != nil {
		return !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF)
	}
	return bytes.Equal(head, testLog)
}

// openRegular opens a regular file, refusing a symbolic link (O_NOFOLLOW)
// and anything else that is not a regular file.
func openRegular(path string) (*os.File, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, false
	}
	return f, true
}

// ParseEntry reads an action entry of the go command's layout for id: it
// must be exactly that layout, for that ID, with a size and a time that
// are not negative.
func ParseEntry(b []byte, id [HashSize]byte) (Entry, bool) {
	const h = 2 * HashSize
	if len(b) != entrySize || string(b[:3]) != "v1 " || b[3+h] != ' ' || b[4+2*h] != ' ' || b[5+2*h+20] != ' ' || b[entrySize-1] != '\n' {
		return Entry{}, false
	}
	var e Entry
	var got [HashSize]byte
	if _, err := hex.Decode(got[:], b[3:3+h]); err != nil || got != id {
		return Entry{}, false
	}
	if _, err := hex.Decode(e.OutputID[:], b[4+h:4+2*h]); err != nil {
		return Entry{}, false
	}
	size, ok := padded(b[5+2*h : 5+2*h+20])
	if !ok {
		return Entry{}, false
	}
	nanos, ok := padded(b[6+2*h+20 : 6+2*h+40])
	if !ok {
		return Entry{}, false
	}
	e.Size, e.Time = size, time.Unix(0, nanos)
	return e, true
}

// padded reads a decimal number padded on the left with spaces, not
// negative.
func padded(b []byte) (int64, bool) {
	s := strings.TrimLeft(string(b), " ")
	if s == "" || s[0] == '+' || s[0] == '-' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// FormatEntry is the action entry of the go command's layout.
func FormatEntry(id, out [HashSize]byte, size int64, t time.Time) []byte {
	return fmt.Appendf(nil, "v1 %x %x %20d %20d\n", id, out, size, t.UnixNano())
}

// put reads a put's body into the private directory and returns the
// output's path. A *SyntaxError means the stream is broken; another
// error, that this put failed (its body read past).
func (c *Cache) put(d *Decoder, req *Request) (string, error) {
	if len(req.ActionID) != HashSize || len(req.OutputID) != HashSize {
		if err := d.Body(io.Discard, req.BodySize); err != nil {
			return "", err
		}
		return "", fmt.Errorf("put: action ID of %d bytes, output ID of %d", len(req.ActionID), len(req.OutputID))
	}
	id, out := [HashSize]byte(req.ActionID), [HashSize]byte(req.OutputID)
	path := fileName(c.Private, out, "d")
	sub := filepath.Dir(path)
	f, err := os.CreateTemp(sub, ".put-*")
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(sub, 0o777); err == nil {
			f, err = os.CreateTemp(sub, ".put-*")
		}
	}
	if err != nil {
		if berr := d.Body(io.Discard, req.BodySize); berr != nil {
			return "", berr
		}
		return "", fmt.Errorf("put: %w", err)
	}
	defer os.Remove(f.Name()) // after the rename, nothing
	h := sha256.New()
	err = d.Body(io.MultiWriter(f, h), req.BodySize)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if [HashSize]byte(h.Sum(nil)) != out {
		return "", fmt.Errorf("put: the body's SHA-256 is not its output ID %x", out)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	if err := writeAtomic(fileName(c.Private, id, "a"), FormatEntry(id, out, req.BodySize, time.Now())); err != nil {
		return "", err
	}
	return path, nil
}

// writeAtomic writes b to path through a temporary file renamed over it.
func writeAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".put-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}

// ParseCommand reads a GOCACHEPROG value that Command made: the
// program, its private directory and its lowers. ok is false for any
// other value (another cache program, or one Command could not have
// made).
func ParseCommand(v string) (exe, private string, lowers []string, ok bool) {
	args, ok := splitQuoted(v)
	if !ok || len(args) < 3 || args[1] != Arg {
		return "", "", nil, false
	}
	for i, a := range args {
		if i != 1 && !filepath.IsAbs(a) {
			return "", "", nil, false
		}
	}
	return args[0], args[2], args[3:], true
}

// splitQuoted splits v as cmd/internal/quoted.Split does: fields
// separated by white space, a field that begins with a quote running to
// the same quote, which must end the field.
func splitQuoted(v string) ([]string, bool) {
	var out []string
	for {
		v = strings.TrimLeft(v, " \t\n\r")
		if v == "" {
			return out, true
		}
		if q := v[0]; q == '\'' || q == '"' {
			end := strings.IndexByte(v[1:], q)
			if end < 0 {
				return nil, false
			}
			out = append(out, v[1:1+end])
			v = v[2+end:]
			if v != "" && !strings.ContainsRune(" \t\n\r", rune(v[0])) {
				return nil, false
			}
			continue
		}
		end := strings.IndexAny(v, " \t\n\r")
		if end < 0 {
			end = len(v)
		}
		if strings.ContainsAny(v[:end], `'"`) {
			return nil, false
		}
		out = append(out, v[:end])
		v = v[end:]
	}
}
