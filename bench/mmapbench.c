/* What mmap-bench's `read` program does (srajangarg/mmap-bench, written anew here from its
   description, not copied): every 4 KiB block of FILE once, in order or in a shuffled order,
   with lseek+read or by touching one byte of a shared read-only mapping, timed from the first
   block to the last (the mapping made before, unmapped after); with a hint, madvise as the
   original did, the hint OR-ed with MADV_WILLNEED (which makes both hints WILLNEED), or the
   hint alone with a last word `alone` (what iolab's classic form applies). Prints the time and
   the KIOPS. Built as the original was: g++ -O3 -x c bench/mmapbench.c -o mmapbench
   ./mmapbench FILE seq|random read|mmap [adv_seq|adv_random [alone]] */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BS 4096

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s FILE seq|random read|mmap [adv_seq|adv_random]\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) { perror("open"); return 1; }
  struct stat st;
  fstat(fd, &st);
  size_t n = st.st_size / BS;
  size_t *order = malloc(n * sizeof *order);
  for (size_t i = 0; i < n; i++) order[i] = i;
  if (!strcmp(argv[2], "random")) {
    srand(1);
    for (size_t i = n - 1; i > 0; i--) {
      size_t j = (size_t)rand() % (i + 1), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
  }
  unsigned long sum = 0;
  double t0, t1;
  if (!strcmp(argv[3], "read")) {
    char *buf = malloc(BS);
    t0 = now();
    for (size_t i = 0; i < n; i++) {
      lseek(fd, (off_t)order[i] * BS, SEEK_SET);
      if (read(fd, buf, BS) != BS) { perror("read"); return 1; }
      sum += (unsigned char)buf[0];
    }
    t1 = now();
  } else {
    char *p = mmap(NULL, n * BS, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) { perror("mmap"); return 1; }
    if (argc > 4) {
      int adv = !strcmp(argv[4], "adv_seq") ? MADV_SEQUENTIAL : MADV_RANDOM;
      int alone = argc > 5 && !strcmp(argv[5], "alone");
      madvise(p, n * BS, alone ? adv : adv | MADV_WILLNEED);
    }
    t0 = now();
    for (size_t i = 0; i < n; i++) sum += (unsigned char)p[order[i] * BS];
    t1 = now();
    munmap(p, n * BS);
  }
  printf("took %.0fms\niops : %.2f\nsum %lu\n", (t1 - t0) * 1e3, n / (t1 - t0) / 1e3, sum);
  return 0;
}
