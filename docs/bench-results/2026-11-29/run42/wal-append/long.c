// Run 42: is the slow part of a held SQLite run (from about 5 GB of WAL to about the size of
// the machine's memory) the storage's? Frames of 4,120 bytes appended to one file, as the WAL
// extending VFS writes them (zeros written and synced 4 MiB at a time ahead of the frames), an
// fdatasync every 40 frames; per GB written: the mean cost of a frame, and of an fdatasync.
//   gcc -O2 -o long long.c && ./long /tmp/f.bin 30   (GB)
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char** argv) {
  const long gb = atol(argv[2]), frame = 4120, chunk = 4L << 20, every = 40;
  int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
  static char buf[4120], zeros[64 << 10];
  memset(buf, 7, sizeof buf);
  long ext = 0, frames_in_gb = 0, syncs_in_gb = 0;
  double t0 = now(), sync_s = 0;
  for (long i = 0;; i++) {
    long off = i * frame;
    if (off + frame > ext) {
      for (long o = ext; o < ext + chunk; o += sizeof zeros) pwrite(fd, zeros, sizeof zeros, o);
      fdatasync(fd);
      ext += chunk;
    }
    pwrite(fd, buf, frame, off);
    frames_in_gb++;
    if (i % every == every - 1) {
      double s = now();
      fdatasync(fd);
      sync_s += now() - s;
      syncs_in_gb++;
    }
    if ((off + frame) / (1L << 30) != off / (1L << 30)) {
      double t = now();
      printf("%ld GB: %.2f us/frame, fdatasync %.0f us\n", (off + frame) >> 30,
             (t - t0) / frames_in_gb * 1e6, sync_s / syncs_in_gb * 1e6);
      fflush(stdout);
      t0 = t; sync_s = 0; frames_in_gb = 0; syncs_in_gb = 0;
      if ((off + frame) >> 30 >= gb) break;
    }
  }
  close(fd);
  unlink(argv[1]);
  return 0;
}
