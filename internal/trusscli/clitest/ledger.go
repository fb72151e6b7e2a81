package clitest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// appendentry DIR LINE [lf|crlf|none]: appends LINE after the last
// complete line of the ledger in DIR, as the next entry would be: SEQ,
// SESSION and PREV in it become the next index, the first entry's session
// and the last line's leaf hash (of its bytes before the newline, a CR
// included). The line ends in LF (the default), CR LF, or nothing (a torn
// line).
func appendEntry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: appendentry DIR LINE [lf|crlf|none]")
	}
	path := filepath.Join(ts.MkAbs(args[0]), "entries.jsonl")
	b, err := os.ReadFile(path)
	ts.Check(err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines = lines[:len(lines)-1] // what follows the last newline is no line
	if len(lines) == 0 {
		ts.Fatalf("%s holds no entry", path)
	}
	var first struct{ Session string }
	ts.Check(json.Unmarshal(lines[0], &first))
	sum := sha256.Sum256(append([]byte{0}, bytes.TrimSuffix(lines[len(lines)-1], []byte("\n"))...))
	line := strings.NewReplacer("SEQ", strconv.Itoa(len(lines)), "SESSION", first.Session, "PREV", hex.EncodeToString(sum[:])).Replace(args[1])
	ending := "lf"
	if len(args) == 3 {
		ending = args[2]
	}
	switch ending {
	case "lf":
		line += "\n"
	case "crlf":
		line += "\r\n"
	case "none":
	default:
		ts.Fatalf("line ending %q: want lf, crlf or none", ending)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	ts.Check(err)
	_, err = f.WriteString(line)
	ts.Check(err)
	ts.Check(f.Close())
}
