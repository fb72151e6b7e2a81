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

// heldDirs makes directories whose listings take blocks of their own —
// LINKS hard links with 240-character names to one empty file, some 6
// MiB a directory of 20,000 on ext4 — and empties and removes each while
// it is held, so that only its holder keeps its blocks. HOW holds them:
// "open" in this process; "cwd" as the working directory of a child;
// "root" as a child's root (chroot; the working directory where that is
// refused); "thread" open in a second thread after the process's first
// has exited, so that /proc/PID/fd is empty. The links are made and
// removed by children reaped without a wait (SIGCHLD ignored), a few
// hundred milliseconds apart, so that their write_bytes reach no parent
// and polls rarely see them. It holds the directories 5 s and says
// "finished".
//
// Usage: dirs N LINKS HOW
const heldDirs = `#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static char pad[241];
static int nd, nl;
static const char *how;
static void job(const char *dn, int from, int to, int del) {
  int p[2]; if (pipe(p)) { perror("pipe"); exit(1); }
  if (fork() == 0) {
    close(p[0]); char name[300];
    for (int i = from; i < to; i++) {
      snprintf(name, sizeof name, "%s/%s%06d", dn, pad, i);
      if (del ? unlink(name) : link(".seed", name)) { perror(del ? "unlink" : "link"); _exit(1); }
    }
    _exit(0);
  }
  close(p[1]); char c; read(p[0], &c, 1); close(p[0]);
  usleep(150000);
}
static void *work(void *a) {
  const int chunk = 2500;
  close(open(".seed", O_CREAT | O_WRONLY, 0644));
  for (int d = 0; d < nd; d++) {
    char dn[32]; snprintf(dn, sizeof dn, ".dd%d", d);
    if (mkdir(dn, 0755)) { perror("mkdir"); exit(1); }
    for (int i = 0; i < nl; i += chunk) job(dn, i, i + chunk < nl ? i + chunk : nl, 0);
    int fd = open(dn, O_RDONLY | O_DIRECTORY);
    if (fd < 0) { perror("open"); exit(1); }
    if (!strcmp(how, "cwd") || !strcmp(how, "root")) {
      if (fork() == 0) {
        if (fchdir(fd)) _exit(1);
        if (!strcmp(how, "root") && chroot(".")) perror("chroot");
        close(fd);
        for (;;) pause();
      }
      close(fd);
      usleep(100000);
    }
    for (int i = 0; i < nl; i += chunk) job(dn, i, i + chunk < nl ? i + chunk : nl, 1);
    if (rmdir(dn)) { perror("rmdir"); exit(1); }
    printf("directory %d removed\n", d); fflush(stdout);
  }
  unlink(".seed");
  printf("holding\n"); fflush(stdout);
  sleep(30); /* the watcher counts 80,000 held names: on a loaded machine it took over 5 s */
  printf("finished\n"); fflush(stdout);
  exit(0);
}
int main(int argc, char **argv) {
  nd = atoi(argv[1]); nl = atoi(argv[2]); how = argv[3];
  memset(pad, 'a', 240);
  signal(SIGCHLD, SIG_IGN);
  if (strcmp(how, "thread")) work(0);
  pthread_t t;
  if (pthread_create(&t, 0, work, 0)) { perror("pthread_create"); return 1; }
  pthread_exit(0);
}
`

// TestDiskBudgetHeldDirectories: directories emptied and removed while a
// process holds them (open, as a working directory, as a root, by a
// thread once the first has exited) keep their blocks; built by
// children reaped without a wait, whose write_bytes reach no parent,
// they take some 30 MiB under a budget of 16 MiB, and the command is
// killed.
func TestDiskBudgetHeldDirectories(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to build the program that holds deleted directories")
	}
	src := filepath.Join(t.TempDir(), "dirs.c")
	if err := os.WriteFile(src, []byte(heldDirs), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"open", "cwd", "root", "thread"} {
		t.Run(how, func(t *testing.T) {
			b := limitBox(t, sandbox.Limits{Pids: 256, FileSize: 1 << 30, DiskBudget: 16 << 20})
			if b.sb.Plan().Mechanisms.Cgroup == "" {
				t.Skip("no cgroup to account the budget by on this host")
			}
			if out, err := exec.Command(gcc, "-O2", "-pthread", "-o", filepath.Join(b.ws, "dirs"), src).CombinedOutput(); err != nil {
				t.Skipf("gcc cannot build the program: %v\n%s", err, out)
			}
			r := b.run(t, "./dirs 4 20000 "+how, 2*time.Minute)
			var le *sandbox.LimitError
			if r.Err == nil || !errors.As(r.Err.Err, &le) || le.Limit != "disk" || !strings.Contains(r.Err.Message, "past the session's budget of 16 MiB") {
				t.Errorf("deleted directories held (%s) past a budget of 16 MiB: %+v %q %q", how, r.Err, r.Stdout, r.Stderr)
			}
			if strings.Contains(r.Stdout, "finished") {
				t.Error("the command ran on past the budget")
			}
			if r.Err != nil {
				t.Log(r.Err.Message)
			}
			t.Logf("the command said: %q %q", r.Stdout, r.Stderr)
			if r := b.run(t, "echo reads still work", 0); r.Err != nil {
				t.Errorf("a command that writes nothing after the budget: %+v; guard %v", r, b.sb.Guard())
			}
		})
	}
}
