package ledger

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trussdev/truss/internal/tool"
)

// TestNameCodec: each name is recorded as the table says and decodes back
// to its exact bytes; what no name is recorded as is refused.
func TestNameCodec(t *testing.T) {
	for _, c := range []struct {
		name, recorded, shown string
	}{
		{"run.sh", "run.sh", "run.sh"},
		{"run\xff.sh", "\x0072756eff2e7368", `"run\xff.sh"`},
		{"run\xfe.sh", "\x0072756efe2e7368", `"run\xfe.sh"`},
		{"run\uFFFD.sh", "run\uFFFD.sh", "run\uFFFD.sh"},
		{"\uFFFD\xff", "\x00efbfbdff", `"�\xff"`},
		{"\xff", "\x00ff", `"\xff"`},
		{`run\xff.sh`, `run\xff.sh`, `run\\xff.sh`}, // shown with its backslash escaped: not the name above
		{"72756eff2e7368", "72756eff2e7368", "72756eff2e7368"},
		{"new\nline\xc3", "\x006e65770a6c696e65c3", `"new\nline\xc3"`},
		{"new\nline", "new\nline", `new\nline`},
		// A valid name is shown by termsafe.Name: nothing in it acts on
		// the terminal, and it is still the file's name.
		{"esc\x1b[2J\x1b]0;title\a.txt", "esc\x1b[2J\x1b]0;title\a.txt", `esc\x1b[2J\x1b]0;title\a.txt`},
		{"over\rwrite", "over\rwrite", `over\rwrite`},
		{"evil\u202Etxt.exe", "evil\u202Etxt.exe", `evil\u202etxt.exe`},
		{"esc\x1b[31m\xff", "\x006573631b5b33316dff", `"esc\x1b[31m\xff"`},
		{"esc\x1b[31m\xe2\x82", "\x00657363" + "1b5b33316d" + "e282", `"esc\x1b[31m\xe2\x82"`},
		{"sur\xed\xa0\x80", "\x00737572eda080", `"sur\xed\xa0\x80"`},     // a surrogate's encoding is not UTF-8
		{"over\xc0\xaf", "\x006f766572c0af", `"over\xc0\xaf"`},           // nor an overlong one
		{"d\xff/sub/f", "\x0064ff2f7375622f66", `"d\xff/sub/f"`},         // a whole path, '/' and all
		{"/abs/\x80", "\x002f6162732f80", `"/abs/\x80"`},                 // another root's absolute path
		{"ünï\xf0\x9f\x98", "\x00c3bc6ec3aff09f98", `"ünï\xf0\x9f\x98"`}, // a rune cut short
	} {
		got := EncodeName(c.name)
		if got != c.recorded {
			t.Errorf("EncodeName(%q) = %q, want %q", c.name, got, c.recorded)
		}
		back, err := DecodeName(got)
		if err != nil || back != c.name {
			t.Errorf("DecodeName(%q) = %q, %v; want %q", got, back, err, c.name)
		}
		if s := ShowName(got); s != c.shown {
			t.Errorf("ShowName(%q) = %s, want %s", got, s, c.shown)
		}
		// The recorded form survives JSON: what an entry holds reads back
		// as it was written.
		j, _ := json.Marshal(got)
		var read string
		if err := json.Unmarshal(j, &read); err != nil || read != got || !utf8.Valid(j) {
			t.Errorf("%q through JSON: %s, %q, %v", got, j, read, err)
		}
	}
	for _, bad := range []string{
		"\x00",            // no bytes
		"\x0072756E",      // upper case
		"\x0072756",       // odd
		"\x0072756exx",    // not hex
		"\x0072756e",      // "run": valid UTF-8, recorded as itself
		"\x00efbfbd",      // U+FFFD spelled in hex: recorded as itself
		"\x0000ff",        // a NUL in the name
		"\x00\x00ff",      // NUL twice
		"\x00 ff",         // a space
		"\x00ff\n",        // a newline after
		"\x00" + "\uFFFD", // not hex
		"a\x00b",          // a NUL inside a name
		"run\xff.sh",      // not UTF-8: no entry holds it
	} {
		if n, err := DecodeName(bad); !errors.Is(err, ErrBadName) {
			t.Errorf("DecodeName(%q) = %q, %v; want ErrBadName", bad, n, err)
		}
		if changePath(bad) {
			t.Errorf("changePath(%q) accepts it", bad)
		}
	}
	// A recorded name is a change path by its bytes: clean, inside.
	for p, want := range map[string]bool{
		EncodeName("a\xff/b"):   true,
		EncodeName("/m/\xff"):   true,
		EncodeName("a\xff//b"):  false,
		EncodeName("../\xff"):   false,
		EncodeName("a/\xff/"):   false,
		EncodeName("a/./\xff"):  false,
		EncodeName("\xff/../a"): false,
	} {
		if changePath(p) != want {
			t.Errorf("changePath(%q) = %v, want %v", p, !want, want)
		}
	}
}

