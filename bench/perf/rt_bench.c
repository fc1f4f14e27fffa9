/* SPDX-License-Identifier: Apache-2.0 */
/* Speed and memory benchmark workloads for leakwatch, on the CPU stand-ins.
 * Run by scripts/bench.sh, with and without the shim preloaded; each run
 * prints one line starting with "RESULT" (key=value pairs).
 *
 *   rt_bench -m MODE [-t THREADS] [-f FRAMES] [-n PAIRS] [-w WARMUP] [-s SIZE] [-k THINK]
 *            [-a SITES] [-r REPORTS] [-D DUMPERS]
 *
 * MODE
 *   malloc  cudaMalloc / cudaFree pairs
 *   async   cudaMallocAsync_ptsz / cudaFreeAsync_ptsz pairs (PyTorch's
 *           per-tensor mode)
 *   host    host malloc / free pairs, the same loop shape (the heaptrack
 *           yardstick)
 *   live    PAIRS cudaMalloc allocations kept live: prints the resident
 *           memory they added (VmRSS), then asks the shim for a report
 *   sites   PAIRS allocations from PAIRS distinct call stacks, kept live,
 *           then times leakwatch_dump() (found with dlsym): REPORTS (-r)
 *           of them, the first apart from the later ones; with -D DUMPERS,
 *           that many threads dump REPORTS times each at once while a
 *           reader checks every read of the file is whole JSON
 *   alternate  cudaMalloc / cudaFree pairs from SITES (-a, default 64)
 *           distinct call stacks in turn, all at the same stack depth: the
 *           worst case for a cache of recently seen stacks
 *
 * Each thread recurses until its call stack is FRAMES deep (counted with
 * libunwind's unw_backtrace() at the allocating call, as the shim counts the
 * frames below its own), runs WARMUP pairs, waits for the other
 * threads, then times PAIRS pairs. THINK (default 0) is a busy loop of that
 * many iterations after each pair: other work between allocations, as in a
 * real program, so that threads rarely meet on the stand-in driver's one lock
 * and the shim's own sharing between threads is what shows.
 *
 * Printed per run: ns_per_pair, the wall time of the timed section (first
 * thread's start to last thread's end) times the cores in use (min(THREADS,
 * online CPUs)) over all pairs, so that it stays the cost of one pair when
 * threads share the cores; cpu_ns_per_pair, the timed sections' thread CPU
 * time over all pairs (blind to time spent asleep on a lock, and to other
 * processes on the machine); parallel, that CPU time over the wall time: the
 * cores the run really had (below min(THREADS, CPUs) when other processes
 * took some, and then threads met less on shared cache lines). */
#include <leakwatch/cuda_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);
cudaError_t cudaMallocAsync_ptsz(void **p, size_t s, cudaStream_t st);
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t st);

#define NOINLINE __attribute__((noinline))
/* Keeps the compiler from removing a malloc/free pair or a call's frame. */
#define ESCAPE(p) __asm__ volatile("" : : "r"(p) : "memory")

enum mode { M_MALLOC, M_ASYNC, M_HOST, M_LIVE, M_SITES, M_ALTERNATE };
static const char *const mode_names[] = {"malloc", "async", "host", "live", "sites", "alternate"};

static enum mode mode = M_MALLOC;
static int nthreads = 1, frames = 32;
static long pairs = 200000, warmup = 2000, think = 0, alt_sites = 64;
static size_t size = 4096;
static pthread_barrier_t start_barrier;

typedef struct {
    int depth;                       /* recursion levels to add */
    int measured;                    /* frames seen at the allocating call */
    double wall0, wall1, cpu0, cpu1; /* the timed section, in this thread */
} job;

