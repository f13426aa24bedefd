// Run 42: N frames of 4,120 bytes (SQLite's WAL frame of a 4,096-byte page) written with pwrite
// at consecutive offsets, an fdatasync every EVERY frames (a commit), to a file that
//   grow:     grows with the writes (a WAL held by a reader);
//   reuse:    wraps round its first 10,000 frames (a WAL that restarts);
//   falloc:   is extended by posix-style fallocate CHUNK MiB at a time ahead of the writes;
//   keepsize: the same with FALLOC_FL_KEEP_SIZE;
//   zero:     is extended by writing CHUNK MiB of zeros ahead of the writes;
//   zerosync: the same, each chunk of zeros synced (what src/engines/sqlite/sqlite_wal_vfs.cpp does).
// Everything is timed, the extensions included.
//   gcc -O2 -o pre pre.c && ./pre MODE /tmp/f.bin N CHUNK_MIB EVERY
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/falloc.h>
static long EVERY=500;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  const char*mode=argv[1]; long n=atol(argv[3]); long chunk=atol(argv[4])<<20; EVERY=atol(argv[5]);
  int fd=open(argv[2],O_RDWR|O_CREAT|O_TRUNC,0644);
  char frame[4120]; memset(frame,7,sizeof frame);
  static char z[1<<20];
  long ext=0; double t0=now(), tstart=t0;
  for(long i=0;i<n;i++){
    long off=i*4120L, end=off+4120;
    if(strcmp(mode,"grow")!=0 && strcmp(mode,"reuse")!=0 && end>ext){
      long ne=ext+chunk;
      if(!strcmp(mode,"zero")||!strcmp(mode,"zerosync")){ for(long o=ext;o<ne;o+=sizeof z) pwrite(fd,z,sizeof z,o); if(!strcmp(mode,"zerosync")) fdatasync(fd);}
      else if(!strcmp(mode,"falloc")) fallocate(fd,0,ext,chunk);
      else if(!strcmp(mode,"keepsize")) fallocate(fd,FALLOC_FL_KEEP_SIZE,ext,chunk);
      else if(!strcmp(mode,"zerorange")) fallocate(fd,FALLOC_FL_ZERO_RANGE,ext,chunk);
      ext=ne;
    }
    if(!strcmp(mode,"reuse")) off=(i%10000)*4120L;
    pwrite(fd,frame,sizeof frame,off);
    if(i%EVERY==EVERY-1) fdatasync(fd);
    if((i+1)%(n/4)==0){double t=now(); printf("%s %ldMB: %ld frames: %.2f us/frame\n",mode,chunk>>20,i+1,(t-t0)/(n/4)*1e6); fflush(stdout); t0=t;} }
  printf("%s %ldMB total %.2f us/frame\n",mode,chunk>>20,(now()-tstart)/n*1e6);
  close(fd); unlink(argv[2]); return 0;
}
