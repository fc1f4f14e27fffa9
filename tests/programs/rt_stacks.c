/* SPDX-License-Identifier: Apache-2.0 */
/* Call stacks written to defeat a cache of known stacks (docs/stacks.md):
 * run under LEAKWATCH_VERIFY_STACKS=1, every stack leakwatch records must be
 * the one a full unwind finds (tracker.stack_mismatches == 0), and every
 * allocation must land on its own call site.
 *
 *   rt_stacks SCENARIO [ROUNDS]
 *
 * SCENARIO: recursion, alloca, longjmp, signals, threads, samedepth,
 * optimised, dlclose, samedepth_nofp, or all. Each leaks a known number of bytes from functions
 * named leak_* (the test reads them back from the report) and frees
 * everything else. */
#include "safety.h"

#include <alloca.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/time.h>
#include <unistd.h>

/* Keeps a frame (no tail call, no folding) and a value alive. */
#define KEEP(x) __asm__ volatile("" : : "r"(x) : "memory")

static void *keep[1 << 16];
static int nkeep;

/* Allocates and frees; every 8th call leaks `leak` bytes (kept live). */
NOINLINE static void churn(size_t size, size_t leak, int i) {
    void *p = NULL;
    CHECK(cudaMalloc(&p, size));
    if (leak && i % 8 == 0 && nkeep < (int)(sizeof keep / sizeof *keep)) {
        keep[nkeep++] = p;
        return;
    }
    CHECK(cudaFree(p));
}

/* ---- recursion of varying depth ---- */
NOINLINE static void leak_recursion(int i) {
    churn(1000, 1000, i);
}
NOINLINE static int rec(int depth, int i) {
    if (depth == 0) {
        leak_recursion(i);
        return 0;
    }
    int r = rec(depth - 1, i);
    KEEP(depth);
    return r + 1;
}
static void recursion(long rounds) {
    for (long i = 0; i < rounds; i++) {
        /* depths in a scrambled order, revisiting old ones */
        rec((int)((i * 7919) % 61), (int)i);
        rec((int)(i % 3), (int)i);
    }
}

/* ---- alloca of varying size in a caller ----
 * outer's alloca and inner's add up to the same total, so the allocating
 * call happens at the same stack pointer while the frames in between move.
 * In the second part two different callers (reached through one call site)
 * take turns, and the alloca'd memory is never written: the words the
 * previous stack left there are still in place, where that stack had its
 * frames. Only the saved frame pointers show that inner's frame moved. */
NOINLINE static void leak_alloca(int i) {
    churn(2000, 2000, i);
}
NOINLINE static void inner(size_t b, int i) {
    char *q = alloca(b);
    memset(q, 0x5a, b);
    KEEP(q);
    leak_alloca(i);
    KEEP(q);
}
NOINLINE static void outer(size_t a, size_t total, int i) {
    char *p = alloca(a);
    memset(p, 0xa5, a);
    KEEP(p);
    inner(total - a, i);
    KEEP(p);
}
NOINLINE static void leak_stale(int i) {
    churn(2100, 2100, i);
}
NOINLINE static void inner_stale(size_t b, int i) {
    char *q = alloca(b);
    KEEP(q);
    leak_stale(i);
    KEEP(q);
}
NOINLINE static void outer_x(size_t a, int i) {
    char *p = alloca(a);
    KEEP(p);
    inner_stale(4096 - a, i);
    KEEP(p);
}
NOINLINE static void outer_y(size_t a, int i) {
    char *p = alloca(a);
    KEEP(p);
    inner_stale(4096 - a, i);
    KEEP(p);
}
static void (*const outers[2])(size_t, int) = {outer_x, outer_y};
NOINLINE static void stale(int which, size_t a, int i) {
    outers[which](a, i);
    KEEP(which);
}
static void alloca_sizes(long rounds) {
    for (long i = 0; i < rounds; i++) {
        size_t a = 16 * (size_t)((i * 37) % 64);
        outer(a, 2048, (int)i);
        outer(16 * (size_t)(i % 5), 1024 + 16 * (size_t)(i % 7), (int)i);
    }
    /* x with a small alloca, then y with a large one, and back; nothing in
     * between writes over what they leave */
    for (long i = 0; i < rounds; i++)
        stale((int)(i & 1), (i & 1) ? 2048 : 0, (int)(i & ~1L) * 4);
}