static void die(const char *what, int rc) {
    fprintf(stderr, "rt_bench: %s failed (%d)\n", what, rc);
    exit(2);
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        int rc_ = (int)(call);                                                                     \
        if (rc_ != 0) die(#call, rc_);                                                             \
    } while (0)

static double now_ns(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long vm_rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* Frames below (and including) the caller, counted as the shim counts them. */
NOINLINE static int stack_depth(void) {
    void *buf[512];
    return unw_backtrace(buf, 512) - 1; /* not this function */
}

/* ---- the timed loops: one call site each for the allocation and the free ---- */

NOINLINE static void pair_loop(job *j) {
    j->measured = stack_depth();
    for (long i = 0; i < warmup + pairs; i++) {
        if (i == warmup) {
            pthread_barrier_wait(&start_barrier);
            j->wall0 = now_ns(CLOCK_MONOTONIC);
            j->cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        }
        void *p = NULL;
        switch (mode) {
        case M_MALLOC:
            CHECK(cudaMalloc(&p, size));
            CHECK(cudaFree(p));
            break;
        case M_ASYNC:
            CHECK(cudaMallocAsync_ptsz(&p, size, NULL));
            CHECK(cudaFreeAsync_ptsz(p, NULL));
            break;
        default:
            p = malloc(size);
            ESCAPE(p);
            free(p);
            break;
        }
        for (long k = 0; k < think; k++)
            ESCAPE(k);
    }
    j->cpu1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    j->wall1 = now_ns(CLOCK_MONOTONIC);
}

/* live: PAIRS allocations kept, at one call site. */
NOINLINE static void live_loop(job *j) {
    j->measured = stack_depth();
    void **ptrs = calloc((size_t)pairs, sizeof *ptrs);
    if (!ptrs) die("calloc", 0);
    memset(ptrs, 1, (size_t)pairs * sizeof *ptrs); /* resident before we measure */
    void *p;
    CHECK(cudaMalloc(&p, size)); /* runtime and shim started, site made */
    CHECK(cudaFree(p));
    long before = vm_rss_bytes();
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < pairs; i++)
        CHECK(cudaMalloc(&ptrs[i], size));
    double t1 = now_ns(CLOCK_MONOTONIC);
    long after = vm_rss_bytes();
    printf("RESULT mode=live allocs=%ld frames=%d rss_delta_bytes=%ld rss_bytes_per_alloc=%.1f "
           "ns_per_alloc=%.1f\n",
           pairs, j->measured, after - before, (double)(after - before) / (double)pairs,
           (t1 - t0) / (double)pairs);
    fflush(stdout);
    /* The report (tracker.*) is written now, with every allocation live;
     * _exit skips the exit handler's second one. */
    void (*dump)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_dump");
    if (dump) dump();
    _exit(0);
}

/* ---- sites: distinct call stacks ----
 * Three levels of 48 functions each: every path l1_a -> l2_b -> l3_c ->
 * site_alloc is a different call stack (48^3 = 110592 of them). The functions
 * differ (r + K), so the compiler cannot fold them into one. */
#define WAYS 48
/* clang-format off */
#define EACH(X)                                                                                    \
    X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)          \
    X(16) X(17) X(18) X(19) X(20) X(21) X(22) X(23) X(24) X(25) X(26) X(27) X(28) X(29) X(30)      \
    X(31) X(32) X(33) X(34) X(35) X(36) X(37) X(38) X(39) X(40) X(41) X(42) X(43) X(44) X(45)      \
    X(46) X(47)
/* clang-format on */

NOINLINE static long site_alloc(long code) {
    void *p = NULL;
    CHECK(cudaMalloc(&p, 512 * (size_t)(1 + code % 7)));
    ESCAPE(p);
    if (mode == M_ALTERNATE) CHECK(cudaFree(p));
    return 1;
}

typedef long (*level_fn)(long);
#define LEVEL(L, NEXT)                                                                             \
    EACH(L##_FN)                                                                                   \
    static const level_fn L##_fns[WAYS] = {EACH(L##_REF)};
#define REF(L, K) L##_##K,
#define FN(L, K, NEXT)                                                                             \
    NOINLINE static long L##_##K(long code) {                                                      \
        long r = NEXT(code);                                                                       \
        ESCAPE(r); /* not a tail call */                                                           \
        return r + K;                                                                              \
    }

