/* SPDX-License-Identifier: Apache-2.0 */
/* pyprobe.c - test probe for src/track/pyframes.c, loaded by Python through ctypes
 * (tests/python/check_pyframes.py). Built as $(B)/tests/python/pyprobe.so
 * from this file and src/track/pyframes.c only: no libleakwatch, no libpython.
 *
 * Called through ctypes.CDLL the GIL is released during the call (as in
 * PyTorch's allocator); through ctypes.PyDLL it is held.
 */
#include "arch.h"
#include "pyframes.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define EXPORT __attribute__((visibility("default")))

/* The library provides lw_real_dlsym (it interposes dlsym); here there is no
 * interposition, so resolve the real dlsym by version and call it. */
void *lw_real_dlsym(void *handle, const char *name) {
    typedef void *(*dlsym_fn)(void *, const char *);
    static _Atomic(dlsym_fn) real;
    dlsym_fn f = real;
    if (f == NULL) {
        void *p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (p == NULL) p = dlvsym(RTLD_NEXT, "dlsym", LW_ARCH_GLIBC_BASE);
        if (p == NULL) return NULL;
        f = (dlsym_fn)p;
        real = f;
    }
    return f(handle, name);
}

EXPORT int probe_init(void) {
    return lw_py_init();
}
EXPORT int probe_version(void) {
    return lw_py_version();
}
EXPORT const char *probe_status(void) {
    return lw_py_status();
}

#define MAXF 4096

/* Captures, then describes every frame while they are all alive. Writes
 * records "file\x1f function\x1f line\x1f entry\x1f instr\x1e" into buf.
 * Returns the number of frames, -2 if buf is too small, -(1000+i) if
 * describing frame i failed. */
static int stack_to_text(const lw_pyframe *fr, int n, char *buf, int buflen) {
    int o = 0;
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        lw_py_location loc;
        if (lw_py_describe(&fr[i], &loc) != 0) return -(1000 + i);
        int w = snprintf(buf + o, (size_t)(buflen - o), "%s\x1f%s\x1f%d\x1f%d\x1f%d\x1e", loc.file,
                         loc.function, loc.line, fr[i].entry, (int)fr[i].instr);
        lw_py_location_free(&loc);
        if (w < 0 || w >= buflen - o) return -2;
        o += w;
    }
    return n;
}

static int same_frames(const lw_pyframe *a, const lw_pyframe *b, int n) {
    for (int i = 0; i < n; i++)
        if (a[i].code != b[i].code || a[i].instr != b[i].instr || a[i].entry != b[i].entry)
            return 0;
    return 1;
}

/* The thread's chain cache (as libleakwatch keeps one per thread), on the
 * same frames as the walk: twice, and the second time, for a chain the cache
 * keeps, from the cache (its own copy, the generation unchanged). Returns 0,
 * -3 when a cached capture differs from the walk, -4 when the repeat was not
 * served from the cache. 16-aligned as in libleakwatch's thread state (the
 * compare loads the cached words 16 bytes at a time). */
static int check_cached(const lw_pyframe *fr, int n, int max) {
    static __thread lw_py_cache cache __attribute__((aligned(16)));
    static __thread lw_pyframe out[MAXF];
    for (int k = 0; k < 2; k++) {
        const lw_pyframe *got = NULL;
        uint64_t gen = cache.gen;
        int m = lw_py_capture_cached(out, max, &cache, &got);
        if (m != n || got == NULL || !same_frames(got, fr, n)) return -3;
        if (k == 1 && cache.steps > 0 && (got != cache.out || cache.gen != gen)) return -4;
    }
    return 0;
}

EXPORT int probe_stack(char *buf, int buflen, int max) {
    static __thread lw_pyframe fr[MAXF];
    if (max > MAXF) max = MAXF;
    int n = lw_py_capture(fr, max);
    int bad = check_cached(fr, n, max);
    if (bad) return bad;
    return stack_to_text(fr, n, buf, buflen);
}

/* Capture in a thread created here, which never ran Python: must be 0. */
static void *c_thread(void *arg) {
    lw_pyframe fr[64];
    *(int *)arg = lw_py_capture(fr, 64);
    return NULL;
}
EXPORT int probe_c_thread(void) {
    pthread_t t;
    int n = -1;
    if (pthread_create(&t, NULL, c_thread, &n) != 0) return -1;
    pthread_join(t, NULL);
    return n;
}

