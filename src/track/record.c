/* SPDX-License-Identifier: Apache-2.0 */
#include "record.h"

#include "clock.h"
#include "hash.h"
#include "log.h"
#include "options.h"
#include "pystack.h"
#include "runstate.h"
#include "sites.h"
#include "real.h"
#include "stack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

/* Most allocations in a training step repeat a few stacks: a small
 * direct-mapped cache per thread finds their site without the table's lock. */
#define CACHE_SLOTS 64
typedef struct {
    uint64_t hash;
    lw_site *site;
} cache_slot;
static _Thread_local cache_slot site_cache[CACHE_SLOTS];

/* The site of the empty key (no frames: LEAKWATCH_STACKS=0): every event
 * without a stack lands on it, so it is kept once for all threads and found
 * without a hash, a key comparison or a thread-local cache. Cleared when the
 * sites are (a forked child). */
static lw_site *_Atomic empty_site;

static _Atomic uint64_t untracked;
static _Atomic uint64_t reused_unseen;
static _Atomic uint64_t truncated_sites; /* sites whose stack hit a frame cap */
static atomic_flag said_untracked = ATOMIC_FLAG_INIT;

/* The address range of CPython's evaluation function, where the native walk
 * stops when the thread's Python frames are captured: below it are the
 * interpreter's own frames, which the Python frames describe better. Looked
 * up once, in the Python that pyframes.c reads (the first in search order). */
static _Atomic uintptr_t eval_lo, eval_hi;
static atomic_int eval_state; /* 0 unknown, 1 known (or none) */

