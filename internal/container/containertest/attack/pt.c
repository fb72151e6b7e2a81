// pt PID: ptrace PID and report where it stopped (whether a command can
// trace it).
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/user.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
int main(int c,char**v){ int pid=atoi(v[1]);
 if(ptrace(PTRACE_ATTACH,pid,0,0)<0){printf("attach %d: %s\n",pid,strerror(errno));return 1;}
 int st; waitpid(pid,&st,__WALL); struct user_regs_struct r; ptrace(PTRACE_GETREGS,pid,0,&r);
 printf("attached to %d, rip=%llx (can inject code here)\n",pid,r.rip);
 ptrace(PTRACE_DETACH,pid,0,0); return 0;}