#define l3_FN(K) FN(l3, K, site_alloc)
#define l3_REF(K) REF(l3, K)
LEVEL(l3, site_alloc)
static long to_l3(long code) {
    return l3_fns[code % WAYS](code);
}
#define l2_FN(K) FN(l2, K, to_l3)
#define l2_REF(K) REF(l2, K)
LEVEL(l2, to_l3)
static long to_l2(long code) {
    return l2_fns[code / WAYS % WAYS](code);
}
#define l1_FN(K) FN(l1, K, to_l2)
#define l1_REF(K) REF(l1, K)
LEVEL(l1, to_l2)
static long to_l1(long code) {
    return l1_fns[code / (WAYS * WAYS) % WAYS](code);
}

/* sites -r REPORTS: that many leakwatch_dump() calls in a row, the first
 * timed apart from the later ones (their median); then the same bytes
 * written to a file of our own (write, fsync, rename: what the I/O alone
 * costs). sites -D DUMPERS: that many threads call leakwatch_dump() REPORTS
 * times each at once, while another thread reads the report file over and
 * over and checks that every read is a whole JSON document. */
static long reports = 1, dumpers = 0;
static void (*dump_fn)(void);
static _Atomic int dumping_done;
static long reads, bad_reads;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A whole JSON document: one value, brackets balanced outside strings. */
static int whole_json(const char *s, size_t n) {
    int depth = 0, in_str = 0, seen = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
            continue;
        }
        if (c == '"')
            in_str = 1;
        else if (c == '{' || c == '[')
            depth++, seen = 1;
        else if (c == '}' || c == ']') {
            if (--depth < 0) return 0;
        } else if (c != ' ' && c != '\n' && c != '\t' && depth == 0)
            return 0;
    }
    return seen && depth == 0 && !in_str;
}

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    size_t cap = 1 << 20, len = 0;
    char *b = malloc(cap);
    size_t r;
    while (b && (r = fread(b + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    *n = len;
    return b;
}

static void *reader_main(void *arg) {
    const char *path = arg;
    while (!atomic_load(&dumping_done)) {
        size_t n = 0;
        char *b = slurp(path, &n);
        if (b) {
            reads++;
            if (!whole_json(b, n)) bad_reads++;
            free(b);
        }
    }
    return NULL;
}

static void *dumper_main(void *arg) {
    for (long i = 0; i < reports; i++)
        dump_fn();
    return NULL;
}

/* The report's bytes written again by plain stdio: the I/O floor. */
static double io_ms(const char *path) {
    size_t n = 0;
    char *b = path ? slurp(path, &n) : NULL;
    if (!b) return 0;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.io-floor", path);
    double t0 = now_ns(CLOCK_MONOTONIC);
    FILE *f = fopen(tmp, "w");
    if (f) {
        fwrite(b, 1, n, f);
        fflush(f);
        fsync(fileno(f));
        fclose(f);
        rename(tmp, tmp); /* the atomic writer's rename, in kind */
    }
    double t1 = now_ns(CLOCK_MONOTONIC);
    unlink(tmp);
    free(b);
    return (t1 - t0) / 1e6;
}

NOINLINE static void sites_loop(job *j) {
    j->measured = stack_depth() + 4; /* l1_a, l2_b, l3_c, site_alloc */
    if (pairs > (long)WAYS * WAYS * WAYS) pairs = (long)WAYS * WAYS * WAYS;
    double t0 = now_ns(CLOCK_MONOTONIC);
    for (long i = 0; i < pairs; i++)
        to_l1(i);
    double t1 = now_ns(CLOCK_MONOTONIC);
    dump_fn = (void (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_dump");
    const char *path = getenv("LEAKWATCH_REPORT");
    if (dumpers > 0) {
        if (!dump_fn || !path) die("leakwatch_dump and LEAKWATCH_REPORT (for -D)", 0);
        pthread_t rd, *th = calloc((size_t)dumpers, sizeof *th);
        dump_fn(); /* the file exists before the reader starts */
        double c0 = now_ns(CLOCK_MONOTONIC);
        CHECK(pthread_create(&rd, NULL, reader_main, (void *)path));
        for (long i = 0; i < dumpers; i++)
            CHECK(pthread_create(&th[i], NULL, dumper_main, NULL));
        for (long i = 0; i < dumpers; i++)
            CHECK(pthread_join(th[i], NULL));
        double c1 = now_ns(CLOCK_MONOTONIC);
        atomic_store(&dumping_done, 1);
        CHECK(pthread_join(rd, NULL));
        printf("RESULT mode=sites stacks=%ld dumpers=%ld reports=%ld concurrent_s=%.3f "
               "ms_per_dump=%.2f reads=%ld bad_reads=%ld\n",
               pairs, dumpers, reports, (c1 - c0) / 1e9,
               (c1 - c0) / 1e6 / (double)(dumpers * reports), reads, bad_reads);
        fflush(stdout);
        _exit(0);
    }
    double first = 0, first_cpu = 0, *later = calloc((size_t)reports, sizeof *later),
           *later_cpu = calloc((size_t)reports, sizeof *later_cpu);
    for (long r = 0; r < reports && dump_fn; r++) {
        double d0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        dump_fn();
        double d1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
        if (r == 0)
            first = (d1 - d0) / 1e6, first_cpu = (c1 - c0) / 1e6;
        else
            later[r - 1] = (d1 - d0) / 1e6, later_cpu[r - 1] = (c1 - c0) / 1e6;
    }
    long nl = reports - 1;
    qsort(later, (size_t)nl, sizeof *later, cmp_double);
    qsort(later_cpu, (size_t)nl, sizeof *later_cpu, cmp_double);
    printf("RESULT mode=sites stacks=%ld frames=%d ns_per_new_site=%.1f dump_ms=%.2f "
           "dump_cpu_ms=%.2f later_ms=%.2f later_cpu_ms=%.2f io_ms=%.2f shim=%d\n",
           pairs, j->measured, (t1 - t0) / (double)pairs, first, first_cpu,
           nl > 0 ? later[nl / 2] : 0, nl > 0 ? later_cpu[nl / 2] : 0, dump_fn ? io_ms(path) : 0,
           dump_fn != NULL);
    fflush(stdout);
    _exit(0); /* no second report from the exit handler */
}

/* alternate: pairs from alt_sites call stacks in turn (the l1/l2/l3 paths
 * above: same depth, same frame sizes, different return addresses). The
 * stacks are spread over the three levels. */
NOINLINE static void alternate_loop(job *j) {
    j->measured = stack_depth() + 4;
    long spread = WAYS * WAYS + WAYS + 1; /* a different function at every level */
    for (long i = 0; i < warmup + pairs; i++) {
        if (i == warmup) {
            pthread_barrier_wait(&start_barrier);
            j->wall0 = now_ns(CLOCK_MONOTONIC);
            j->cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        }
        to_l1((i % alt_sites) * spread);
    }
    j->cpu1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    j->wall1 = now_ns(CLOCK_MONOTONIC);
}

/* ---- recursion to the chosen depth ---- */

NOINLINE static void probe_loop(job *j) {
    j->measured = stack_depth();
}

NOINLINE static long recurse(int depth, job *j) {
    if (depth > 0) {
        long r = recurse(depth - 1, j);
        ESCAPE(j); /* not a tail call: each level keeps its frame */
        return r + 1;
    }
    if (j->depth < 0)
        probe_loop(j); /* stands where the loop function will */
    else if (mode == M_LIVE)
        live_loop(j);
    else if (mode == M_SITES)
        sites_loop(j);
    else if (mode == M_ALTERNATE)
        alternate_loop(j);
    else
        pair_loop(j);
    return 0;
}

static void *thread_main(void *arg) {
    job *j = arg;
    /* Find the recursion depth that puts the allocating call FRAMES deep, by
     * probing from where the loop function will stand. */
    int depth = 0;
    for (int tries = 0; tries < 4; tries++) {
        job probe = {.depth = -1};
        recurse(depth, &probe);
        if (probe.measured == frames) break;
        depth += frames - probe.measured;
        if (depth < 0) {
            depth = 0;
            break;
        }
    }
    j->depth = depth;
    recurse(j->depth, j);
    return NULL;
}

static void usage(void) {
    fprintf(stderr, "usage: rt_bench -m malloc|async|host|live|sites|alternate [-t THREADS] "
                    "[-f FRAMES] [-n PAIRS] [-w WARMUP] [-s SIZE] [-k THINK] [-a SITES] "
                    "[-r REPORTS] [-D DUMPERS]\n");
    exit(2);
}

int main(int argc, char **argv) {
    int opt;
    while ((opt = getopt(argc, argv, "m:t:f:n:w:s:k:a:r:D:")) != -1) {
        switch (opt) {
        case 'm': {
            int found = 0;
            for (int i = 0; i < (int)(sizeof mode_names / sizeof *mode_names); i++)
                if (!strcmp(optarg, mode_names[i])) mode = (enum mode)i, found = 1;
            if (!found) usage();
            break;
        }
        case 't':
            nthreads = atoi(optarg);
            break;
        case 'f':
            frames = atoi(optarg);
            break;
        case 'n':
            pairs = atol(optarg);
            break;
        case 'w':
            warmup = atol(optarg);
            break;
        case 's':
            size = (size_t)atol(optarg);
            break;
        case 'k':
            think = atol(optarg);
            break;
        case 'a':
            alt_sites = atol(optarg);
            break;
        case 'r':
            reports = atol(optarg);
            break;
        case 'D':
            dumpers = atol(optarg);
            break;
        default:
            usage();
        }
    }
    if (nthreads < 1 || pairs < 1 || warmup < 0 || size < 1 || think < 0 || alt_sites < 1 ||
        alt_sites > WAYS * WAYS * WAYS || reports < 1 || dumpers < 0)
        usage();
    if (mode == M_LIVE || mode == M_SITES) nthreads = 1;
    if (mode != M_HOST) CHECK(cudaFree(NULL)); /* start the runtime outside the timing */

    CHECK(pthread_barrier_init(&start_barrier, NULL, (unsigned)nthreads + 1));
    job *jobs = calloc((size_t)nthreads, sizeof *jobs);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    if (!jobs || !tids) die("calloc", 0);
    for (int i = 0; i < nthreads; i++)
        CHECK(pthread_create(&tids[i], NULL, thread_main, &jobs[i]));
    if (mode == M_LIVE || mode == M_SITES) {
        CHECK(pthread_join(tids[0], NULL));
        return 0;
    }
    pthread_barrier_wait(&start_barrier);
    for (int i = 0; i < nthreads; i++)
        CHECK(pthread_join(tids[i], NULL));
    /* From the first thread's start to the last one's end; CPU summed. */
    double w0 = jobs[0].wall0, w1 = jobs[0].wall1, cpu = 0;
    for (int i = 0; i < nthreads; i++) {
        if (jobs[i].wall0 < w0) w0 = jobs[i].wall0;
        if (jobs[i].wall1 > w1) w1 = jobs[i].wall1;
        cpu += jobs[i].cpu1 - jobs[i].cpu0;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int cores = nthreads < ncpu ? nthreads : (int)ncpu;
    double total = (double)pairs * nthreads;
    printf("RESULT mode=%s threads=%d frames=%d pairs=%ld ns_per_pair=%.1f cpu_ns_per_pair=%.1f "
           "parallel=%.2f\n",
           mode_names[mode], nthreads, jobs[0].measured, pairs, (w1 - w0) * cores / total,
           cpu / total, w1 > w0 ? cpu / (w1 - w0) : 0);
    return 0;
}
