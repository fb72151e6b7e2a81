package toolcache

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func envOf(c *Caches) map[string]string {
	m := map[string]string{}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestFor(t *testing.T) {
	host := t.TempDir()
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		host     string // GOMODCACHE
		network  bool
		modcache string
		proxy    string
		readOnly []string
	}{
		{"offline with a host module cache", host, false, host, "", []string{host}},
		{"online with a host module cache", host, true, filepath.Join(dir, "go-mod"), "file://" + host + "/cache/download,https://proxy.golang.org,direct", []string{host}},
		{"no host module cache", filepath.Join(host, "missing"), false, filepath.Join(dir, "go-mod"), "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMODCACHE", tc.host)
			t.Setenv("GOPROXY", "")
			c := For(dir, tc.network)
			env := envOf(c)
			if env["GOCACHE"] != filepath.Join(dir, "go-build") || env["XDG_CACHE_HOME"] != filepath.Join(dir, "xdg") ||
				env["npm_config_cache"] != filepath.Join(dir, "npm") || env["PIP_CACHE_DIR"] != filepath.Join(dir, "pip") {
				t.Errorf("env %v", c.Env)
			}
			if env["GOMODCACHE"] != tc.modcache || env["GOPROXY"] != tc.proxy || !slices.Equal(c.ReadOnly, tc.readOnly) {
				t.Errorf("GOMODCACHE %q GOPROXY %q read-only %v", env["GOMODCACHE"], env["GOPROXY"], c.ReadOnly)
			}
			for _, w := range c.Writable {
				if _, in := strings.CutPrefix(w, dir+string(filepath.Separator)); !in {
					t.Errorf("writable %s is outside %s", w, dir)
				}
				if w == host {
					t.Error("the host's module cache is writable")
				}
			}
			if err := c.Make(); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.Writable {
				if fi, err := os.Stat(w); err != nil || !fi.IsDir() {
					t.Errorf("%s not made: %v", w, err)
				}
			}
		})
	}
}

func TestDirFor(t *testing.T) {
	t.Setenv("TRUSS_HOME", "/th")
	t.Setenv(SharedEnv, "")
	a, _ := DirFor("/w/a")
	b, _ := DirFor("/x/a")
	if !strings.HasPrefix(a, "/th/cache/workspaces/a-") || a == b {
		t.Errorf("%s %s", a, b)
	}
	t.Setenv(SharedEnv, "/shared")
	if d, err := DirFor("/w/a"); err != nil || d != "/shared" {
		t.Errorf("%s %v", d, err)
	}
	t.Setenv(SharedEnv, "rel")
	if _, err := DirFor("/w/a"); err == nil {
		t.Error("a relative shared cache was taken")
	}
}

// TestLayered: the host's caches that exist are layers under the run's
// own, each in the run's directory; one the host lacks is the run's alone.
func TestLayered(t *testing.T) {
	host := t.TempDir()
	gocache := filepath.Join(host, "go-build")
	os.MkdirAll(gocache, 0o755)
	t.Setenv("GOCACHE", gocache)
	t.Setenv("PIP_CACHE_DIR", filepath.Join(host, "no-pip"))
	t.Setenv("npm_config_cache", "relative")
	run := t.TempDir()
	c := Layered(run, false)
	if len(c.Layers) != 1 {
		t.Fatalf("layers %+v, want Go's build cache alone", c.Layers)
	}
	l := c.Layers[0]
	if l.Lower != gocache || l.Dir != filepath.Join(run, "go-build") || !slices.Contains(c.Env, "GOCACHE="+l.Dir) {
		t.Errorf("layer %+v, env %v", l, c.Env)
	}
	for _, d := range []string{l.Dir, l.Upper, l.Work} {
		if !slices.Contains(c.Writable, d) || !strings.HasPrefix(d, run+string(filepath.Separator)) {
			t.Errorf("%s is not a writable directory of the run's (%v)", d, c.Writable)
		}
	}
	if slices.Contains(c.Writable, gocache) {
		t.Error("the host's cache is writable")
	}
}

// TestProgrammed: Go's build cache is the run's own directory, read
// through the program over the lower caches, which are read-only and not
// overlaid; pip's stays an overlay; a lower that overlaps the run's
// directory is refused.
func TestProgrammed(t *testing.T) {
	host := t.TempDir()
	gocache, pip := filepath.Join(host, "go-build"), filepath.Join(host, "pip")
	os.MkdirAll(gocache, 0o755)
	os.MkdirAll(pip, 0o755)
	t.Setenv("GOCACHE", gocache)
	t.Setenv("PIP_CACHE_DIR", pip)
	t.Setenv("npm_config_cache", "relative")
	run := t.TempDir()
	warm := filepath.Join(host, "warm dir")
	c, err := Programmed(run, false, "/bin/truss", []string{gocache, warm})
	if err != nil {
		t.Fatal(err)
	}
	env := envOf(c)
	private := filepath.Join(run, "go-build")
	if env["GOCACHE"] != private || env["GOCACHEPROG"] != "/bin/truss __go-cache-prog "+private+" "+gocache+" '"+warm+"'" {
		t.Errorf("env %v", c.Env)
	}
	if len(c.Layers) != 1 || c.Layers[0].Lower != pip {
		t.Errorf("layers %+v, want pip's alone", c.Layers)
	}
	if !slices.Contains(c.Writable, private) || slices.Contains(c.Writable, private+".upper") || slices.Contains(c.Writable, gocache) {
		t.Errorf("writable %v", c.Writable)
	}
	if !slices.Contains(c.ReadOnly, gocache) || !slices.Contains(c.ReadOnly, warm) || !slices.Equal(c.GoLowers, []string{gocache, warm}) || c.GoProgram != "/bin/truss" {
		t.Errorf("read-only %v, lowers %v, program %q", c.ReadOnly, c.GoLowers, c.GoProgram)
	}
	for _, bad := range []string{run, filepath.Join(run, "go-build"), filepath.Dir(run)} {
		if _, err := Programmed(run, false, "/bin/truss", []string{bad}); err == nil {
			t.Errorf("the lower %s, overlapping %s, was taken", bad, run)
		}
	}
}

// TestGoLowers: the host's Go build cache, then Truss's warm one, where
// each is a directory.
func TestGoLowers(t *testing.T) {
	home := t.TempDir()
	t.Setenv("TRUSS_HOME", home)
	gocache := filepath.Join(home, "host-go-build")
	t.Setenv("GOCACHE", gocache)
	if got := GoLowers(); len(got) != 0 {
		t.Errorf("lowers %v, want none", got)
	}
	warm, _ := WarmGoDir()
	os.MkdirAll(warm, 0o700)
	os.MkdirAll(gocache, 0o700)
	if got := GoLowers(); !slices.Equal(got, []string{gocache, warm}) {
		t.Errorf("lowers %v", got)
	}
	t.Setenv("GOCACHE", "off")
	if got := GoLowers(); !slices.Equal(got, []string{warm}) {
		t.Errorf("lowers %v with GOCACHE=off", got)
	}
}
