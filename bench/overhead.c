/* The work of one `iolab access` cell in plain C, to hold iolab's per-operation bookkeeping to:
   every whole 4 KiB block of FILE once, in order or shuffled, each read() (after lseek when out
   of order) or taken from a mapping, and XORed as 32-bit words (or one byte touched).
   gcc -O3 -march=native bench/overhead.c -o overhead
   ./overhead FILE seq|random read|mmap [xor|touch] [BS]   prints: kiops <K> xor <hex> */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static uint32_t xor_block(const unsigned char *p, size_t n) {
  uint32_t x = 0;
  const uint32_t *w = (const uint32_t *)p;
  for (size_t i = 0; i < n / 4; i++) x ^= w[i];
  return x;
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: %s FILE seq|random read|mmap [xor|touch] [BS]\n", argv[0]); return 2; }
  int random = !strcmp(argv[2], "random"), mmapped = !strcmp(argv[3], "mmap");
  int touch = argc > 4 && !strcmp(argv[4], "touch");
  size_t bs = argc > 5 ? strtoul(argv[5], 0, 10) : 4096;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) { perror("open"); return 1; }
  struct stat st; fstat(fd, &st);
  size_t nb = st.st_size / bs;
  size_t *order = malloc(nb * sizeof *order);
  for (size_t i = 0; i < nb; i++) order[i] = i;
  if (random) {
    uint64_t s = 88172645463325252ull;
    for (size_t i = nb - 1; i > 0; i--) {
      s ^= s << 13; s ^= s >> 7; s ^= s << 17;
      size_t j = s % (i + 1), t = order[i]; order[i] = order[j]; order[j] = t;
    }
  }
  posix_fadvise(fd, 0, 0, random ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL);
  unsigned char *buf = aligned_alloc(4096, bs), *map = 0;
  memset(buf, 0, bs);
  if (mmapped) {
    map = mmap(0, nb * bs, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) { perror("mmap"); return 1; }
  }
  uint32_t x = 0;
  off_t pos = -1;
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (size_t k = 0; k < nb; k++) {
    off_t off = (off_t)order[k] * bs;
    const unsigned char *p;
    if (mmapped) {
      p = map + off;
    } else {
      if (off != pos) lseek(fd, off, SEEK_SET);
      if (read(fd, buf, bs) != (ssize_t)bs) { perror("read"); return 1; }
      pos = off + bs;
      p = buf;
    }
    x ^= touch ? p[0] : xor_block(p, bs);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
  printf("kiops %.2f xor %08x\n", nb / s / 1000, x);
  return 0;
}