/* ---- longjmp out of a deep call ---- */
static jmp_buf jump;
NOINLINE static void leak_longjmp(int i) {
    churn(3000, 3000, i);
}
NOINLINE static int dive(int depth, int stop, int i) {
    leak_longjmp(i);
    if (depth >= stop) longjmp(jump, 1);
    int r = depth < 64 ? dive(depth + 1, stop, i) : 0;
    KEEP(r);
    return r;
}
static void longjmps(long rounds) {
    for (long i = 0; i < rounds; i++) {
        if (setjmp(jump) == 0) dive(0, (int)((i * 13) % 40), (int)i);
        /* the same site again, from the frames the jump left */
        leak_longjmp((int)i);
        rec((int)(i % 9), (int)i);
    }
}

/* ---- signals arriving during allocation ----
 * The handler scribbles below the interrupted stack pointer (return
 * addresses of functions that exist), half the time on an alternate stack. */
static volatile sig_atomic_t signals_seen;
NOINLINE static void scribble(int depth) {
    uintptr_t junk[64];
    for (int k = 0; k < 64; k++)
        junk[k] = (uintptr_t)&leak_recursion + (uintptr_t)k;
    KEEP(junk);
    if (depth > 0) scribble(depth - 1);
}
static void on_alarm(int sig) {
    (void)sig;
    signals_seen++;
    scribble(signals_seen % 4);
}
NOINLINE static void leak_signals(int i) {
    churn(4000, 4000, i);
}
static void signals(long rounds) {
    static char alt[1 << 16];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt, .ss_flags = 0};
    CHECK(sigaltstack(&ss, NULL));
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    CHECK(sigaction(SIGALRM, &sa, NULL));
    sa.sa_flags = SA_ONSTACK;
    CHECK(sigaction(SIGPROF, &sa, NULL));
    struct itimerval it = {{0, 50}, {0, 50}};
    CHECK(setitimer(ITIMER_REAL, &it, NULL));
    CHECK(setitimer(ITIMER_PROF, &it, NULL));
    for (long i = 0; i < rounds * 4; i++) {
        leak_signals((int)i);
        rec((int)(i % 17), (int)i);
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    setitimer(ITIMER_PROF, &off, NULL);
}

/* ---- threads exiting, new ones reusing their stacks ---- */
NOINLINE static void leak_threads(int i) {
    churn(5000, 5000, i);
}
static pthread_mutex_t keep_lock = PTHREAD_MUTEX_INITIALIZER;
NOINLINE static void thread_rec(int depth, int i) {
    if (depth == 0) {
        pthread_mutex_lock(&keep_lock);
        leak_threads(i);
        pthread_mutex_unlock(&keep_lock);
        return;
    }
    thread_rec(depth - 1, i);
    KEEP(depth);
}
static void *thread_body(void *arg) {
    long t = (long)arg;
    for (int i = 0; i < 24; i++)
        thread_rec((int)((t * 5 + i) % 23), i);
    return NULL;
}
static void threads(long rounds) {
    for (long t = 0; t < rounds / 4 + 2; t++) {
        pthread_t a, b;
        CHECK(pthread_create(&a, NULL, thread_body, (void *)t));
        CHECK(pthread_create(&b, NULL, thread_body, (void *)(t + 1000)));
        CHECK(pthread_join(a, NULL));
        CHECK(pthread_join(b, NULL));
    }
}

/* ---- another function at the same depth, called from the same place ----
 * leak_same_a, leak_same_b and leak_same_c have the same frame layout and
 * are called through one pointer from one call site: the same return
 * address in the caller, the same stack pointer at the allocation. */
NOINLINE static void leak_same_a(int i) {
    churn(6001, 6001, i);
}
NOINLINE static void leak_same_b(int i) {
    churn(6002, 6002, i);
}
NOINLINE static void leak_same_c(int i) {
    churn(6003, 6003, i);
}
static void (*const same_fns[3])(int) = {leak_same_a, leak_same_b, leak_same_c};
NOINLINE static void call_same(int which, int i) {
    same_fns[which](i);
    KEEP(which);
}
static void samedepth(long rounds) {
    for (long i = 0; i < rounds * 3; i++)
        call_same((int)((i * 7) % 3), (int)(i / 3) * 8); /* every call leaks */
}

