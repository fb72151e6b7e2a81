// pm PID...: what a command can do to another process of the
// container's user through /proc and signals, on each PID (0 and
// repeats are skipped). One line per attempt:
//
//	PID mem: opened | refused (why)       open /proc/PID/mem read-write
//	PID environ: read N | refused (why)   read /proc/PID/environ
//	PID fd: opened N | refused (why)      open or read the link of each
//	                                      /proc/PID/fd/N
//	PID stop: stopped | running           SIGSTOP, then its state
//	PID kill: dead | alive                SIGTERM, SIGKILL, then whether
//	                                      it still runs
//
// Nothing is written into another process's memory: opening it for
// writing is the whole of the attack (a write is one pwrite away).
// The signals come last, after every PID's files.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char state(int pid) {
	char p[64], buf[512];
	snprintf(p, sizeof p, "/proc/%d/stat", pid);
	int fd = open(p, O_RDONLY);
	if (fd < 0) return 'X';
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0) return 'X';
	buf[n] = 0;
	char *r = strrchr(buf, ')');
	return r && r[1] == ' ' ? r[2] : '?';
}

static void files(int pid) {
	char p[128], buf[4096];
	snprintf(p, sizeof p, "/proc/%d/mem", pid);
	int fd = open(p, O_RDWR);
	if (fd >= 0) {
		printf("%d mem: opened\n", pid);
		close(fd);
	} else {
		printf("%d mem: refused (%s)\n", pid, strerror(errno));
	}
	snprintf(p, sizeof p, "/proc/%d/environ", pid);
	fd = open(p, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
	if (n >= 0) {
		printf("%d environ: read %zd\n", pid, n);
	} else {
		printf("%d environ: refused (%s)\n", pid, strerror(errno));
	}
	if (fd >= 0) close(fd);
	snprintf(p, sizeof p, "/proc/%d/fd", pid);
	DIR *d = opendir(p);
	if (!d) {
		printf("%d fd: refused (%s)\n", pid, strerror(errno));
		return;
	}
	int opened = 0, err = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.') continue;
		snprintf(p, sizeof p, "/proc/%d/fd/%s", pid, e->d_name);
		fd = open(p, O_RDONLY | O_NONBLOCK);
		if (fd >= 0) {
			opened++;
			close(fd);
			continue;
		}
		err = errno;
		if (readlink(p, buf, sizeof buf) >= 0) opened++;
		else err = errno;
	}
	closedir(d);
	if (opened) printf("%d fd: opened %d\n", pid, opened);
	else printf("%d fd: refused (%s)\n", pid, strerror(err));
}

int main(int argc, char **argv) {
	int pids[64], n = 0;
	for (int i = 1; i < argc && n < 64; i++) {
		int pid = atoi(argv[i]), seen = 0;
		for (int j = 0; j < n; j++) seen |= pids[j] == pid;
		if (pid > 0 && !seen) pids[n++] = pid;
	}
	for (int i = 0; i < n; i++) files(pids[i]);
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGSTOP);
		usleep(200000);
		printf("%d stop: %s\n", pids[i], state(pids[i]) == 'T' ? "stopped" : "running");
		kill(pids[i], SIGCONT);
	}
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		kill(pids[i], SIGTERM);
		kill(pids[i], SIGKILL);
	}
	usleep(300000);
	for (int i = 0; i < n; i++) {
		char s = state(pids[i]);
		printf("%d kill: %s\n", pids[i], s == 'X' || s == 'Z' ? "dead" : "alive");
	}
	return 0;
}
