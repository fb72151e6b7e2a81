package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Previous names, in a resumed run's session.start (Start.Previous), the
// ledger of the session's run before it as that ledger stood when the
// run began: its last checkpoint. Its facts are those a sub-agent's link
// carries. The first run of a session has none. A verifier of a
// session's runs checks each run's Previous against the run before it
// (CheckNext), so runs spliced from two sessions, reordered, dropped from
// the middle or cut back to an earlier checkpoint do not verify together.
type Previous struct {
	// Dir is the previous run's ledger directory, by its name in the
	// session directory ("ledger", "ledger-N").
	Dir string `json:"dir"`
	// Size and Root (standard base64) are the tree size and root hash of
	// its last checkpoint; Checkpoint is the hex SHA-256 of that
	// checkpoint's bytes (the signed note, as in its record).
	Size       uint64 `json:"size"`
	Root       string `json:"root"`
	Checkpoint string `json:"checkpoint"`
}

// PreviousOf returns the Previous that names the ledger in dir as it
// stands: its last checkpoint, read as stored (its signature is checked
// when the session is verified, not here).
func PreviousOf(dir string) (*Previous, error) {
	cps, err := readCheckpoints(dir)
	if err != nil {
		return nil, fmt.Errorf("the previous run's ledger %s: %w", dir, err)
	}
	if len(cps) == 0 {
		return nil, fmt.Errorf("the previous run's ledger %s has no checkpoint", dir)
	}
	n := slices.Max(slices.Collect(maps.Keys(cps)))
	b := cps[n]
	lines := strings.SplitN(string(b), "\n", 4)
	if len(lines) < 4 || lines[1] != strconv.FormatUint(n, 10) {
		return nil, fmt.Errorf("the previous run's ledger %s: checkpoint %d is not a checkpoint of that size", dir, n)
	}
	if root, err := base64.StdEncoding.DecodeString(lines[2]); err != nil || len(root) != sha256.Size {
		return nil, fmt.Errorf("the previous run's ledger %s: checkpoint %d has no root hash", dir, n)
	}
	sum := sha256.Sum256(b)
	return &Previous{Dir: filepath.Base(dir), Size: n, Root: lines[2], Checkpoint: hex.EncodeToString(sum[:])}, nil
}

// Continues returns the Previous that entries' session.start names: nil
// when the first entry is not a session.start or names none (a first
// run), an error when its previous member is not a Previous.
func Continues(entries []Entry) (*Previous, error) {
	if len(entries) == 0 || entries[0].Type != "session.start" {
		return nil, nil
	}
	d, _ := entries[0].Data.(map[string]any)
	v, ok := d["previous"]
	if !ok || v == nil {
		return nil, nil
	}
	malformed := bad(0, "its session.start's previous is not {dir, size, root, checkpoint}")
	m, ok := v.(map[string]any)
	if !ok {
		return nil, malformed
	}
	p := &Previous{}
	var okd, okr, okc bool
	p.Dir, okd = m["dir"].(string)
	p.Root, okr = m["root"].(string)
	p.Checkpoint, okc = m["checkpoint"].(string)
	size, oks := m["size"].(json.Number)
	if !okd || !okr || !okc || !oks {
		return nil, malformed
	}
	n, err := strconv.ParseUint(size.String(), 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != size.String() {
		return nil, malformed
	}
	p.Size = n
	return p, nil
}

// Run is one verified run of a session, as CheckNext reads it.
type Run struct {
	// Name is its ledger directory's name in the session directory (a
	// page's run's dir).
	Name string
	// Report is its verification's report; Entries its entries (the
	// first Report.Sealed of them are read).
	Report  *Report
	Entries []Entry
}

// RunError is a session's runs that are not one session's runs in the
// order they were made. Run is the 1-based index of the run that does
// not follow the one before it.
type RunError struct {
	Run    int
	Name   string
	Reason string
}

func (e *RunError) Error() string {
	return fmt.Sprintf("run %d (%s): %s", e.Run, e.Name, e.Reason)
}

// CheckNext checks that cur, the i-th run (1-based, i > 1), follows prev,
// the run before it: both name the same session, and cur's session.start
// names prev's ledger in previous, with prev's name, the size and root of
// prev's last checkpoint and the SHA-256 of that checkpoint's bytes. It
// returns a *RunError naming cur and what differs; the reason begins
// with "entry 0: " when it is cur's session.start that disagrees.
func CheckNext(prev, cur Run, i int) error {
	fail := func(format string, args ...any) error {
		return &RunError{Run: i, Name: cur.Name, Reason: fmt.Sprintf(format, args...)}
	}
	if cur.Report.Session != prev.Report.Session {
		return fail("entry 0: session %q, but run %d's is %q: the runs are not of one session", cur.Report.Session, i-1, prev.Report.Session)
	}
	p, err := Continues(cur.Entries)
	if err != nil {
		return fail("%v", err)
	}
	if p == nil {
		return fail("entry 0: its session.start names no previous run, but it follows run %d (%s): runs spliced or reordered, or a session resumed by a version of Truss that did not chain its runs", i-1, prev.Name)
	}
	if p.Dir != prev.Name {
		return fail("entry 0: it continues the run of ledger %q, but the run before it is %q: a run dropped, reordered or spliced", p.Dir, prev.Name)
	}
	if p.Size != prev.Report.Sealed {
		return fail("entry 0: it continues %s at its checkpoint of size %d, but %s's last checkpoint is of size %d: that run was cut short or changed", p.Dir, p.Size, prev.Name, prev.Report.Sealed)
	}
	if root, err := base64.StdEncoding.DecodeString(p.Root); err != nil || !bytes.Equal(root, prev.Report.Root) {
		return fail("entry 0: it continues %s at a root hash that is not its last checkpoint's", p.Dir)
	}
	sum := sha256.Sum256(prev.Report.Checkpoint)
	if p.Checkpoint != hex.EncodeToString(sum[:]) {
		return fail("entry 0: it continues %s at a checkpoint that is not its last", p.Dir)
	}
	return nil
}

// afterEnd are the entry types written after a run's session.end: the
// verification boundary's verdict and a benchmark's grading.
var afterEnd = []string{"validation", "bench.verdict"}

// NotEndedError is a run whose sealed entries do not end with
// session.end (followed only by the entries written after a run ends:
// validation, bench.verdict): it was cut short — by a crash, or by
// someone who deleted its later entries and checkpoints — or it is still
// running. Entry is its last sealed entry, Type that entry's type.
type NotEndedError struct {
	Entry uint64
	Type  string
}

func (e *NotEndedError) Error() string {
	return fmt.Sprintf("the run ends at entry %d (%s) without session.end: it was cut short, or is still running", e.Entry, e.Type)
}

// ErrNoEntries is CheckEnded's error for a run with no sealed entry.
var ErrNoEntries = errors.New("the run has no sealed entry")

// CheckEnded returns nil when the first sealed entries of a run end with
// its session.end, followed by nothing but the entries written after a
// run ends (validation, bench.verdict); else a *NotEndedError.
func CheckEnded(entries []Entry, sealed uint64) error {
	if sealed == 0 || len(entries) == 0 {
		return ErrNoEntries
	}
	last := min(sealed, uint64(len(entries))) - 1
	i := int(last)
	for i >= 0 && slices.Contains(afterEnd, entries[i].Type) {
		i--
	}
	if i >= 0 && entries[i].Type == "session.end" {
		return nil
	}
	return &NotEndedError{Entry: last, Type: entries[last].Type}
}
