/* What mmapbench's random-read loop does (github viktorleis/mmapbench, written anew here, not
   copied): THREADS threads read one byte at a uniformly random offset of a shared read-only
   mapping of FILE, forever; a companion thread does 10,000 x exp(log(x)) per unit of work; every
   second the main thread prints the reads, the TLB shootdowns (/proc/interrupts), the bytes the
   device MAJ:MIN read (/proc/diskstats) and the companion's units, and, given a memory cgroup
   directory, the group's usage. It stops after SECONDS.
   gcc -O3 -pthread bench/mmaprandom.c -o mmaprandom -lm
   ./mmaprandom FILE THREADS HINT(0 normal,1 random) SECONDS MAJ:MIN [CGROUP_DIR]
   prints per second: t,reads,tlb,dev_bytes,cpuwork,mem_bytes */
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const unsigned char *p;
static uint64_t size;
static atomic_int stop;
static _Alignas(64) atomic_uint_fast64_t counts[64][8];
static atomic_uint_fast64_t cpu_work;

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void *reader(void *arg) {
  long id = (long)arg;
  uint64_t s = 0x1234 + id * 7919, sum = 0;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    uint64_t off = (uint64_t)(((unsigned __int128)splitmix(&s) * size) >> 64);
    sum += p[off];
    atomic_fetch_add_explicit(&counts[id][0], 1, memory_order_relaxed);
  }
  return (void *)(uintptr_t)sum;
}

static void *companion(void *arg) {
  (void)arg;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    volatile double x = 1.5 + (double)atomic_load(&cpu_work) * 1e-12;
    double y = x;
    for (int r = 0; r < 10000; r++) y = exp(log(y));
    x = y;
    atomic_fetch_add(&cpu_work, 1);
  }
  return 0;
}

static uint64_t tlb(void) {
  FILE *f = fopen("/proc/interrupts", "r");
  char line[8192];
  uint64_t n = 0;
  while (f && fgets(line, sizeof line, f)) {
    char *q = line;
    while (*q == ' ') q++;
    if (strncmp(q, "TLB:", 4)) continue;
    q += 4;
    for (;;) {
      char *end;
      unsigned long long v = strtoull(q, &end, 10);
      if (end == q) break;
      n += v;
      q = end;
    }
  }
  if (f) fclose(f);
  return n;
}

static uint64_t dev_bytes(unsigned ma, unsigned mi) {
  FILE *f = fopen("/proc/diskstats", "r");
  unsigned a, b;
  char name[64];
  unsigned long long r1, r2, sectors;
  uint64_t out = 0;
  char line[512];
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "%u %u %63s %llu %llu %llu", &a, &b, name, &r1, &r2, &sectors) == 6 && a == ma && b == mi)
      out = sectors * 512;
  if (f) fclose(f);
  return out;
}

static uint64_t mem_usage(const char *dir) {
  if (!dir) return 0;
  char path[4096];
  unsigned long long v = 0;
  const char *names[] = {"memory.usage_in_bytes", "memory.current"};
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "r");
    if (f) {
      if (fscanf(f, "%llu", &v) != 1) v = 0;
      fclose(f);
      break;
    }
  }
  return v;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "usage: %s FILE THREADS HINT SECONDS MAJ:MIN [CGROUP_DIR]\n", argv[0]);
    return 2;
  }
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) { perror("open"); return 1; }
  struct stat st;
  fstat(fd, &st);
  size = st.st_size;
  int threads = atoi(argv[2]), hint = atoi(argv[3]);
  double seconds = atof(argv[4]);
  unsigned ma, mi;
  if (threads < 1 || threads > 64 || sscanf(argv[5], "%u:%u", &ma, &mi) != 2) { fprintf(stderr, "bad arguments\n"); return 2; }
  const char *cg = argc > 6 ? argv[6] : 0;
  p = mmap(0, size, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) { perror("mmap"); return 1; }
  madvise((void *)p, size, hint == 1 ? MADV_RANDOM : MADV_NORMAL);
  pthread_t t[65];
  for (long i = 0; i < threads; i++) pthread_create(&t[i], 0, reader, (void *)i);
  pthread_create(&t[threads], 0, companion, 0);
  double start = now();
  uint64_t last_tlb = tlb(), last_dev = dev_bytes(ma, mi), last_reads = 0, last_work = 0;
  printf("t,reads,tlb,dev_bytes,cpuwork,mem_bytes\n");
  for (int k = 1; k <= (int)(seconds + 0.5); k++) {
    double next = start + k, d = next - now();
    if (d > 0) usleep((useconds_t)(d * 1e6));
    uint64_t reads = 0;
    for (int i = 0; i < threads; i++) reads += atomic_load(&counts[i][0]);
    uint64_t tl = tlb(), dv = dev_bytes(ma, mi), w = atomic_load(&cpu_work);
    printf("%.3f,%llu,%llu,%llu,%llu,%llu\n", now() - start, (unsigned long long)(reads - last_reads),
           (unsigned long long)(tl - last_tlb), (unsigned long long)(dv - last_dev),
           (unsigned long long)(w - last_work), (unsigned long long)mem_usage(cg));
    fflush(stdout);
    last_reads = reads; last_tlb = tl; last_dev = dv; last_work = w;
  }
  atomic_store(&stop, 1);
  for (int i = 0; i <= threads; i++) pthread_join(t[i], 0);
  return 0;
}
