// Appends N frames of 4120 bytes (SQLite's WAL frame for 4096-byte pages) with pwrite, as
// SQLite's WAL writer does, to a file in DIR: mode "grow" (past the end of a new file),
// "rewrite" (over a file already written, in the page cache), "prezero" (a file whose next
// 64 MB were written with zeros in full pages beforehand, by the same thread, untimed).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  const char*mode=argv[1]; const char*path=argv[2]; long n=atol(argv[3]);
  int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  char frame[4120]; memset(frame,7,sizeof frame);
  long total=n*4120L;
  if(strcmp(mode,"rewrite")==0||strcmp(mode,"prezero")==0){
    static char z[1<<20]; memset(z,strcmp(mode,"rewrite")==0?1:0,sizeof z);
    for(long o=0;o<total+(1<<20);o+=sizeof z) pwrite(fd,z,sizeof z,o);
  }
  double t0=now();
  for(long i=0;i<n;i++){ pwrite(fd,frame,sizeof frame,i*4120L); }
  double t1=now();
  printf("%s: %ld frames (%.0f MB) in %.3f s: %.2f us/frame\n",mode,n,total/1e6,t1-t0,(t1-t0)/n*1e6);
  close(fd); unlink(path); return 0;
}
