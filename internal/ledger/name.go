package ledger

import (
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/termsafe"
)

// A file's name on Linux is any string of bytes without NUL (a path adds
// '/' between names), while a JSON string holds only UTF-8: a name that is
// not valid UTF-8 would lose its invalid bytes to U+FFFD, and two files
// (run\xff.sh, run\xfe.sh) would be recorded as one. So the ledger records
// names in a form that keeps every byte (docs/ledger.md, "Names"):
//
//   - a name that is valid UTF-8 is recorded as itself, as it always was;
//   - any other is recorded as U+0000 followed by the lowercase hex digits
//     of all its bytes: "run\xff.sh" is "\x0072756eff2e7368".
//
// No valid name begins with NUL, so the two forms never meet; hex has one
// spelling per byte string, so two different names are two different
// strings, and each string decodes to one name.

// nameMark begins a recorded name that is not valid UTF-8.
const nameMark = "\x00"

// EncodeName returns the ledger's form of the file name or path name (a
// byte string, as Go holds it, without NUL): name itself when it is valid
// UTF-8, else NUL and the hex digits of its bytes.
func EncodeName(name string) string {
	if utf8.ValidString(name) {
		return name
	}
	return nameMark + hex.EncodeToString([]byte(name))
}

// ErrBadName is DecodeName's error for a string no name is recorded as.
var ErrBadName = errors.New("not a recorded name: a name that begins with U+0000 must be lowercase hex digits of bytes that are not valid UTF-8 and hold no NUL")

// DecodeName returns the name whose ledger form is s (EncodeName's
// inverse): s itself when it does not begin with NUL, else the bytes its
// hex digits spell. A string EncodeName never writes — one that is not
// UTF-8 or holds a NUL past its first byte; a NUL form whose digits are
// not lowercase hex, or spell bytes that are valid UTF-8 (recorded as
// themselves) or hold a NUL — is ErrBadName, so that no name has two
// recorded forms and no form two names.
func DecodeName(s string) (string, error) {
	rest, ok := strings.CutPrefix(s, nameMark)
	if !ok {
		if !utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0 {
			return "", ErrBadName
		}
		return s, nil
	}
	b, err := hex.DecodeString(rest)
	if err != nil || len(b) == 0 || utf8.Valid(b) || strings.IndexByte(string(b), 0) >= 0 || hex.EncodeToString(b) != rest {
		return "", ErrBadName
	}
	return string(b), nil
}

// ShowName is a recorded name as a person reads it on a terminal: a name
// that is valid UTF-8 as termsafe.Name shows it (every byte, with what
// cannot be shown, an escape sequence, a carriage return, a bidirectional
// override, written as a visible escape, and a backslash as \\), any
// other Go-quoted ("run\xff.sh": its invalid bytes as \x escapes). A
// recorded form that is not a name is shown Go-quoted as it is. Nothing
// in the result acts on a terminal, and two names are never shown alike.
func ShowName(s string) string {
	n, err := DecodeName(s)
	if err != nil {
		return strconv.Quote(s)
	}
	if utf8.ValidString(n) {
		return termsafe.Name(n)
	}
	return strconv.Quote(n)
}