/* Line (and describe's success) for an arbitrary object pointer taken as a
 * code object: for the decoder cross-check against PyCode_Addr2Line, and to
 * check that non-code objects are refused. Returns the line, or -1000. */
EXPORT int probe_line(const void *code, int instr) {
    lw_pyframe f = {code, instr, 0};
    lw_py_location loc;
    if (lw_py_describe(&f, &loc) != 0) return -1000;
    int line = loc.line;
    lw_py_location_free(&loc);
    return line;
}

/* describe() of (code, -1): writes "file\x1f function" into buf; -1 on failure. */
EXPORT int probe_names(const void *code, char *buf, int buflen) {
    lw_pyframe f = {code, -1, 0};
    lw_py_location loc;
    if (lw_py_describe(&f, &loc) != 0) return -1;
    int w = snprintf(buf, (size_t)buflen, "%s\x1f%s", loc.file, loc.function);
    lw_py_location_free(&loc);
    return w < buflen ? 0 : -2;
}

/* Cost of one capture of up to `max` frames (ns): the best of 15 batches of
 * iters/15 captures (the minimum filters out other load on the machine).
 * *frames receives the number of frames captured. */
EXPORT double probe_bench(int iters, int max, int *frames) {
    lw_pyframe fr[256];
    if (max > 256) max = 256;
    int n = 0, per = iters / 15 > 0 ? iters / 15 : 1;
    double best = 0;
    for (int i = 0; i < 1000; i++)
        n = lw_py_capture(fr, max); /* warm up */
    for (int b = 0; b < 15; b++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < per; i++) {
            n = lw_py_capture(fr, max);
            __asm__ volatile("" : : "r"(fr) : "memory");
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns =
            ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / per;
        if (b == 0 || ns < best) best = ns;
    }
    *frames = n;
    return best;
}

/* Captures and describes in a loop for `ms` milliseconds (GIL released when
 * called through CDLL); for the finalisation test, where the interpreter
 * shuts down around a daemon thread doing this. Returns the iterations. */
EXPORT long probe_spin(int ms) {
    lw_pyframe fr[64];
    struct timespec a, b;
    long iters = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        int n = lw_py_capture(fr, 64);
        for (int i = 0; i < n; i++) {
            lw_py_location loc;
            if (lw_py_describe(&fr[i], &loc) == 0) lw_py_location_free(&loc);
        }
        iters++;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L < ms);
    return iters;
}

/* As PyTorch's autograd engine runs backward(): a thread of its own with a
 * Python thread state but no Python frame (PythonEngine::thread_init creates
 * one and releases the GIL), calling fn(&ptr, size) (cudaMalloc's
 * signature), while the calling thread waits. Call through ctypes.CDLL (the
 * GIL is released during the call). Returns fn's result, or -1. */
typedef struct {
    int (*fn)(void **, size_t);
    size_t size;
    int rc;
} frameless_job;

static void *frameless_main(void *arg) {
    frameless_job *j = arg;
    int (*ensure)(void) = (int (*)(void))lw_real_dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    void (*release)(int) = (void (*)(int))lw_real_dlsym(RTLD_DEFAULT, "PyGILState_Release");
    void *(*save)(void) = (void *(*)(void))lw_real_dlsym(RTLD_DEFAULT, "PyEval_SaveThread");
    void (*restore)(void *) = (void (*)(void *))lw_real_dlsym(RTLD_DEFAULT, "PyEval_RestoreThread");
    if (!ensure || !release || !save || !restore) return NULL;
    int g = ensure();
    void *ts = save();
    void *p = NULL;
    j->rc = j->fn(&p, j->size);
    restore(ts);
    release(g);
    return NULL;
}

EXPORT int probe_frameless_call(void *fn, size_t size) {
    frameless_job j = {(int (*)(void **, size_t))fn, size, -1};
    pthread_t t;
    if (pthread_create(&t, NULL, frameless_main, &j) != 0) return -1;
    pthread_join(t, NULL);
    return j.rc;
}
