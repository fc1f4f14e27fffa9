/* SPDX-License-Identifier: Apache-2.0 */
/* The edges of a run, for the end-of-run verdict (tests/integration/test_edges.c).
 *
 *   rt_edges release STEPS LEAK STEP_US MARKS TAIL_MS
 *       STEPS steps of STEP_US microseconds, each leaking LEAK bytes from
 *       leak_kept() (a step mark at each step's end when MARKS is 1); then
 *       everything is freed (the leak, the weights: a teardown) and the job
 *       works TAIL_MS milliseconds more (transients only, no marks).
 *   rt_edges unmarked STEPS PHASE_STEPS LEAK STEP_US
 *       STEPS marked steps without a leak, then PHASE_STEPS steps that make
 *       no step mark (a validation loop: no optimizer step) and keep LEAK
 *       bytes each from leak_unmarked(), STEP_US microseconds apart.
 *   rt_edges idletail STEPS LEAK STEP_US TAIL_MS
 *       STEPS marked steps of STEP_US microseconds, each leaking LEAK bytes
 *       from leak_kept(); then TAIL_MS milliseconds of work without marks
 *       (saving a checkpoint), nothing freed.
 *   rt_edges slowstart STEPS LEAK STEP_US SLOW_STEPS SLOW_US
 *       STEPS marked steps, each leaking LEAK bytes from leak_kept(); the
 *       first SLOW_STEPS take SLOW_US microseconds (start-up: compiling,
 *       caches), the others STEP_US.
 *   rt_edges tie
 *       two sites holding 1 MiB each at exit, no growth: hold_churned() made
 *       eleven allocations (ten freed), then hold_first() one; a tie in live
 *       bytes that the bytes allocated break.
 *   rt_edges busyexit STEPS LEAK
 *       STEPS marked steps, each leaking LEAK bytes from leak_kept(); then a
 *       thread that goes on marking steps and taking and giving back 64 MiB
 *       (free memory moves) while main returns: the exit report and the exit
 *       summary are written while the job still steps.
 *   rt_edges promwait STEPS LEAK
 *       STEPS marked steps, each leaking LEAK bytes from leak_kept(); then
 *       waits (60 s at most) until the Prometheus textfile
 *       (LEAKWATCH_PROMETHEUS) says "leakwatch_leak 1", copies that text to
 *       the textfile's path + ".mid" and exits: what a scrape sees while
 *       the job runs, before the live warning is due.
 * Pauses (STEP_US, TAIL_MS) move leakwatch's test clock instead of sleeping
 * when the test sets LEAKWATCH_TEST_CLOCK=1 (test_clock.h). */
#include "paths.h"
#include "test_clock.h"

#include <errno.h>
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

#define MiB (1024u * 1024u)

static void mark_step(void) {
    static void (*step)(void);
    static int looked;
    if (!looked) {
        step = (void (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_step");
        looked = 1;
    }
    if (step) step();
}

static void wait_until(struct timespec *next, long us) {
    if (test_clock_advance_us(us)) return;
    next->tv_nsec += us * 1000;
    while (next->tv_nsec >= 1000000000L)
        next->tv_sec++, next->tv_nsec -= 1000000000L;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL);
}

/* A step's own time, after however long the step took: a job that is
 * descheduled falls behind and stays behind, as a training loop does,
 * instead of catching up in a burst of short steps (wait_until's schedule),
 * which no measure of the pace over a few steps can see through. */
static void sleep_us(long us) {
    pass_us(us);
}

static double now_ms(void) {
    return job_now_ms();
}

NOINLINE static void transients(void) {
    void *act[4];
    for (int i = 0; i < 4; i++)
        CHECK(cudaMalloc(&act[i], MiB));
    for (int i = 3; i >= 0; i--)
        CHECK(cudaFree(act[i]));
}

NOINLINE static void leak_kept(void **kept, long i, size_t bytes) {
    CHECK(cudaMalloc(&kept[i], bytes));
}

NOINLINE static void leak_unmarked(void **kept, long i, size_t bytes) {
    if (bytes) CHECK(cudaMalloc(&kept[i], bytes));
}

static int release(int argc, char **argv) {
    long steps = arg_long(argc, argv, 2, 300), leak = arg_long(argc, argv, 3, 4096),
         step_us = arg_long(argc, argv, 4, 2000), marks = arg_long(argc, argv, 5, 0),
         tail_ms = arg_long(argc, argv, 6, 250);
    void *weights;
    CHECK(cudaMalloc(&weights, 8 * MiB));
    void **kept = calloc((size_t)steps, sizeof *kept);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < steps; i++) {
        transients();
        leak_kept(kept, i, (size_t)leak);
        if (marks) mark_step();
        wait_until(&next, step_us);
    }
    /* The teardown: everything goes back. */
    for (long i = 0; i < steps; i++)
        CHECK(cudaFree(kept[i]));
    CHECK(cudaFree(weights));
    free(kept);
    double end = now_ms() + (double)tail_ms;
    while (now_ms() < end) {
        transients();
        wait_until(&next, step_us);
    }
    printf("released after %ld steps\n", steps);
    return 0;
}