// FuzzNameCodec: every name (bytes without NUL) round-trips through its
// recorded form and JSON, the form is UTF-8, and two names never share a
// form: a form decodes to one name only, and a name that is not UTF-8 is
// never recorded as a valid one's form.
func FuzzNameCodec(f *testing.F) {
	for _, s := range []string{"run\xff.sh", "run\xfe.sh", "run\uFFFD.sh", "a/b", "\xff", "", "72756eff", "\x00ff"} {
		f.Add(s, s+"x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, n := range []string{a, b} {
			if strings.IndexByte(n, 0) >= 0 {
				// Not a name: DecodeName must still never take a NUL form
				// for a name's.
				if d, err := DecodeName(n); err == nil && strings.HasPrefix(n, "\x00") && utf8.ValidString(d) {
					t.Fatalf("DecodeName(%q) = %q, a valid name in the NUL form", n, d)
				}
				return
			}
		}
		ea, eb := EncodeName(a), EncodeName(b)
		if !utf8.ValidString(ea) {
			t.Fatalf("EncodeName(%q) = %q, not UTF-8", a, ea)
		}
		j, _ := json.Marshal(ea)
		var read string
		if err := json.Unmarshal(j, &read); err != nil || read != ea {
			t.Fatalf("%q through JSON: %q, %v", ea, read, err)
		}
		da, err := DecodeName(read)
		if err != nil || da != a {
			t.Fatalf("DecodeName(EncodeName(%q)) = %q, %v", a, da, err)
		}
		if (ea == eb) != (a == b) {
			t.Fatalf("%q and %q are recorded as %q and %q", a, b, ea, eb)
		}
		// Any string at all (a name, a form, neither): when it decodes,
		// it is the only form of its name.
		if d, err := DecodeName(b); err == nil && EncodeName(d) != b {
			t.Fatalf("DecodeName(%q) = %q, whose form is %q", b, d, EncodeName(d))
		}
	})
}

// invalidNames are names that are not UTF-8, next to the valid names
// they would have merged with.
var invalidNames = []string{
	"run\xff.sh",
	"run\xfe.sh",
	"run\uFFFD.sh",
	"\xff",
	"\uFFFD",
	"d\xff/x",
	"d\xfe/x",
	"new\n\xff",
	"esc\x1b[\xc3",
	"sur\xed\xa0\x80",
	"per%FF\x80",
}