__attribute__((noinline, cold)) static void find_eval_range(void) {
    void *f = lw_real_dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (f && dladdr1(f, &info, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
        atomic_store_explicit(&eval_lo, (uintptr_t)f, memory_order_relaxed);
        atomic_store_explicit(&eval_hi, (uintptr_t)f + sym->st_size, memory_order_relaxed);
    }
    atomic_store_explicit(&eval_state, 1, memory_order_release);
}

/* Inline: every allocation under Python frames asks. */
static inline void eval_range(uintptr_t *lo, uintptr_t *hi) {
    if (__builtin_expect(!atomic_load_explicit(&eval_state, memory_order_acquire), 0))
        find_eval_range();
    *lo = atomic_load_explicit(&eval_lo, memory_order_relaxed);
    *hi = atomic_load_explicit(&eval_hi, memory_order_relaxed);
}

/* LEAKWATCH_VERIFY_STACKS: the Python frames from the cache against a walk. */
static void verify_python(const lw_pyframe *py, int npy) {
    lw_pyframe walked[LW_PY_MAX];
    int m = lw_py_capture(walked, LW_PY_MAX);
    int same = m == npy;
    for (int i = 0; same && i < m; i++)
        same = walked[i].code == py[i].code && walked[i].instr == py[i].instr &&
               walked[i].entry == py[i].entry;
    if (!same) lw_stack_count_mismatch();
}

/* The frames of the thread waiting in backward(), published with a
 * sequence lock: the allocation path only reads (and retries if a writer
 * raced it); writers are the rare backward() entries and exits. */
static pthread_mutex_t bw_write = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t bw_seq; /* odd while being written */
static _Atomic int bw_depth;    /* backward() calls in progress */
static _Atomic int bw_n;        /* frames in bw_words; 0: none */
/* Each frame as two words (code; instr | entry << 32), atomics so that the
 * racing reader the sequence lock discards is not a data race. */
static _Atomic uintptr_t bw_words[2 * LW_PY_MAX];

#define BACKWARD_BIT ((uintptr_t)1 << LW_SITE_KEY_BACKWARD_SHIFT)

/* The last backward() caller's chain, for the next entry's capture: a
 * training loop enters backward from the same line at every step, and a
 * repeat is confirmed frame by frame instead of walked and decoded again.
 * One for the process, used under bw_write (not the threads' caches: the
 * allocations' chains would evict it, and it theirs). */
static _Alignas(16) lw_py_cache bw_cache;

void lw_record_backward(int entering) {
    lw_pyframe f[LW_PY_MAX];
    const lw_pyframe *frames = f;
    pthread_mutex_lock(&bw_write);
    int n = entering ? lw_py_capture_cached(f, LW_PY_MAX, &bw_cache, &frames) : 0;
    int depth = atomic_load(&bw_depth) + (entering ? 1 : -1);
    if (depth < 0) depth = 0;
    atomic_fetch_add_explicit(&bw_seq, 1, memory_order_acq_rel);
    if (entering && n > 0) {
        for (int i = 0; i < n; i++) {
            atomic_store_explicit(&bw_words[2 * i], (uintptr_t)frames[i].code,
                                  memory_order_relaxed);
            atomic_store_explicit(&bw_words[2 * i + 1],
                                  (uintptr_t)(uint32_t)frames[i].instr | (uintptr_t)frames[i].entry
                                                                             << 32,
                                  memory_order_relaxed);
        }
        atomic_store_explicit(&bw_n, n, memory_order_relaxed);
    } else if (!depth) {
        atomic_store_explicit(&bw_n, 0, memory_order_relaxed);
    }
    atomic_store(&bw_depth, depth);
    atomic_fetch_add_explicit(&bw_seq, 1, memory_order_release);
    pthread_mutex_unlock(&bw_write);
}

/* Copies the backward caller's frames into py; returns how many (0: none,
 * or a writer kept racing). */
static int borrow_backward_frames(lw_pyframe *py) {
    for (int tries = 0; tries < 4; tries++) {
        uint32_t s0 = atomic_load_explicit(&bw_seq, memory_order_acquire);
        if (s0 & 1) continue;
        /* Acquire loads: the second reading of the sequence below cannot
         * move before them (no fence: TSan does not model fences). */
        int n = atomic_load_explicit(&bw_n, memory_order_acquire);
        if (n <= 0 || n > LW_PY_MAX) return 0;
        for (int i = 0; i < n; i++) {
            uintptr_t w = atomic_load_explicit(&bw_words[2 * i + 1], memory_order_acquire);
            py[i].code = (const void *)atomic_load_explicit(&bw_words[2 * i], memory_order_acquire);
            py[i].instr = (int32_t)(uint32_t)w;
            py[i].entry = (uint8_t)(w >> 32);
        }
        if (atomic_load_explicit(&bw_seq, memory_order_relaxed) == s0) return n;
    }
    return 0;
}

int lw_site_in_backward(const lw_site *s) {
    return (s->key[0] & BACKWARD_BIT) != 0;
}

static inline __attribute__((always_inline)) lw_site *site_for_this_stack(void) {
    /* The stack and the Python frames are written straight into the site key
     * (header word first): nothing is copied before hashing. */
    uintptr_t key[LW_SITE_KEY_WORDS(LW_STACK_MAX, LW_PY_MAX)];
    lw_pyframe py[LW_PY_MAX];
    const lw_pyframe *pyf = py; /* the frames: py, or the Python cache's copy */
    lw_stack_info si = {0};
    uint64_t pystate = 0; /* which Python frames: 0 none, else the cache's generation */
    int n = 0, npy = 0, max = 0;
    uintptr_t borrowed = 0;
    int stacks = (int)lw_opt_int(LW_OPT_STACKS);
    if (!stacks) {
        lw_site *s = atomic_load_explicit(&empty_site, memory_order_acquire);
        if (s) return s;
    }
    max = (int)lw_opt_int(LW_OPT_MAX_FRAMES);
    if (stacks) {
        /* Python first: when it has frames, the native walk stops at the
         * interpreter. */
        lw_py_cache *pc = lw_stack_py_cache(max);
#ifdef LW_ABLATE_python
        npy = 0; /* make ablate ABLATE=python: no Python frames */
#else
        npy = lw_py_capture_cached(py, LW_PY_MAX, pc, &pyf);
#endif
        if (lw_stack_verifying()) verify_python(pyf, npy);
        uintptr_t lo = 0, hi = 0;
        if (npy > 0) {
            eval_range(&lo, &hi);
            pystate = pc ? pc->gen : 0;
        } else if (atomic_load_explicit(&bw_depth, memory_order_relaxed) > 0 &&
                   lw_py_thread_without_frames() && (npy = borrow_backward_frames(py)) > 0) {
            pyf = py;
            /* Autograd's engine thread, while a backward() is waited on: the
             * waiting thread's frames say where it was called from. They
             * are not this thread's, so its known-stack cache is not used
             * (pystate stays 0 with npy > 0). */
            borrowed = BACKWARD_BIT;
        }
        lw_stack_capture(key + 1, max, lo, hi, &si);
        n = si.n;
        /* The same native stack as this thread's last one from here, under
         * the same Python frames (or none): its site, with no hashing and no
         * table. */
        lw_site *s = si.known && (npy == 0 || pystate != 0) ? *si.tag : NULL;
        if (s && si.aux == pystate) {
            if (lw_stack_verifying()) {
                lw_stack_ips(&si, key + 1);
                lw_pystack_key(pyf, npy, key + 1 + n);
                key[0] = (uintptr_t)n | (uintptr_t)npy << 16 |
                         (uintptr_t)si.cut << LW_SITE_KEY_CUT_SHIFT;
                if (s->nkey != LW_SITE_KEY_WORDS(n, npy) ||
                    memcmp(s->key, key, s->nkey * sizeof *key) != 0)
                    lw_stack_count_mismatch();
            }
            lw_stack_done(&si, s, pystate);
            return s;
        }
        lw_stack_ips(&si, key + 1);
        lw_pystack_key(pyf, npy, key + 1 + n);
    }
    key[0] =
        (uintptr_t)n | (uintptr_t)npy << 16 | (uintptr_t)si.cut << LW_SITE_KEY_CUT_SHIFT | borrowed;
    uint32_t nkey = LW_SITE_KEY_WORDS(n, npy);
    lw_site *s;
#ifdef LW_ABLATE_site
    /* make ablate ABLATE=site: one site for every stack, no lookup */
    static lw_site *_Atomic the_site;
    if ((s = atomic_load(&the_site)) == NULL) {
        int created;
        s = lw_site_intern(key, nkey, lw_hash_words(key, nkey), &created);
        atomic_store(&the_site, s);
    }
    lw_stack_done(&si, NULL, 0);
    return s;
#endif
    uint64_t hash = lw_hash_words(key, nkey);
    cache_slot *slot = &site_cache[hash % CACHE_SLOTS];
    s = slot->site;
    if (!(s && slot->hash == hash && s->nkey == nkey &&
          memcmp(s->key, key, nkey * sizeof *key) == 0)) {
        int created;
        s = lw_site_intern(key, nkey, hash, &created);
        /* A new site: name its Python frames now, while they are alive. */
        if (created && npy) lw_pystack_attach(s, pyf, npy);
        /* Frames beyond the caps are dropped: say how many sites lost some. */
        if (created && (n == max || npy == LW_PY_MAX)) atomic_fetch_add(&truncated_sites, 1);
        if (s != lw_site_overflow()) {
            slot->hash = hash;
            slot->site = s;
            if (nkey == 1 && key[0] == 0)
                atomic_store_explicit(&empty_site, s, memory_order_release);
        }
    }
    lw_stack_done(&si, s == lw_site_overflow() || (npy > 0 && pystate == 0) ? NULL : s, pystate);
    return s;
}

/* Takes a record's bytes off its site and the totals. */
static inline __attribute__((always_inline)) void forget(const lw_alloc *r) {
    lw_site_count_free(r->site, r->size);
    lw_totals_free(r->device, (lw_kind)r->kind, r->size);
}

void lw_record_alloc(lw_kind kind, lw_key_class cls, uint64_t key, uint64_t size, int device) {
    lw_alloc rec = {
        .key = key,
        .size = size,
        .site = site_for_this_stack(),
        .step = lw_run_clock(),
        .age_s = (uint32_t)(lw_run_age_coarse_ns() / 1000000000u),
        .device = (int16_t)device,
        .kind = (uint8_t)kind,
        .cls = (uint8_t)cls,
    };
    lw_alloc old;
    int r = lw_live_insert(&rec, &old);
    if (r < 0) {
        /* No memory for the record. The program's allocation stands as it
         * is; only our count of it is lost, and that loss is counted. */
        atomic_fetch_add(&untracked, 1);
        if (!atomic_flag_test_and_set(&said_untracked))
            lw_log("out of memory for tracking: allocations from now on may go untracked (the "
                   "report counts them in tracker.untracked_allocations); the program is not "
                   "affected");
        return;
    }
    if (r == 1) {
        atomic_fetch_add(&reused_unseen, 1);
        forget(&old);
    }
    lw_site_count_alloc(rec.site, size);
    lw_totals_alloc(device, kind, size);
}

void lw_record_free_begin(lw_key_class cls, uint64_t key, lw_free_ticket *t) {
    t->tracked = lw_live_remove(cls, key, &t->rec);
}

/* The driver refused the free, so the memory is still allocated. Out of
 * line: the common path then needs no frame. */
__attribute__((noinline, cold)) static void free_refused(lw_free_ticket *t) {
    lw_alloc old;
    if (lw_live_insert(&t->rec, &old) == 1) {
        atomic_fetch_add(&reused_unseen, 1);
        forget(&old);
    }
}

void lw_record_free_end(lw_free_ticket *t, int succeeded) {
    if (!t->tracked) {
        /* Not ours to count: allocated before we started, by an unhooked
         * path, or not an allocation at all (the driver said so). */
        if (succeeded) lw_totals_unknown_free();
        return;
    }
    if (__builtin_expect(succeeded, 1)) {
        forget(&t->rec);
        return;
    }
    free_refused(t);
}

static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;
static lw_failure failures[LW_FAILURES_KEPT];
static uint64_t failures_total;

/* An allocation that failed because this machine has no GPU or no driver
 * (the runtime's and the driver's codes agree on these): the job's own error
 * rarely says so; one line does, once, also under LEAKWATCH_QUIET (it
 * explains an error). 34: the driver is a stub library; 35: no driver, or
 * one older than the runtime (cudaErrorInsufficientDriver); 100: no device. */
static void say_no_gpu(int result) {
    const char *why = result == 100  ? "no CUDA-capable GPU found"
                      : result == 35 ? "no CUDA driver found (or one older than the runtime)"
                      : result == 34 ? "the CUDA driver is a stub library: no GPU driver installed"
                                     : NULL;
    if (!why) return;
    lw_log_once(no_gpu_said,
                "a CUDA allocation failed with error %d: %s; nothing to watch here. Without a "
                "GPU, try leakwatch on its CPU stand-ins: leakwatch run --cuda-stand-ins -- CMD",
                result, why);
}

static void (*_Atomic failure_hook)(lw_kind, uint64_t, int, int);

void lw_record_set_failure_hook(void (*fn)(lw_kind kind, uint64_t size, int device, int result)) {
    atomic_store(&failure_hook, fn);
}

void lw_record_failure(lw_kind kind, uint64_t size, int device, int result) {
    say_no_gpu(result);
    lw_site *s = site_for_this_stack();
    atomic_fetch_add_explicit(&s->failed_count, 1, memory_order_relaxed);
    lw_totals_failed(device, kind);
    lw_failure f = {
        .time_ns = lw_run_age_coarse_ns(),
        .size = size,
        .site = s,
        .step = lw_step_now(),
        .result = result,
        .device = (int16_t)device,
        .kind = (uint8_t)kind,
    };
    pthread_mutex_lock(&failures_lock);
    failures[failures_total++ % LW_FAILURES_KEPT] = f;
    pthread_mutex_unlock(&failures_lock);
    void (*hook)(lw_kind, uint64_t, int, int) = atomic_load(&failure_hook);
    if (hook) hook(kind, size, device, result);
}

int lw_failures_get(lw_failure *out, int max) {
    pthread_mutex_lock(&failures_lock);
    uint64_t total = failures_total;
    uint64_t n = total < LW_FAILURES_KEPT ? total : LW_FAILURES_KEPT;
    if (n > (uint64_t)max) n = (uint64_t)max;
    for (uint64_t i = 0; i < n; i++)
        out[i] = failures[(total - n + i) % LW_FAILURES_KEPT];
    pthread_mutex_unlock(&failures_lock);
    return (int)n;
}

void lw_record_lock_for_fork(void) {
    pthread_mutex_lock(&bw_write);
    pthread_mutex_lock(&failures_lock);
}
void lw_record_unlock_after_fork(void) {
    pthread_mutex_unlock(&failures_lock);
    pthread_mutex_unlock(&bw_write);
}

void lw_record_after_fork_child(void) {
    /* The one thread of the child is the one that forked: its cache holds the
     * parent's sites, which the child's first start forgets. */
    memset(site_cache, 0, sizeof site_cache);
    atomic_store(&empty_site, NULL);
    lw_sites_after_fork_child();
    lw_stack_after_fork_child();
}

void lw_record_forget_all(void) {
    atomic_store(&empty_site, NULL);
    pthread_mutex_lock(&failures_lock);
    failures_total = 0;
    memset(failures, 0, sizeof failures);
    pthread_mutex_unlock(&failures_lock);
    atomic_store(&untracked, 0);
    atomic_store(&reused_unseen, 0);
    atomic_store(&truncated_sites, 0);
    lw_stack_forget_stats();
    atomic_flag_clear(&said_untracked);
    /* The child has no backward() in progress (its one thread forked). */
    atomic_store(&bw_depth, 0);
    atomic_store(&bw_n, 0);
}

uint64_t lw_record_truncated_sites(void) {
    return atomic_load(&truncated_sites);
}

uint64_t lw_record_untracked(void) {
    return atomic_load(&untracked);
}
uint64_t lw_record_reused_unseen(void) {
    return atomic_load(&reused_unseen);
}