/* ---- frames without a frame pointer (CFA from the stack pointer) ---- */
#define OPT __attribute__((noinline, optimize("O2", "omit-frame-pointer")))
OPT static void leak_optimised(int i) {
    churn(7000, 7000, i);
}
OPT static int orec(int depth, int i, volatile char *sink) {
    char buf[40];
    buf[depth % 40] = (char)depth;
    *sink = buf[(depth * 3) % 40];
    if (depth == 0) {
        leak_optimised(i);
        return 0;
    }
    int r = orec(depth - 1, i, sink);
    KEEP(r);
    return r + 1;
}
OPT static void optimised(long rounds) {
    volatile char sink;
    for (long i = 0; i < rounds; i++) {
        orec((int)((i * 31) % 45), (int)i, &sink);
        /* an alloca frame over frames without a frame pointer */
        outer(16 * (size_t)(i % 9), 512, (int)i);
    }
}

/* ---- another function at the same depth, told apart by one word ----
 * As samedepth, through frames without a frame pointer: leak_nofp_a, _b and
 * _c call one function, nofp_common, that calls churn. Only nofp_common's
 * return address differs, in a frame whose saved-register slot is no saved
 * frame pointer: a stack told apart by a check of one word, not of a pair. */
OPT static void nofp_common(size_t size, int i) {
    churn(size, size, i);
    KEEP(i);
}
OPT static void leak_nofp_a(int i) {
    nofp_common(7101, i);
    KEEP(i);
}
OPT static void leak_nofp_b(int i) {
    nofp_common(7102, i);
    KEEP(i);
}
OPT static void leak_nofp_c(int i) {
    nofp_common(7103, i);
    KEEP(i);
}
static void (*const nofp_fns[3])(int) = {leak_nofp_a, leak_nofp_b, leak_nofp_c};
NOINLINE static void call_nofp(int which, int i) {
    nofp_fns[which](i);
    KEEP(which);
}
static void samedepth_nofp(long rounds) {
    for (long i = 0; i < rounds * 3; i++)
        call_nofp((int)((i * 7) % 3), (int)(i / 3) * 8); /* every call leaks */
}

/* ---- code unloaded, other code loaded at the same addresses ----
 * libstackvar1.so and libstackvar2.so (tests/integration/stackvar_lib.c)
 * have other frame sizes at the same offsets; each is loaded where the
 * other was, in turn. */
static void dlclose_reload(long rounds) {
    for (long i = 0; i < rounds / 4 + 4; i++) {
        const char *name = (i & 1) ? "libstackvar2.so" : "libstackvar1.so";
        void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            fprintf(stderr, "rt_stacks: %s\n", dlerror());
            exit(2);
        }
        int (*run)(int, size_t) = (int (*)(int, size_t))dlsym(h, "stackvar_run");
        if (!run) exit(2);
        for (int k = 0; k < 8; k++)
            run(k % 5, 8000 + (size_t)(i & 1));
        dlclose(h);
    }
}

static const struct {
    const char *name;
    void (*run)(long);
} scenarios[] = {
    {"recursion", recursion}, {"alloca", alloca_sizes},    {"longjmp", longjmps},
    {"signals", signals},     {"threads", threads},        {"samedepth", samedepth},
    {"optimised", optimised}, {"dlclose", dlclose_reload}, {"samedepth_nofp", samedepth_nofp},
};

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "all";
    long rounds = arg_long(argc, argv, 2, 400);
    int all = !strcmp(what, "all"), known = 0;
    CHECK(cudaFree(NULL));
    for (size_t k = 0; k < sizeof scenarios / sizeof *scenarios; k++)
        if (all || !strcmp(what, scenarios[k].name)) {
            scenarios[k].run(rounds);
            known = 1;
        }
    if (!known) {
        fprintf(stderr, "rt_stacks: no scenario %s\n", what);
        return 2;
    }
    printf("ok %d kept\n", nkeep);
    return 0;
}
