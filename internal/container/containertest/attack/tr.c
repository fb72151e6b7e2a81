// tr PID: tries each system call that reaches into another process on
// PID and prints one line per call: "NAME: refused" when it failed with
// EPERM, "NAME: allowed (…)" otherwise (a success, or a failure that
// shows the call ran: a bad address, a bad descriptor).
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif
#ifndef SYS_kcmp
#define SYS_kcmp 312
#endif
static void report(const char *name, long r, int err) {
  if (r < 0 && err == EPERM) printf("%s: refused\n", name);
  else if (r < 0) printf("%s: allowed (%s)\n", name, strerror(err));
  else printf("%s: allowed (%ld)\n", name, r);
}
int main(int c, char **v) {
  if (c < 2) return 2;
  int pid = atoi(v[1]);
  long r = ptrace(PTRACE_ATTACH, pid, 0, 0);
  report("ptrace", r, errno);
  if (r == 0) { waitpid(pid, 0, __WALL); ptrace(PTRACE_DETACH, pid, 0, 0); }
  char buf[8];
  struct iovec l = {buf, sizeof buf}, rm = {(void *)0x1000, sizeof buf};
  r = process_vm_readv(pid, &l, 1, &rm, 1, 0);
  report("process_vm_readv", r, errno);
  r = process_vm_writev(pid, &l, 1, &rm, 1, 0);
  report("process_vm_writev", r, errno);
  long pfd = syscall(SYS_pidfd_open, pid, 0);
  if (pfd < 0) { printf("pidfd_open: %s\n", strerror(errno)); return 1; }
  r = syscall(SYS_pidfd_getfd, pfd, 0, 0);
  report("pidfd_getfd", r, errno);
  r = syscall(SYS_kcmp, getpid(), pid, 0, 0, 0);
  report("kcmp", r, errno);
  return 0;
}
