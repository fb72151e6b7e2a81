// inj PID PROG [ARG...]: ptrace PID and make it execve PROG (a command
// turning the container's init into a program of its own).
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <sys/user.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
static void poke(int pid, unsigned long a, const void *buf, size_t n){
  unsigned char tmp[8];
  for(size_t i=0;i<n;i+=8){ memset(tmp,0,8); memcpy(tmp,(const char*)buf+i,n-i<8?n-i:8);
    unsigned long w; memcpy(&w,tmp,8); ptrace(PTRACE_POKEDATA,pid,a+i,w);} }
int main(int c,char**v){ int pid=atoi(v[1]);
 if(ptrace(PTRACE_ATTACH,pid,0,0)<0){printf("attach %d: %s\n",pid,strerror(errno));return 1;}
 int st; waitpid(pid,&st,__WALL);
 struct user_regs_struct r; ptrace(PTRACE_GETREGS,pid,0,&r);
 unsigned long ins=ptrace(PTRACE_PEEKTEXT,pid,r.rip-2,0);
 if((ins&0xffff)!=0x050f){printf("not after a syscall at %llx: %lx\n",r.rip,ins&0xffff);ptrace(PTRACE_DETACH,pid,0,0);return 1;}
 unsigned long base=(r.rsp-4096)&~15UL, p=base;
 unsigned long argv[16]; int n=0;
 for(int i=2;i<c&&n<15;i++){ size_t l=strlen(v[i])+1; poke(pid,p,v[i],l); argv[n++]=p; p+=(l+15)&~15UL; }
 argv[n++]=0; unsigned long av=p; poke(pid,av,argv,n*8);
 struct user_regs_struct nr=r; nr.rax=59; nr.orig_rax=-1; nr.rdi=argv[0]; nr.rsi=av; nr.rdx=0; nr.rip=r.rip-2;
 ptrace(PTRACE_SETREGS,pid,0,&nr);
 ptrace(PTRACE_DETACH,pid,0,0);
 printf("pid %d now execs %s\n",pid,v[2]); return 0;}
