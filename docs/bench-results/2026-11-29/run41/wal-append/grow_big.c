#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  long n=atol(argv[2]); int fd=open(argv[1],O_RDWR|O_CREAT|O_TRUNC,0644);
  char frame[4120]; memset(frame,7,sizeof frame);
  double t0=now();
  for(long i=0;i<n;i++){ pwrite(fd,frame,sizeof frame,i*4120L);
    if(i%500==499) fdatasync(fd);
    if((i+1)%(n/10)==0){double t=now(); printf("%ld frames, %.1f GB: %.2f us/frame\n",i+1,(i+1)*4120.0/1e9,(t-t0)/(n/10)*1e6); fflush(stdout); t0=t;} }
  close(fd); unlink(argv[1]); return 0;
}
