/* The same system calls as `iolab syscalls`, in a plain C loop: ns per call, best of 5.
   gcc -O2 bench/syscalls.c -o sc && ./sc FILE */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
#define BEST(name, n, body) do { double best = 1e9; for (int r = 0; r < 5; r++) { double s = now(); \
  for (long i = 0; i < (n); i++) { body; } double d = (now() - s) / (n) * 1e9; if (d < best) best = d; } \
  printf("%s %.1f\n", name, best); } while (0)
int main(int c, char **v) {
  int fd = open(c > 1 ? v[1] : "/etc/hostname", O_RDONLY); char b; struct stat st; fstat(fd, &st);
  long n = 2000000, size = st.st_size > 0 ? st.st_size : 1;
  BEST("getppid", n, getppid());
  BEST("read-1b", n, if (read(fd, &b, 1) == 0) lseek(fd, 0, SEEK_SET));
  BEST("pread-1b", n, pread(fd, &b, 1, i % size));
  BEST("lseek", n, lseek(fd, i % size, SEEK_SET));
  BEST("fstat", n, fstat(fd, &st));
  return 0;
}
