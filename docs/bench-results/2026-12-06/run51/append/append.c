// Run 51: what appending to a growing file costs on this machine, with and without the page
// cache left behind the end (posix_fadvise(POSIX_FADV_DONTNEED)), as a held SQLite WAL grows:
// frames of a 2,048-byte page (2,072 bytes, so no frame starts on a page boundary) appended
// with pwrite, the file extended ahead with 4 MiB of zeros written and synced, as
// src/engines/sqlite/sqlite_wal_vfs.cpp does. Arguments: file, GiB to write, and two lags in
// MiB behind the prepared end: writeback is started at the first, pages are dropped at the
// second ("0 0": no advice). Prints the seconds and the process's system CPU a GiB.
// Built and run by append.sh.
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  if(argc!=5){fprintf(stderr,"usage: append FILE GIB LAG1_MIB LAG2_MIB\n");return 2;}
  const char*path=argv[1]; long gib=atol(argv[2]); long lag1=atol(argv[3])<<20, lag2=atol(argv[4])<<20; // 0 = no fadvise
  int fd=open(path,O_RDWR|O_CREAT|O_TRUNC,0644);
  const long frame=2048+24, chunk=4<<20; char buf[2072]; memset(buf,7,sizeof buf);
  static char zeros[4<<20];
  long off=0, prepared=0, total=gib<<30; double t0=now(), tl=t0; long nextg=1L<<30;
  struct rusage r0; getrusage(RUSAGE_SELF,&r0);
  while(off<total){
    if(off+frame>prepared){ pwrite(fd,zeros,chunk,prepared); fdatasync(fd); prepared+=chunk;
      if(lag1){ long e=prepared; 
        if(e-lag1-chunk>=0) posix_fadvise(fd,e-lag1-chunk,chunk,POSIX_FADV_DONTNEED);
        if(e-lag2-chunk>=0) posix_fadvise(fd,e-lag2-chunk,chunk,POSIX_FADV_DONTNEED);} }
    pwrite(fd,buf,frame,off); off+=frame;
    if(off>=nextg){ double t=now(); struct rusage r; getrusage(RUSAGE_SELF,&r);
      double sys=(r.ru_stime.tv_sec-r0.ru_stime.tv_sec)+(r.ru_stime.tv_usec-r0.ru_stime.tv_usec)/1e6;
      printf("%ld GiB %.2f s sys %.2f\n",nextg>>30,t-tl,sys); fflush(stdout); tl=t; r0=r; nextg+=1L<<30; }
  }
  printf("total %.1f s\n",now()-t0); close(fd); return 0; }