// TestRecordInvalidNames: a session whose changes carry names that are not
// UTF-8 — beside valid ones that differ only where the bytes are invalid —
// records each under a name of its own: the ledger verifies, each file's
// final digest is its own, and the changes read back by their bytes.
func TestRecordInvalidNames(t *testing.T) {
	dir, vkey := namesSession(invalidNames).record(t, t.TempDir(), nil)
	rep, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.CheckSealed(); err != nil {
		t.Fatal(err)
	}
	final, err := FinalFiles(dir, entries[len(entries)-1])
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range invalidNames {
		want := digestOf("c" + n)
		if i == len(invalidNames)-1 {
			want = ""
		}
		if d, ok := final[namesFinal(invalidNames, i)]; !ok || d != want {
			t.Errorf("final %q: %q, %v; want %q", namesFinal(invalidNames, i), d, ok, want)
		}
		if d := final["bulk/"+n]; d != digestOf("bulk"+n) {
			t.Errorf("final %q: %q, want its own digest", "bulk/"+n, d)
		}
	}
	// Each name left once by the tool and once by the bulk change, and
	// every third moved away from (deleted there).
	if want := 2*len(invalidNames) + (len(invalidNames)+2)/3; len(final) != want {
		t.Errorf("final files: %d, want %d: %q", len(final), want, final)
	}
	// The changes read back with their bytes.
	var paths, links []string
	for _, e := range entries {
		if e.Type != "tool.result" && e.Type != "workspace.changes" {
			continue
		}
		var data struct {
			Results []struct {
				Changes []tool.FileChange `json:"changes"`
			} `json:"results"`
		}
		raw, _ := json.Marshal(e.Data)
		json.Unmarshal(raw, &data)
		for _, r := range data.Results {
			for _, ch := range r.Changes {
				for _, p := range []*string{&ch.Path, &ch.MovedTo, &ch.LinkAfter} {
					n, err := DecodeName(*p)
					if err != nil {
						t.Fatalf("entry %d: %q: %v", e.Seq, *p, err)
					}
					*p = n
				}
				paths = append(paths, ch.Path)
				if ch.MovedTo != "" {
					paths = append(paths, ch.MovedTo)
				}
				if ch.LinkAfter != "" {
					links = append(links, ch.LinkAfter)
				}
			}
		}
	}
	for i, n := range invalidNames {
		if !contains(paths, n) {
			t.Errorf("no change of %q in %q", n, paths)
		}
		if i%4 == 1 && !contains(links, "../"+n) {
			t.Errorf("no link to %q in %q", "../"+n, links)
		}
	}
	if !contains(paths, invalidNames[0]+"/node_modules") || !contains(paths, "unlistable/"+invalidNames[1]) {
		t.Errorf("the bulk change of a dependency tree, or the unlistable directory, lost its name: %q", paths)
	}

	// The timeline shows each name by its bytes.
	var out strings.Builder
	Show(&out, entries)
	for _, want := range []string{`add "run\xff.sh"`, `add "run\xfe.sh"`, "add run\uFFFD.sh", `rename "run\xff.sh" → "moved/run\xff.sh"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show: no %s in\n%s", want, out.String())
		}
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// TestVerifyWorkspaceInvalidNames: the workspace check compares each file
// by its own bytes: it passes on the workspace the session left, and names
// the file (quoted, its bytes escaped) that differs.
func TestVerifyWorkspaceInvalidNames(t *testing.T) {
	ws := t.TempDir()
	names := []string{"run\xff.sh", "run\xfe.sh", "run\uFFFD.sh"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(ws, n), []byte("c"+n), 0o644); err != nil {
			t.Skipf("this file system refuses the name %q: %v", n, err)
		}
	}
	s := namesSession(names)
	s.settle = nil
	s.events[3].Results[0].Changes = nil // no bulk change
	dir, vkey := s.record(t, t.TempDir(), nil)
	_, entries, err := Verify(dir, vkey)
	if err != nil {
		t.Fatal(err)
	}
	// The session moved names[0] to moved/.
	if err := os.Mkdir(filepath.Join(ws, "moved"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(ws, names[0]), filepath.Join(ws, "moved", names[0])); err != nil {
		t.Fatal(err)
	}
	if err := VerifyWorkspace(dir, entries, ws); err != nil {
		t.Fatalf("the workspace the session left: %v", err)
	}
	if err := os.WriteFile(filepath.Join(ws, names[1]), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = VerifyWorkspace(dir, entries, ws)
	if err == nil || !strings.Contains(err.Error(), `"run\xfe.sh" in the workspace has SHA-256`) {
		t.Fatalf("a file changed after the session: %v", err)
	}
}
