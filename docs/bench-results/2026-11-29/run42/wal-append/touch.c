// Run 42: the cost of touching anonymous memory for the first time, a GB at a time, then all of
// it again. On the benchmark machine (a VM whose freed memory goes back to the host) the first
// touch beyond the few GB the guest keeps backed costs about 3 s a GB.
//   gcc -O2 -o touch touch.c && ./touch 16
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){ long gb=atol(argv[1]); size_t g=1L<<30;
  char*p=mmap(0,gb*g,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE,-1,0);
  for(long i=0;i<gb;i++){double t=now(); memset(p+i*g,1,g); printf("GB %ld first touch %.2f s\n",i+1,now()-t); fflush(stdout);}
  double t=now(); memset(p,2,gb*g); printf("all %ld GB again: %.2f s/GB\n",gb,(now()-t)/gb);
  return 0;}
