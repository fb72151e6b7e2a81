package container

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"testing/iotest"

	"bufio"
)

func TestJudge(t *testing.T) {
	here := Owner{PID: 1, Boot: "boot-a", Host: "vm"}
	starts := map[int]uint64{100: 5000, 200: 7000}
	startOf := func(pid int) (uint64, error) {
		if s, ok := starts[pid]; ok {
			return s, nil
		}
		return 0, os.ErrNotExist
	}
	labels := func(pid, start, boot, host string) map[string]string {
		return map[string]string{LabelOwnerPID: pid, LabelOwnerStart: start, LabelOwnerBoot: boot, LabelOwnerHost: host}
	}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   ownerState
	}{
		{"alive", labels("100", "5000", "boot-a", "vm"), ownerAlive},
		{"gone", labels("300", "5000", "boot-a", "vm"), ownerGone},
		{"pid reused by a later process", labels("200", "6999", "boot-a", "vm"), ownerGone},
		{"earlier boot", labels("100", "5000", "boot-b", "vm"), ownerGone},
		{"another host", labels("300", "5000", "boot-x", "other"), ownerUnknown},
		{"no start", labels("100", "", "boot-a", "vm"), ownerUnknown},
		{"bad pid", labels("x", "5000", "boot-a", "vm"), ownerUnknown},
		{"zero pid", labels("0", "5000", "boot-a", "vm"), ownerUnknown},
		{"no host", labels("300", "5000", "boot-a", ""), ownerUnknown},
		{"no labels", nil, ownerUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judge(tc.labels, here, startOf); got != tc.want {
				t.Errorf("judge = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestOwnerOfSelf(t *testing.T) {
	a, err := self()
	if err != nil {
		t.Fatal(err)
	}
	b, err := OwnerOf(os.Getpid())
	if err != nil || a != b || a.Start == 0 || a.Boot == "" {
		t.Fatalf("%+v %+v %v", a, b, err)
	}
	if judge(a.labels(), a, startTime) != ownerAlive {
		t.Error("this process is not alive by its own labels")
	}
	if _, err := OwnerOf(-5); err == nil {
		t.Error("no error for an absent process")
	}
}

func TestWithOpenFiles(t *testing.T) {
	base := Settings{Ulimits: []string{"nofile=20000:20000", "nproc=32768:32768"}}
	for _, tc := range []struct {
		name string
		s    Settings
		n    uint64
		want string
	}{
		{"none asked", base, 0, "nofile=20000:20000 nproc=32768:32768"},
		{"below the host's", base, 4096, "nofile=4096:4096 nproc=32768:32768"},
		{"above the host's stays at it", base, 50000, "nofile=20000:20000 nproc=32768:32768"},
		{"no ulimits chosen", Settings{}, 4096, "nofile=4096:4096"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := strings.Join(withOpenFiles(tc.s, tc.n).Ulimits, " "); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if base.Ulimits[0] != "nofile=20000:20000" {
		t.Error("withOpenFiles changed its argument")
	}
}

func TestPaths(t *testing.T) {
	v := &Env{ws: "/home/u/repo", workdir: "/testbed"}
	for _, tc := range []struct {
		host, inside string
		ok           bool
	}{
		{"/home/u/repo", "/testbed", true},
		{"/home/u/repo/a/b.py", "/testbed/a/b.py", true},
		{"/home/u/repo/../other", "", false},
		{"/home/u/repository", "", false},
		{"/etc/passwd", "", false},
	} {
		got, ok := v.ContainerPath(tc.host)
		if got != tc.inside || ok != tc.ok {
			t.Errorf("ContainerPath(%q) = %q %v, want %q %v", tc.host, got, ok, tc.inside, tc.ok)
		}
		if tc.ok {
			back, ok := v.HostPath(tc.inside)
			if !ok || back != tc.host {
				t.Errorf("HostPath(%q) = %q %v", tc.inside, back, ok)
			}
		}
	}
	for _, p := range []string{"/testbedx/a", "/tmp", "/"} {
		if got, ok := v.HostPath(p); ok {
			t.Errorf("HostPath(%q) = %q, want outside", p, got)
		}
	}
}

func TestPIDReader(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		pid            int
	}{
		{"tag line taken out", "__T 42\nreal error output\n", "real error output\n", 42},
		{"engine error passed on", "Error: no such container\n", "Error: no such container\n", 0},
		{"partial engine error", "Error: cut", "Error: cut", 0},
		{"empty", "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &tracker{}
			r := &pidReader{br: bufio.NewReader(iotest.OneByteReader(strings.NewReader(tc.in))), tag: "__T", t: tr}
			got, err := io.ReadAll(r)
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			if string(got) != tc.want || tr.pid != tc.pid {
				t.Errorf("got %q pid %d, want %q pid %d", got, tr.pid, tc.want, tc.pid)
			}
		})
	}
}

func TestSettingsString(t *testing.T) {
	if got := (Settings{}).String(); got != "(engine defaults)" {
		t.Errorf("%q", got)
	}
	s := Settings{Runtime: "runc", CgroupManager: "cgroupfs", Ulimits: []string{"nofile=1:1"}, Init: true}
	if got := s.String(); got != "--runtime runc --cgroup-manager cgroupfs --ulimit nofile=1:1 --init" {
		t.Errorf("%q", got)
	}
}

func TestContainerName(t *testing.T) {
	for _, s := range []string{"", "a b/c", strings.Repeat("x", 100), "ok-1.2_3"} {
		n := containerName(s)
		if !strings.HasPrefix(n, "truss-") || len(n) > 60 || strings.ContainsAny(n, " /") {
			t.Errorf("containerName(%q) = %q", s, n)
		}
	}
}

// FuzzEnvScript: a shell's variables and directory reach bash as they
// were, whatever they hold.
func FuzzEnvScript(f *testing.F) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		f.Skip("no bash")
	}
	f.Add("plain", "/tmp")
	f.Add("it's \"quoted\" $HOME `x` \\ \n newline", "/tmp/a'b")
	f.Fuzz(func(t *testing.T, val, dir string) {
		if strings.ContainsRune(val, 0) || strings.ContainsRune(dir, 0) {
			t.Skip()
		}
		script := envScript(dir, []string{"V=" + val, "PATH=/host/only", "1BAD=x"}, []string{"/usr/bin/bash", "--noprofile"})
		// Without the cd (the directory need not exist here): the quoting
		// of the directory is checked by comparing the parsed word.
		script = strings.Replace(script, "cd -- ", "D=", 1)
		script = strings.Replace(script, " || exit 126", "", 1)
		out, err := exec.Command(bash, "--noprofile", "--norc", "-c", script+`printf '%s\x00%s\x00%s\x00' "$V" "$D" "$*"`).Output()
		if err != nil {
			t.Fatalf("script failed: %v\n%s", err, script)
		}
		got := strings.Split(string(out), "\x00")
		if got[0] != val || got[1] != dir || got[2] != "bash --noprofile" {
			t.Fatalf("got %q, want %q %q", got, val, dir)
		}
		if strings.Contains(script, "/host/only") || strings.Contains(script, "1BAD") {
			t.Fatalf("host-only or invalid variable passed:\n%s", script)
		}
	})
}

// Reap leaves the containers whose state lives in another temporary
// directory (another TMPDIR's sessions, another test's).
func TestStateHere(t *testing.T) {
	for _, tc := range []struct {
		dir, tmp string
		want     bool
	}{
		{"", "/tmp", true},
		{"/tmp/truss-env-1", "/tmp", true},
		{"/tmp/truss-env-1", "/tmp/", true},
		{"/work/t/.tmp/truss-env-1", "/tmp", false},
		{"/tmp/a/truss-env-1", "/tmp", false},
		{"truss-env-1", ".", false},
	} {
		if got := stateHere(tc.dir, tc.tmp); got != tc.want {
			t.Errorf("stateHere(%q, %q) = %v", tc.dir, tc.tmp, got)
		}
	}
}
