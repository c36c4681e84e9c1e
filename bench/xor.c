/* Plain C XOR of 32-bit words over a resident buffer: the reference iolab's kernel is held to.
   gcc -O3 -march=native bench/xor.c -o xor -lpthread; ./xor SIZE_MIB THREADS */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
struct job { const uint32_t *p; size_t n; uint32_t x; };
static void *run(void *a) {
  struct job *j = a; uint32_t x = 0;
  for (size_t i = 0; i < j->n; i++) x ^= j->p[i];
  j->x = x; return 0;
}
int main(int c, char **v) {
  size_t mib = c > 1 ? atol(v[1]) : 1024; int t = c > 2 ? atoi(v[2]) : 1;
  size_t n = mib << 18; uint32_t *b = aligned_alloc(4096, n * 4);
  for (size_t i = 0; i < n; i++) b[i] = (uint32_t)(i * 2654435761u);
  double best = 1e9; uint32_t x = 0;
  for (int r = 0; r < 5; r++) {
    struct timespec s, e; pthread_t th[64]; struct job jb[64];
    clock_gettime(CLOCK_MONOTONIC, &s);
    for (int i = 0; i < t; i++) { jb[i].p = b + n / t * i; jb[i].n = n / t; pthread_create(&th[i], 0, run, &jb[i]); }
    x = 0; for (int i = 0; i < t; i++) { pthread_join(th[i], 0); x ^= jb[i].x; }
    clock_gettime(CLOCK_MONOTONIC, &e);
    double d = (e.tv_sec - s.tv_sec) + (e.tv_nsec - s.tv_nsec) / 1e9; if (d < best) best = d;
  }
  printf("%.2f GiB/s xor=%08x threads=%d\n", mib / 1024.0 / best, x, t);
  return 0;
}
