//go:build linux

package sandbox_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trussdev/truss/internal/sandbox"
)

// mappedOnly fills MB mebibytes of disk in files that end up deleted and
// held only by a shared mapping, with no descriptor open: children write
// each file and are reaped without a wait (SIGCHLD ignored, so their
// write_bytes reach no parent); the holder maps the file, closes it and
// unlinks it. Then it holds them 5 s and says "finished".
const mappedOnly = `#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int c, char **v) {
  signal(SIGCHLD, SIG_IGN);
  int mb = atoi(v[2]);
  for (int k = 0; k < mb; k++) {
    char p[4096]; snprintf(p, sizeof p, "%s/.de%d", v[1], k);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { perror("open"); return 1; }
    if (fork() == 0) {
      static char buf[1 << 16]; memset(buf, 'a' + k % 26, sizeof buf);
      for (int i = 0; i < 16; i++) if (write(fd, buf, sizeof buf) < 0) { perror("write"); _exit(1); }
      _exit(0);
    }
    struct stat st;
    do { usleep(2000); fstat(fd, &st); } while (st.st_size < (off_t)1 << 20);
    usleep(20000);
    if (mmap(0, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED) { perror("mmap"); return 1; }
    close(fd); unlink(p);
  }
  printf("holding %d MiB in deleted mapped files\n", mb); fflush(stdout);
  sleep(5);
  printf("finished\n");
  return 0;
}
`

// TestDiskBudgetMappedOnly: files deleted while a process keeps only a
// shared mapping of them (no descriptor), written by children reaped
// without a wait, take 160 MiB under a budget of 32 MiB; neither
// write_bytes nor the walk of the writable roots and the descriptors
// sees them, the mappings do.
func TestDiskBudgetMappedOnly(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the program that maps deleted files")
	}
	b := limitBox(t, sandbox.Limits{Pids: 256, FileSize: 1 << 30, DiskBudget: 32 << 20})
	if b.sb.Plan().Mechanisms.Cgroup == "" {
		t.Skip("no cgroup to account the budget by on this host")
	}
	src := filepath.Join(t.TempDir(), "mapped.c")
	if err := os.WriteFile(src, []byte(mappedOnly), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(b.ws, "mapped")
	if out, err := exec.Command(gcc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("gcc cannot build the program: %v\n%s", err, out)
	}
	r := b.run(t, "./mapped . 160", time.Minute)
	var le *sandbox.LimitError
	if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "disk" || !strings.Contains(r.Err.Message, "past the session's budget of 32 MiB") {
		t.Errorf("160 MiB held in deleted, mapped-only files under a budget of 32 MiB: %+v %q %q", r.Err, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stdout, "finished") {
		t.Error("the command ran on past the budget")
	}
	if r.Err != nil {
		t.Log(r.Err.Message)
	}
	if r := b.run(t, "echo reads still work", 0); r.Err != nil {
		t.Errorf("a command that writes nothing after the budget: %+v; guard %v", r, b.sb.Guard())
	}
}
