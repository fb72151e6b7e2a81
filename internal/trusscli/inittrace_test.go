package trusscli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// initRecord is one line of the runtime's GODEBUG=inittrace=1 output:
//
//	init github.com/x/y @12 ms, 0.05 ms clock, 1608 bytes, 15 allocs
type initRecord struct {
	pkg           string
	clockMS       float64
	bytes, allocs int64
}

// parseInitTrace reads the init lines of an inittrace output and ignores
// every other line; a line that starts with "init " but is not in the
// runtime's format is an error.
func parseInitTrace(out []byte) ([]initRecord, error) {
	var recs []initRecord
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "init ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		// pkg @T ms, C ms clock, B bytes, A allocs
		if len(f) != 10 || !strings.HasPrefix(f[1], "@") || f[2] != "ms," || f[4] != "ms" || f[5] != "clock," || f[7] != "bytes," || f[9] != "allocs" {
			return nil, fmt.Errorf("not an inittrace line: %q", line)
		}
		clock, err1 := strconv.ParseFloat(f[3], 64)
		b, err2 := strconv.ParseInt(f[6], 10, 64)
		a, err3 := strconv.ParseInt(f[8], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || clock < 0 || b < 0 || a < 0 {
			return nil, fmt.Errorf("not an inittrace line: %q", line)
		}
		recs = append(recs, initRecord{pkg: f[0], clockMS: clock, bytes: b, allocs: a})
	}
	return recs, sc.Err()
}

func TestParseInitTrace(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []initRecord
		err      bool
	}{
		{"lines", "init runtime @0.010 ms, 0.016 ms clock, 0 bytes, 0 allocs\ntruss 1.0\ninit github.com/a/b @12 ms, 0.05 ms clock, 1608 bytes, 15 allocs\n",
			[]initRecord{{"runtime", 0.016, 0, 0}, {"github.com/a/b", 0.05, 1608, 15}}, false},
		{"none", "truss 1.0\n", nil, false},
		{"short", "init github.com/a/b @12 ms, 0.05 ms clock\n", nil, true},
		{"number", "init github.com/a/b @12 ms, 0.05 ms clock, x bytes, 15 allocs\n", nil, true},
		{"negative", "init github.com/a/b @12 ms, 0.05 ms clock, 8 bytes, -1 allocs\n", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseInitTrace([]byte(tc.in))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzParseInitTrace(f *testing.F) {
	f.Add([]byte("init runtime @0.010 ms, 0.016 ms clock, 0 bytes, 0 allocs\n"))
	f.Add([]byte("init a @1 ms, 1 ms clock, 1 bytes, 1 allocs\ninit \n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := parseInitTrace(in)
		if err != nil {
			return
		}
		for _, r := range recs {
			if r.pkg == "" || r.bytes < 0 || r.allocs < 0 {
				t.Fatalf("accepted a record a runtime never writes: %+v", r)
			}
		}
	})
}

// maxInitAllocs bounds what each of Truss's own packages may allocate in
// its initialisation: tables, regular expressions and parsed data are
// built on first use (internal/lazyre, sync.Once) or laid out by the
// compiler, so that a start of the program pays only for what it uses.
const maxInitAllocs = 2

// TestOwnPackagesInitialiseWithoutAllocating runs the truss binary with
// GODEBUG=inittrace=1 and fails when one of the module's packages
// allocates more than maxInitAllocs times in its initialisation.
func TestOwnPackagesInitialiseWithoutAllocating(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the truss binary")
	}
	bin := buildTruss(t)
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("truss --version: %v\n%s", err, out)
	}
	recs, err := parseInitTrace(out)
	if err != nil {
		t.Fatal(err)
	}
	var total, own int64
	for _, r := range recs {
		total += r.allocs
		if !strings.HasPrefix(r.pkg, "github.com/trussdev/truss/") {
			continue
		}
		own += r.allocs
		if r.allocs > maxInitAllocs {
			t.Errorf("%s allocates %d times (%d bytes) in its initialisation, more than %d: build its tables on first use", r.pkg, r.allocs, r.bytes, maxInitAllocs)
		}
	}
	if total == 0 {
		t.Fatalf("no allocation in any package's initialisation: the runtime wrote no inittrace\n%s", out)
	}
	t.Logf("%d package initialisations, %d allocations, %d of them in the module's packages", len(recs), total, own)
}