static int unmarked(int argc, char **argv) {
    long steps = arg_long(argc, argv, 2, 200), phase = arg_long(argc, argv, 3, 600),
         leak = arg_long(argc, argv, 4, 65536), step_us = arg_long(argc, argv, 5, 2000);
    void *weights;
    CHECK(cudaMalloc(&weights, 8 * MiB));
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < steps; i++) {
        transients();
        mark_step();
        wait_until(&next, step_us);
    }
    void **kept = calloc((size_t)phase, sizeof *kept);
    for (long i = 0; i < phase; i++) {
        transients();
        leak_unmarked(kept, i, (size_t)leak);
        wait_until(&next, step_us);
    }
    printf("validated %ld batches without a step mark\n", phase);
    return 0;
}

static int idletail(int argc, char **argv) {
    long steps = arg_long(argc, argv, 2, 600), leak = arg_long(argc, argv, 3, 4096),
         step_us = arg_long(argc, argv, 4, 2000), tail_ms = arg_long(argc, argv, 5, 1000);
    void **kept = calloc((size_t)steps, sizeof *kept);
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < steps; i++) {
        transients();
        leak_kept(kept, i, (size_t)leak);
        mark_step();
        wait_until(&next, step_us);
    }
    double end = now_ms() + (double)tail_ms;
    while (now_ms() < end) {
        transients();
        wait_until(&next, step_us);
    }
    printf("idle for %ld ms after %ld steps\n", tail_ms, steps);
    return 0;
}

static int slowstart(int argc, char **argv) {
    long steps = arg_long(argc, argv, 2, 1500), leak = arg_long(argc, argv, 3, 4096),
         step_us = arg_long(argc, argv, 4, 2000), slow = arg_long(argc, argv, 5, 20),
         slow_us = arg_long(argc, argv, 6, 50000);
    void **kept = calloc((size_t)steps, sizeof *kept);
    for (long i = 0; i < steps; i++) {
        transients();
        leak_kept(kept, i, (size_t)leak);
        mark_step();
        sleep_us(i < slow ? slow_us : step_us);
    }
    printf("%ld steps, the first %ld slow\n", steps, slow);
    return 0;
}

NOINLINE static void *hold_first(void) {
    void *p;
    CHECK(cudaMalloc(&p, MiB));
    return p;
}

NOINLINE static void *hold_churned(void) {
    void *p;
    CHECK(cudaMalloc(&p, MiB));
    return p;
}

static int tie(void) {
    void *b = NULL;
    for (int i = 0; i < 11; i++) {
        if (b) CHECK(cudaFree(b));
        b = hold_churned();
        mark_step();
    }
    void *a = hold_first();
    mark_step();
    printf("holding %p and %p\n", a, b);
    return 0;
}

static void *keep_stepping(void *arg) {
    (void)arg;
    for (;;) {
        void *p;
        CHECK(cudaMalloc(&p, 64 * MiB));
        mark_step();
        CHECK(cudaFree(p));
    }
    return NULL;
}

static int busyexit(int argc, char **argv) {
    long steps = arg_long(argc, argv, 2, 400), leak = arg_long(argc, argv, 3, 4096);
    void **kept = calloc((size_t)steps, sizeof *kept);
    for (long i = 0; i < steps; i++) {
        transients();
        leak_kept(kept, i, (size_t)leak);
        mark_step();
    }
    pthread_t t;
    if (pthread_create(&t, NULL, keep_stepping, NULL) != 0) return 1;
    printf("exiting after %ld steps, still stepping\n", steps);
    fflush(stdout);
    return 0;
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

static int promwait(int argc, char **argv) {
    long steps = arg_long(argc, argv, 2, 40), leak = arg_long(argc, argv, 3, 4096);
    const char *prom = getenv("LEAKWATCH_PROMETHEUS");
    if (!prom) return 2;
    void **kept = calloc((size_t)steps, sizeof *kept);
    for (long i = 0; i < steps; i++) {
        transients();
        leak_kept(kept, i, (size_t)leak);
        mark_step();
    }
    /* A bound on the wait for the worker, on the wall clock. */
    time_t end = time(NULL) + 60;
    const char *text = NULL;
    while (time(NULL) < end) {
        text = slurp(prom);
        /* The metric's line, not its HELP text ("leakwatch_leak 1 when ..."). */
        if (text && strstr(text, "\nleakwatch_leak 1\n")) break;
        text = NULL;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!text) {
        fprintf(stderr, "promwait: no leak verdict in %s\n", prom);
        return 1;
    }
    char mid[4096];
    snprintf(mid, sizeof mid, "%s.mid", prom);
    FILE *f = fopen(mid, "w");
    if (!f) return 1;
    fputs(text, f);
    fclose(f);
    printf("%ld steps; the textfile said leak\n", steps);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "release")) return release(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "unmarked")) return unmarked(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "idletail")) return idletail(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "slowstart")) return slowstart(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "tie")) return tie();
    if (argc > 1 && !strcmp(argv[1], "busyexit")) return busyexit(argc, argv);
    if (argc > 1 && !strcmp(argv[1], "promwait")) return promwait(argc, argv);
    fprintf(
        stderr,
        "usage: rt_edges release|unmarked|idletail|slowstart|tie|busyexit|promwait ... (see the "
        "comment at the top)\n");
    return 2;
}
