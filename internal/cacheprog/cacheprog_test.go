package cacheprog_test

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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/cacheprog"
	"github.com/trussdev/truss/internal/testenv"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == cacheprog.Arg {
		os.Exit(cacheprog.Main(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(testenv.Run(m))
}

// id is a test's action or output ID, from a word.
func id(s string) [cacheprog.HashSize]byte { return sha256.Sum256([]byte(s)) }

// file is where dir keeps an ID's file of a kind, in the go command's
// layout.
func file(dir string, i [cacheprog.HashSize]byte, kind string) string {
	h := hex.EncodeToString(i[:])
	return filepath.Join(dir, h[:2], h+"-"+kind)
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// plant writes an entry for action a with output body in dir, as the go
// command's own cache does.
func plant(t *testing.T, dir, a string, body []byte) [cacheprog.HashSize]byte {
	t.Helper()
	out := sha256.Sum256(body)
	write(t, file(dir, out, "d"), body)
	write(t, file(dir, id(a), "a"), cacheprog.FormatEntry(id(a), out, int64(len(body)), time.Unix(1700000000, 5)))
	return out
}

func TestParseEntry(t *testing.T) {
	a, out := id("a"), id("out")
	good := cacheprog.FormatEntry(a, out, 42, time.Unix(0, 1234))
	// The go command's own line, written as cmd/go/internal/cache writes it.
	if want := fmt.Sprintf("v1 %x %x %20d %20d\n", a, out, 42, 1234); string(good) != want {
		t.Fatalf("FormatEntry %q, want %q", good, want)
	}
	set := func(i int, c byte) []byte { b := bytes.Clone(good); b[i] = c; return b }
	for _, tc := range []struct {
		name string
		b    []byte
		ok   bool
	}{
		{"good", good, true},
		{"another action's", cacheprog.FormatEntry(id("b"), out, 42, time.Unix(0, 1)), false},
		{"short", good[:len(good)-1], false},
		{"long", append(bytes.Clone(good), ' '), false},
		{"v2", set(1, '2'), false},
		{"no newline", set(len(good)-1, ' '), false},
		{"a bad hex digit", set(3+64+1, 'g'), false},
		{"a negative size", []byte(strings.Replace(string(good), "                  42", "                 -42", 1)), false},
		{"a signed size", []byte(strings.Replace(string(good), "                  42", "                 +42", 1)), false},
		{"no size", []byte(strings.Replace(string(good), "                  42", "                    ", 1)), false},
		{"a size with a space inside", []byte(strings.Replace(string(good), "                  42", "                 4 2", 1)), false},
		{"empty", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ok := cacheprog.ParseEntry(tc.b, a)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && (e.OutputID != out || e.Size != 42 || e.Time.UnixNano() != 1234) {
				t.Errorf("entry %+v", e)
			}
		})
	}
}

// TestGet: the private directory first, then the lower caches in order;
// a lower's malformed entry, cached executable or test result is a miss.
func TestGet(t *testing.T) {
	priv, low1, low2 := t.TempDir(), t.TempDir(), t.TempDir()
	plant(t, priv, "both", []byte("private"))
	plant(t, low1, "both", []byte("lower"))
	plant(t, low2, "second", []byte("second lower"))
	plant(t, low1, "testlog", []byte("# test log\ngetenv X\n"))
	plant(t, priv, "own testlog", []byte("# test log\ngetenv X\n"))
	plant(t, low1, "short", []byte("# test"))
	// A cached executable: the output is a directory.
	exe := id("exe body")
	os.MkdirAll(file(low1, exe, "d"), 0o755)
	write(t, filepath.Join(file(low1, exe, "d"), "prog"), []byte("exe body"))
	write(t, file(low1, id("exe"), "a"), cacheprog.FormatEntry(id("exe"), exe, 8, time.Now()))
	// An output of another size than its entry says.
	out := plant(t, low1, "resized", []byte("12345"))
	write(t, file(low1, out, "d"), []byte("1234"))
	// An entry that is a symbolic link to a good one.
	plant(t, low2, "target", []byte("t"))
	os.Symlink(file(low2, id("target"), "a"), file(low2, id("linked"), "a"))
	// An output that is a link.
	lout := id("linked out")
	write(t, file(low2, id("linkout"), "a"), cacheprog.FormatEntry(id("linkout"), lout, 1, time.Now()))
	os.Symlink(file(low2, id("t"), "d"), file(low2, lout, "d"))
	// An entry for another action, under this one's name.
	os.Link(file(low2, id("target"), "a"), file(low2, id("renamed"), "a"))

	c := &cacheprog.Cache{Private: priv, Lowers: []string{low1, low2}}
	for _, tc := range []struct {
		action string
		dir    string // where the hit's output is; "" for a miss
		body   string
	}{
		{"both", priv, "private"},
		{"second", low2, "second lower"},
		{"own testlog", priv, "# test log\ngetenv X\n"},
		{"testlog", "", ""},
		{"short", low1, "# test"},
		{"exe", "", ""},
		{"resized", "", ""},
		{"linked", "", ""},
		{"linkout", "", ""},
		{"renamed", "", ""},
		{"absent", "", ""},
	} {
		t.Run(tc.action, func(t *testing.T) {
			e, ok := c.Get(id(tc.action))
			if ok != (tc.dir != "") {
				t.Fatalf("hit %v (%+v), want %v", ok, e, tc.dir != "")
			}
			if !ok {
				return
			}
			if !strings.HasPrefix(e.Path, tc.dir+string(filepath.Separator)) || e.Size != int64(len(tc.body)) || e.OutputID != sha256.Sum256([]byte(tc.body)) {
				t.Errorf("entry %+v, want the output %q in %s", e, tc.body, tc.dir)
			}
			if b, _ := os.ReadFile(e.Path); string(b) != tc.body {
				t.Errorf("%s holds %q", e.Path, b)
			}
		})
	}
}

// request is what the go command writes for one request
// (cmd/go/internal/cache/prog.go): the JSON object on its line, an empty
// line, and a put's body as a base64 JSON string on a line of its own.
func request(r cacheprog.Request, body []byte) string {
	b, _ := json.Marshal(r)
	s := string(b) + "\n\n"
	if r.BodySize > 0 {
		s += `"` + base64.StdEncoding.EncodeToString(body) + "\"\n"
	}
	return s
}

func TestServe(t *testing.T) {
	priv, low := t.TempDir(), t.TempDir()
	lowerOut := plant(t, low, "lower", []byte("from below"))
	body := bytes.Repeat([]byte("object file "), 20000) // larger than a read buffer
	out := sha256.Sum256(body)
	a, b := id("put"), id("bad put")
	lowerPath := file(low, lowerOut, "d")
	before, _ := os.Stat(lowerPath)
	var in strings.Builder
	for _, r := range []struct {
		req  cacheprog.Request
		body []byte
	}{
		{cacheprog.Request{ID: 1, Command: "get", ActionID: a[:]}, nil},
		{cacheprog.Request{ID: 2, Command: "put", ActionID: a[:], OutputID: out[:], BodySize: int64(len(body))}, body},
		{cacheprog.Request{ID: 3, Command: "get", ActionID: a[:]}, nil},
		{cacheprog.Request{ID: 4, Command: "get", ActionID: []byte("short")}, nil},
		{cacheprog.Request{ID: 5, Command: "put", ActionID: b[:], OutputID: out[:], BodySize: 5}, []byte("wrong")},
		{cacheprog.Request{ID: 6, Command: "get", ActionID: b[:]}, nil},
		{cacheprog.Request{ID: 7, Command: "get2", BodySize: 3}, []byte("abc")},
		{cacheprog.Request{ID: 8, Command: "get", ActionID: func() []byte { i := id("lower"); return i[:] }()}, nil},
		{cacheprog.Request{ID: 9, Command: "put", ActionID: b[:], OutputID: func() []byte { e := id(""); return e[:] }()}, nil},
		{cacheprog.Request{ID: 10, Command: "close"}, nil},
		{cacheprog.Request{ID: 11, Command: "get", ActionID: a[:]}, nil}, // after close: unanswered
	} {
		in.WriteString(request(r.req, r.body))
	}
	var w bytes.Buffer
	if err := cacheprog.Serve(strings.NewReader(in.String()), &w, &cacheprog.Cache{Private: priv, Lowers: []string{low}}); err != nil {
		t.Fatal(err)
	}
	var got []cacheprog.Response
	dec := json.NewDecoder(&w)
	for {
		var r cacheprog.Response
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	check := func(i int, ok bool, what string) {
		t.Helper()
		if !ok {
			t.Errorf("response %d: %s: %+v", i, what, got[i])
		}
	}
	if len(got) != 11 {
		t.Fatalf("%d responses, want 11: %+v", len(got), got)
	}
	check(0, got[0].ID == 0 && strings.Join(got[0].KnownCommands, ",") == "get,put,close", "the capabilities")
	check(1, got[1].ID == 1 && got[1].Miss, "a miss")
	check(2, got[2].ID == 2 && got[2].Err == "" && got[2].DiskPath == file(priv, out, "d"), "put into the private directory")
	check(3, got[3].ID == 3 && !got[3].Miss && bytes.Equal(got[3].OutputID, out[:]) && got[3].Size == int64(len(body)) && got[3].DiskPath == file(priv, out, "d") && got[3].Time != nil, "the put's hit")
	check(4, got[4].ID == 4 && got[4].Err != "", "a short action ID refused")
	check(5, got[5].ID == 5 && strings.Contains(got[5].Err, "SHA-256"), "a body that is not its output ID refused")
	check(6, got[6].ID == 6 && got[6].Miss, "the refused put stored nothing")
	check(7, got[7].ID == 7 && strings.Contains(got[7].Err, "unknown command"), "an unknown command refused, its body read past")
	check(8, got[8].ID == 8 && got[8].DiskPath == lowerPath && got[8].Size == 10, "a lower hit at the lower's path")
	check(9, got[9].ID == 9 && got[9].Err == "" && got[9].DiskPath == file(priv, id(""), "d"), "an empty put")
	check(10, got[10].ID == 10, "close answered")
	if b, _ := os.ReadFile(file(priv, out, "d")); !bytes.Equal(b, body) {
		t.Error("the put's body is not what was sent")
	}
	if after, _ := os.Stat(lowerPath); !after.ModTime().Equal(before.ModTime()) {
		t.Error("the lower's output was touched")
	}
	if ents, _ := filepath.Glob(filepath.Join(priv, "*", ".put-*")); len(ents) > 0 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// TestBrokenStream: a stream the program cannot read on from ends it with
// an error, after the answers to the requests before.
func TestBrokenStream(t *testing.T) {
	a, out := id("a"), sha256.Sum256([]byte("abc"))
	line, _ := json.Marshal(cacheprog.Request{ID: 1, Command: "put", ActionID: a[:], OutputID: out[:], BodySize: 3})
	put := string(line) + "\n\n"
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", "get me\n", "request"},
		{"a line too long", `{"ID":1,"Command":"` + strings.Repeat("x", 5000) + "\"}\n", "longer"},
		{"a negative body", `{"ID":1,"Command":"put","BodySize":-1}` + "\n", "out of range"},
		{"no body", put, "before a body"},
		{"a short body", put + `"` + base64.StdEncoding.EncodeToString([]byte("ab")) + "\"\n", "not 3"},
		{"a long body", put + `"` + base64.StdEncoding.EncodeToString([]byte("abcd")) + "\"\n", "not 3"},
		{"a body not a string", put + base64.StdEncoding.EncodeToString([]byte("abc")) + "\n", "not a string"},
		{"an escape", put + `"YW\/j"` + "\n", "escape"},
		{"not base64", put + `"!!!!"` + "\n", "body"},
		{"no newline after", put + `"` + base64.StdEncoding.EncodeToString([]byte("abc")) + `"x`, "newline"},
		{"cut in a line", `{"ID":1,`, "inside a request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			err := cacheprog.Serve(strings.NewReader(tc.in), &w, &cacheprog.Cache{Private: t.TempDir()})
			var se *cacheprog.SyntaxError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a SyntaxError saying %q", err, tc.want)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		exe, priv string
		lowers    []string
		want      string
		err       bool
	}{
		{"/bin/truss", "/p", []string{"/l1", "/l2"}, "/bin/truss " + cacheprog.Arg + " /p /l1 /l2", false},
		{"/my bin/truss", "/p q", nil, "'/my bin/truss' " + cacheprog.Arg + " '/p q'", false},
		{"/bin/truss", "/it's here", nil, "/bin/truss " + cacheprog.Arg + ` "/it's here"`, false},
		{"/bin/truss", `/it's "here"`, nil, "", true},
		{"truss", "/p", nil, "", true},
		{"/bin/truss", "p", nil, "", true},
	} {
		got, err := cacheprog.Command(tc.exe, tc.priv, tc.lowers...)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("Command(%q, %q, %q) = %q, %v; want %q", tc.exe, tc.priv, tc.lowers, got, err, tc.want)
		}
	}
}

// FuzzDecoder: whatever the stream, the decoder neither panics nor
// accepts a body of another size than its request's.
func FuzzDecoder(f *testing.F) {
	a, out := id("a"), sha256.Sum256([]byte("abc"))
	f.Add(request(cacheprog.Request{ID: 1, Command: "put", ActionID: a[:], OutputID: out[:], BodySize: 3}, []byte("abc")) +
		request(cacheprog.Request{ID: 2, Command: "get", ActionID: a[:]}, nil))
	f.Add(request(cacheprog.Request{ID: 3, Command: "close"}, nil))
	f.Add("{\"ID\":1,\"Command\":\"put\",\"BodySize\":2}\n\"YWI=\"\n")
	f.Add("\n\n{}\n\"\"\n")
	f.Fuzz(func(t *testing.T, in string) {
		d := cacheprog.NewDecoder(strings.NewReader(in))
		for range 100 {
			r, err := d.Next()
			if err != nil {
				return
			}
			if r.BodySize < 0 || r.BodySize > cacheprog.MaxBody {
				t.Fatalf("a body size of %d accepted", r.BodySize)
			}
			var body bytes.Buffer
			if err := d.Body(&body, r.BodySize); err != nil {
				return
			}
			if int64(body.Len()) != r.BodySize {
				t.Fatalf("a body of %d bytes read for a size of %d", body.Len(), r.BodySize)
			}
		}
	})
}

// FuzzServe: whatever the stream, the program answers each request it
// reads at most once, and writes only into its private directory.
func FuzzServe(f *testing.F) {
	a, out := id("a"), sha256.Sum256([]byte("abc"))
	f.Add(request(cacheprog.Request{ID: 1, Command: "put", ActionID: a[:], OutputID: out[:], BodySize: 3}, []byte("abc")) +
		request(cacheprog.Request{ID: 2, Command: "get", ActionID: a[:]}, nil) + request(cacheprog.Request{ID: 3, Command: "close"}, nil))
	f.Add(request(cacheprog.Request{ID: 4, Command: "put", ActionID: a[:], OutputID: a[:], BodySize: 3}, []byte("abd")))
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, in string) {
		priv, err := os.MkdirTemp(root, "p")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(priv)
		var w bytes.Buffer
		cacheprog.Serve(strings.NewReader(in), &w, &cacheprog.Cache{Private: priv})
		seen := map[int64]bool{}
		sc := bufio.NewScanner(&w)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r cacheprog.Response
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("an answer that is not JSON: %q", sc.Bytes())
			}
			if seen[r.ID] && r.ID != 0 {
				t.Fatalf("request %d answered twice", r.ID)
			}
			seen[r.ID] = true
			if r.DiskPath != "" && !strings.HasPrefix(r.DiskPath, priv+string(filepath.Separator)) {
				t.Fatalf("an answer outside the private directory: %s", r.DiskPath)
			}
		}
	})
}

func TestParseCommand(t *testing.T) {
	for _, c := range []struct {
		exe, private string
		lowers       []string
	}{
		{"/usr/bin/truss", "/c/go-build", nil},
		{"/opt/my truss/truss", "/c d/go-build", []string{"/l1", "/it's here"}},
		{"/x", "/p", []string{`/q"uote`, "/a b"}},
	} {
		v, err := cacheprog.Command(c.exe, c.private, c.lowers...)
		if err != nil {
			t.Fatal(err)
		}
		exe, private, lowers, ok := cacheprog.ParseCommand(v)
		if !ok || exe != c.exe || private != c.private || !slices.Equal(lowers, c.lowers) {
			t.Errorf("ParseCommand(%q) = %q %q %q %v", v, exe, private, lowers, ok)
		}
	}
	for _, v := range []string{"", "/x", "/x __go-cache-prog", "/x other /p", "/x __go-cache-prog p", "/x __go-cache-prog '/p", "/x __go-cache-prog '/p'q", "/x __go-cache-prog /p'q'"} {
		if _, _, _, ok := cacheprog.ParseCommand(v); ok {
			t.Errorf("ParseCommand(%q) took it", v)
		}
	}
}
