// zl: main thread exits (SYS_exit), leaving the thread group's leader a zombie
// in /proc/PID/stat while a second thread keeps running: it appends to FILE.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <fcntl.h>
static const char *path;
static void *run(void *a){ for(;;){ int fd=open(path,O_WRONLY|O_APPEND|O_CREAT,0644); if(fd>=0){write(fd,"x\n",2);close(fd);} usleep(5000);} return 0; }
int main(int c,char**v){ path=v[1]; if(fork()) return 0; setsid(); if(fork()) return 0;
  pthread_t t; pthread_create(&t,0,run,0); syscall(SYS_exit,0); return 0; }
