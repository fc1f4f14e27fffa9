/* SPDX-License-Identifier: Apache-2.0 */
#include "stack.h"

#include "code_epoch.h"
#include "log.h"
#include "options.h"
#include "real.h"
#include "unwind.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Our own frames (the hook, the recorder) sit on top: the fallback captures
 * a few more than asked and drops them. */
enum { OWN_FRAMES_MAX = 12 };

/* ------------------------------------------------------------------------ */
/* The fallback unwinder                                                    */
/* ------------------------------------------------------------------------ */

typedef int (*unw_backtrace_fn)(void **, int);
typedef int (*gcc_trace_fn)(void *ctx, void *arg);
typedef int (*gcc_backtrace_fn)(gcc_trace_fn, void *);
typedef uintptr_t (*gcc_getip_fn)(void *);

static unw_backtrace_fn fb_unw;
static gcc_backtrace_fn fb_gcc;
static gcc_getip_fn fb_gcc_ip;
static const char *fb_name = "none";
static char unwinder_text[96] = "not started";
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int use_fast;    /* the walker is used (x86-64, not turned off for a test) */
static int trust_cache; /* tests only: a known anchor is believed, unchecked */
static int ra_only;     /* tests only: saved frame pointers are not checked */
static int keep_rules;  /* tests only: caches kept across dlclose */
int lw_stack_verify;    /* LEAKWATCH_VERIFY_STACKS (stack.h) */

static _Atomic uint64_t n_fallback, n_verified, n_mismatch;

enum { URC_NO_REASON = 0, URC_END_OF_STACK = 5 };
typedef struct {
    void **buf;
    int n, max;
} gcc_walk;

static int gcc_cb(void *ctx, void *arg) {
    gcc_walk *w = arg;
    if (w->n >= w->max) return URC_END_OF_STACK;
    uintptr_t ip = fb_gcc_ip(ctx);
    if (ip == 0) return URC_END_OF_STACK;
    w->buf[w->n++] = (void *)ip;
    return URC_NO_REASON;
}

static int gcc_backtrace(void **buf, int max) {
    gcc_walk w = {buf, 0, max};
    fb_gcc(gcc_cb, &w);
    return w.n;
}

/* The fallback. libunwind keeps a cache by address that dlclose does not
 * clear (a library loaded where another was gets the old one's frames), so
 * once code has been unloaded libgcc_s's unwinder, which keeps none, is
 * preferred. */
static int fallback_backtrace(void **buf, int max) {
    if (fb_unw && !(fb_gcc && lw_code_epoch() != 0)) return fb_unw(buf, max);
    if (fb_gcc) return gcc_backtrace(buf, max);
    return backtrace(buf, max);
}

/* LEAKWATCH_VERIFY_STACKS' reference: libgcc_s's unwinder where there is one
 * (no cache that could be stale), else the fallback. */
static int reference_backtrace(void **buf, int max) {
    if (fb_gcc) return gcc_backtrace(buf, max);
    return fallback_backtrace(buf, max);
}

static void *open_sym(const char *lib, const char *name) {
    void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    return h ? lw_real_dlsym(h, name) : NULL;
}

static void init(void) {
    /* LEAKWATCH_TEST_NO_LIBUNWIND=1 (tests only): behave as on a machine
     * without libunwind. */
    const char *no_unw = secure_getenv("LEAKWATCH_TEST_NO_LIBUNWIND");
    int pretend_missing = no_unw && *no_unw == '1';
    int want_unw = !pretend_missing, tsan_build = 0;
#ifdef __SANITIZE_THREAD__
    /* Under ThreadSanitizer (make check-tsan) only: libunwind frees its
     * per-thread trace cache from a thread-specific-data destructor that runs
     * after TSan has torn the exiting thread down, and crashes there.
     * libgcc_s keeps no such state. */
    want_unw = 0;
    tsan_build = 1;
#endif
    if (want_unw) fb_unw = (unw_backtrace_fn)open_sym("libunwind.so.8", "unw_backtrace");
    fb_gcc = (gcc_backtrace_fn)open_sym("libgcc_s.so.1", "_Unwind_Backtrace");
    fb_gcc_ip = (gcc_getip_fn)open_sym("libgcc_s.so.1", "_Unwind_GetIP");
    if (!fb_gcc_ip) fb_gcc = NULL;
    if (fb_unw && fb_gcc)
        fb_name = "libunwind.so.8 (libgcc_s.so.1 once code is unloaded)";
    else if (fb_unw)
        fb_name = "libunwind.so.8";
    else if (fb_gcc)
        fb_name = "libgcc_s.so.1 (_Unwind_Backtrace)";
    else
        fb_name = "glibc backtrace()";
    /* LEAKWATCH_TEST_UNWIND=fallback (tests only): every stack by the
     * fallback unwinder. */
    const char *t = secure_getenv("LEAKWATCH_TEST_UNWIND");
    use_fast = LW_UNW_FAST && !(t && strcmp(t, "fallback") == 0);
    /* LEAKWATCH_TEST_UNWIND=trust-cache (tests only): skip the confirmation,
     * to show that the tests catch a cache that is believed blindly. */
    trust_cache = t && strcmp(t, "trust-cache") == 0;
    /* LEAKWATCH_TEST_UNWIND=ra-only (tests only): confirm return addresses
     * only, to show why saved frame pointers must be checked too. */
    ra_only = t && strcmp(t, "ra-only") == 0;
    /* LEAKWATCH_TEST_UNWIND=keep-rules (tests only): caches survive dlclose,
     * to show why they must not. */
    keep_rules = t && strcmp(t, "keep-rules") == 0;
    lw_stack_verify = (int)lw_opt_int(LW_OPT_VERIFY_STACKS);
    if (use_fast)
        snprintf(unwinder_text, sizeof unwinder_text, "leakwatch CFI walker, fallback %s", fb_name);
    else
        snprintf(unwinder_text, sizeof unwinder_text, "%s", fb_name);
    /* Said when libunwind was looked for (not under TSan, see above) or the
     * test hook pretends it is missing; not under LEAKWATCH_QUIET (a note,
     * not an error). */
    if (!fb_unw && (pretend_missing || !tsan_build) && !lw_log_quiet)
        lw_log("libunwind.so.8 not found: stacks that leakwatch's own unwinder cannot follow are "
               "unwound with %s%s",
               fb_name, fb_gcc ? "" : " (install libunwind8 or libgcc-s1 for complete stacks)");
}

static atomic_int inited;

void lw_stack_init(void) {
    pthread_once(&init_once, init);
    atomic_store_explicit(&inited, 1, memory_order_release);
}

/* Skips leakwatch's own frames at the top of buf, then keeps frames up to
 * and including the first one in [cut_lo, cut_hi), at most max. */
static int trim(void *const *buf, int n, uintptr_t *ips, int max, uintptr_t cut_lo,
                uintptr_t cut_hi, uint8_t *cut) {
    int skip = 0;
#ifdef __SANITIZE_THREAD__
    /* The sanitizer's backtrace interceptor is the innermost frame. */
    while (skip < n && !lw_is_own_address((uintptr_t)buf[skip]))
        skip++;
#endif
    while (skip < n && lw_is_own_address((uintptr_t)buf[skip]))
        skip++;
    int out = 0;
    *cut = 0;
    for (int i = skip; i < n && out < max; i++) {
        uintptr_t ip = (uintptr_t)buf[i];
        ips[out++] = ip;
        if (ip - cut_lo < cut_hi - cut_lo) {
            *cut = 1;
            break;
        }
    }
    return out;
}

static int capture_with(int (*bt)(void **, int), uintptr_t *ips, int max, uintptr_t cut_lo,
                        uintptr_t cut_hi, uint8_t *cut) {
    void *buf[LW_STACK_MAX + OWN_FRAMES_MAX];
    if (max > LW_STACK_MAX) max = LW_STACK_MAX;
    int n = bt(buf, max + OWN_FRAMES_MAX);
    *cut = 0;
    if (n <= 0) return 0;
    return trim(buf, n, ips, max, cut_lo, cut_hi, cut);
}

static int capture_fallback(uintptr_t *ips, int max, uintptr_t cut_lo, uintptr_t cut_hi,
                            uint8_t *cut) {
    return capture_with(fallback_backtrace, ips, max, cut_lo, cut_hi, cut);
}

/* ------------------------------------------------------------------------ */
/* The fast walker: per-thread state                                        */
/* ------------------------------------------------------------------------ */

#define RULE_BITS 10 /* per thread: 1024 rules, 16 KiB */
#define RULE_SLOTS (1 << RULE_BITS)
/* Recent stacks per thread: 4 sets of 8. Stacks that share their anchor
 * (the same registers at the walker: calls from one Python function through
 * the same depth of native code, as Adam's _foreach_sqrt, _foreach_add, ...
 * under PyTorch's cudaMallocAsync backend) fall in one set and compete for
 * its ways: with 4 ways about five of a training step's allocations missed
 * and were walked in full at every step (callgrind, bench/perf/
 * callgrind_torch.sh: 1,811 instructions a capture on the loop's thread,
 * 466 with 8 ways). */
#define STACK_SETS 4
#define STACK_WAYS 8
#define STACK_SLOTS (STACK_SETS * STACK_WAYS)

typedef struct {
    uintptr_t ip;
    lw_unw_rule rule;
} rule_slot;

enum { END_LAST = 1, END_ZERO, END_MAX, END_CUT };

/* Two words of the stack, at addr, as the walk read them: confirming a
 * stack is reading them again and comparing the bits in mask
 * (docs/stacks.md). A step's check covers [CFA - 16, CFA): the return
 * address, and the saved frame pointer where a standard prologue puts it
 * (compared only once a later frame is found to depend on it). */
typedef struct {
    uintptr_t addr, pad_;
    uint64_t want[2] __attribute__((aligned(16)));
    uint64_t mask[2];
} check;

/* What a filled slot keeps of its checks: only the words compared, written
 * over the checks when the walk ends (compact_checks). A check whose two
 * words are both compared (the return address and the saved frame pointer
 * of a standard prologue) becomes a pair check, compared as one 16-byte
 * word; a check of one word becomes a word check. The pair checks come
 * first, then the word checks. Confirming a stack is then a load and an xor
 * per pair or word, with no masks. */
typedef uint64_t lw_v2 __attribute__((vector_size(16)));
typedef struct {
    uintptr_t addr, pad_;
    lw_v2 want;
} pair_check;
typedef struct {
    uintptr_t addr;
    uint64_t want;
} word_check;

/* A stack seen before on this thread, from its anchor (the registers of
 * the walker itself, so leakwatch's own frames are confirmed with the rest)
 * outwards. */
typedef struct {
    uintptr_t anchor_ip, anchor_sp, anchor_fp;
    uintptr_t cut_lo, cut_hi; /* the cut in force when it was walked */
    int n;                    /* frames outside leakwatch; 0: empty */
    int end;                  /* how the walk ended */
    int need_fp;              /* the anchor's fp is used before it is reloaded */
    int nchk;                 /* pair and word checks (a filled slot); -1: none to compare */
    int npair;                /* of which pair checks (first) */
    void *tag;
    uint64_t aux; /* the caller's, with tag */
    uintptr_t *ips;
    check *chk;
} stack_slot;

typedef struct {
    uintptr_t lo, hi; /* this thread's stack; hi = 0: unknown */
    unsigned gen;     /* the code epoch when the caches were last valid */
    int busy;         /* between capture and done: a signal handler that records
                         meanwhile must not use the caches */
    int cap;          /* frames per stack slot */
    rule_slot rules[RULE_SLOTS];
    stack_slot stacks[STACK_SLOTS];
    unsigned char next_way[STACK_SETS];
    word_check *words;           /* compact_checks' scratch: a slot's word checks */
    _Alignas(16) lw_py_cache py; /* the thread's last Python frames (record.c) */
} thread_state;

#if defined(__SSE2__)
/* The Python chain cache compares its words 16 bytes at a time when they
 * are 16-aligned (pyframes.c checks, and compares word by word otherwise):
 * they are, in a calloc'd state (16-aligned on x86-64). */
_Static_assert(offsetof(thread_state, py) % 16 == 0 && offsetof(lw_py_cache, w) % 16 == 0,
               "the Python chain cache's words are 16-aligned in the thread state");
#endif

static __thread thread_state *tls_state __attribute__((tls_model("initial-exec")));
static pthread_key_t state_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int key_ok;

/* Runs in the exiting thread: a later capture in another destructor of the
 * same thread makes a new state rather than use this one. */
static void free_state(void *p) {
    if (tls_state == p) tls_state = NULL;
    free(p);
}
static void make_key(void) {
    key_ok = pthread_key_create(&state_key, free_state) == 0;
}

/* The stack this thread runs on: the main thread's from __libc_stack_end
 * and the stack size limit (pthread_getattr_np would read /proc there); any
 * other thread's from its attributes (no I/O for those). */
static void find_bounds(thread_state *ts, uintptr_t sp) {
    void *const *end = lw_real_dlsym(RTLD_DEFAULT, "__libc_stack_end");
    if (end && *end && syscall(SYS_gettid) == getpid()) {
        uintptr_t hi = ((uintptr_t)*end + 4095) & ~(uintptr_t)4095;
        struct rlimit rl;
        uintptr_t size = (uintptr_t)8 << 20;
        if (getrlimit(RLIMIT_STACK, &rl) == 0)
            size = rl.rlim_cur == RLIM_INFINITY ? (uintptr_t)1 << 32 : (uintptr_t)rl.rlim_cur;
        uintptr_t lo = hi > size ? hi - size : 0;
        if (sp >= lo && sp < hi) {
            ts->lo = lo;
            ts->hi = hi;
            return;
        }
    }
    /* Any other thread, and the child of a fork made by another thread. */
    pthread_attr_t a;
    if (pthread_getattr_np(pthread_self(), &a) != 0) return;
    void *addr;
    size_t size;
    if (pthread_attr_getstack(&a, &addr, &size) == 0 && sp >= (uintptr_t)addr &&
        sp < (uintptr_t)addr + size) {
        ts->lo = (uintptr_t)addr;
        ts->hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&a);
}

static thread_state *state_for_thread(int cap, uintptr_t sp) {
    thread_state *ts = tls_state;
    if (ts) return ts->cap >= cap ? ts : NULL;
    pthread_once(&key_once, make_key);
    if (!key_ok) return NULL;
    /* Frames per slot: addresses, and two checks each (return address and
     * saved frame pointer), leakwatch's own frames included. */
    size_t frames = (size_t)cap + OWN_FRAMES_MAX + 1;
    size_t per = ((size_t)cap * sizeof(uintptr_t) + 2 * frames * sizeof(check) + 15) & ~(size_t)15;
    ts = calloc(1, sizeof *ts + STACK_SLOTS * per + 16 + 2 * frames * sizeof(word_check));
    if (!ts) return NULL;
    ts->cap = cap;
    char *p = (char *)(((uintptr_t)(ts + 1) + 15) & ~(uintptr_t)15); /* checks are 16-aligned */
    for (int i = 0; i < STACK_SLOTS; i++) {
        ts->stacks[i].chk = (check *)(void *)p;
        ts->stacks[i].ips = (uintptr_t *)(void *)(p + 2 * frames * sizeof(check));
        p += per;
    }
    ts->words = (word_check *)(void *)p;
    ts->gen = lw_code_epoch();
    find_bounds(ts, sp);
    if (pthread_setspecific(state_key, ts) != 0) {
        free(ts);
        return NULL;
    }
    tls_state = ts;
    return ts;
}

static void forget_caches(thread_state *ts) {
    memset(ts->rules, 0, sizeof ts->rules);
    for (int i = 0; i < STACK_SLOTS; i++) {
        ts->stacks[i].nchk = 0;
        ts->stacks[i].tag = NULL;
    }
}

void lw_stack_after_fork_child(void) {
    thread_state *ts = tls_state;
    if (!ts) return;
    for (int i = 0; i < STACK_SLOTS; i++)
        ts->stacks[i].tag = NULL;
}

/* ------------------------------------------------------------------------ */
/* The fast walker                                                          */
/* ------------------------------------------------------------------------ */

#if LW_UNW_FAST
LW_UNW_GETCONTEXT_ASM;
#endif

static inline lw_unw_rule rule_for(thread_state *ts, uintptr_t ip) {
    rule_slot *s = &ts->rules[(ip * 0x9e3779b97f4a7c15ull) >> (64 - RULE_BITS)];
    if (s->ip == ip) return s->rule;
    lw_unw_rule r = lw_unw_rule_lookup(ip);
    s->ip = ip;
    s->rule = r;
    return r;
}

/* One frame up, in registers (ip, sp, fp). Every read is inside [sp, hi)
 * of this thread's stack, and the CFA must be above the stack pointer: a
 * wrong rule or a corrupt saved frame pointer ends the walk (the fallback
 * takes over), never faults. Each word read is appended to the slot's
 * checks (chk, nchk): the return address always; a saved frame pointer
 * provisionally, kept only if a later frame's CFA is computed from it
 * (fp_chk: the check of the fp value in force, -1 for the anchor's own). */
#define STEP_OR_FAIL(R)                                                                            \
    do {                                                                                           \
        uintptr_t cfa_;                                                                            \
        if ((R).flags & LW_UNW_CFA_FP) {                                                           \
            if (fp_chk < 0)                                                                        \
                need_fp = 1;                                                                       \
            else if (!ra_only)                                                                     \
                chk[fp_chk].mask[fp_word] = ~(uint64_t)0;                                          \
            cfa_ = fp + (uintptr_t)(intptr_t)(R).cfa_off;                                          \
        } else {                                                                                   \
            cfa_ = sp + (uintptr_t)(intptr_t)(R).cfa_off;                                          \
        }                                                                                          \
        if (cfa_ <= sp || cfa_ > hi || (cfa_ & 7) != 0) return -1;                                 \
        check *c_ = &chk[nchk++];                                                                  \
        c_->addr = cfa_ + LW_UNW_RA_SLOT - 8;                                                      \
        c_->want[0] = c_->mask[0] = 0;                                                             \
        c_->mask[1] = ~(uint64_t)0;                                                                \
        if ((R).flags & LW_UNW_FP_SAVED) {                                                         \
            uintptr_t a_ = cfa_ + (uintptr_t)(intptr_t)(R).fp_off;                                 \
            if (a_ < sp || a_ > hi - sizeof(uintptr_t) || (a_ & 7) != 0) return -1;                \
            fp = *(const uintptr_t *)a_;                                                           \
            if (a_ == c_->addr) {                                                                  \
                c_->want[0] = fp;                                                                  \
                fp_chk = nchk - 1;                                                                 \
                fp_word = 0;                                                                       \
            } else {                                                                               \
                check *f_ = &chk[nchk++];                                                          \
                f_->addr = a_ - 8;                                                                 \
                f_->want[0] = f_->mask[0] = f_->mask[1] = 0;                                       \
                f_->want[1] = fp;                                                                  \
                fp_chk = nchk - 1;                                                                 \
                fp_word = 1;                                                                       \
            }                                                                                      \
        }                                                                                          \
        ip = *(const uintptr_t *)(cfa_ + LW_UNW_RA_SLOT);                                          \
        c_->want[1] = ip;                                                                          \
        sp = cfa_; /* LW_UNW_SP_IS_CFA */                                                          \
    } while (0)

/* Whether any of the n pair checks at c reads other words than recorded
 * (nonzero then). The loads are independent of each other (addresses known
 * in advance). */
__attribute__((no_sanitize_address)) static inline lw_v2 pairs_differ(const pair_check *c, int n) {
    lw_v2 acc = {0, 0};
#pragma GCC unroll 8
    for (int i = 0; i < n; i++) {
        lw_v2 x;
        __builtin_memcpy(&x, (const void *)c[i].addr, sizeof x);
        acc |= x ^ c[i].want;
    }
    return acc;
}

/* The same for the n word checks at w. */
__attribute__((no_sanitize_address)) static inline uint64_t differs(const word_check *w, int n) {
    uint64_t acc = 0;
#pragma GCC unroll 8
    for (int i = 0; i < n; i++)
        acc |= *(const uint64_t *)w[i].addr ^ w[i].want;
    return acc;
}

#if LW_UNW_FAST /* only the fast walker records checks */
/* Rewrites the walk's n checks as the pair checks and then the word checks
 * of the words they compare, in place: a pair check (32 bytes) is written
 * at or before the check (48 bytes) it comes from, after it was read; the
 * word checks wait in the thread's scratch (words) and follow the pairs.
 * Each list is padded to a multiple of 4 with checks of their own want
 * field (always equal), so that confirming needs no loop for a remainder;
 * the padding fits (the slot has room for 2 * frames checks of 48 bytes,
 * frames > 12, and n <= 2 * frames). Sets *npair; returns the number of
 * checks, padding included. */
static int compact_checks(check *chk, int n, word_check *words, int *npair) {
    char *out = (char *)(void *)chk;
    int np = 0, nw = 0;
    for (int i = 0; i < n; i++) {
        check c;
        memcpy(&c, &chk[i], sizeof c);
        if (c.mask[0] && c.mask[1]) {
            pair_check p = {c.addr, 0, {c.want[0], c.want[1]}};
            memcpy(out + (size_t)np++ * sizeof p, &p, sizeof p);
            continue;
        }
        for (int k = 0; k < 2; k++)
            if (c.mask[k]) words[nw++] = (word_check){c.addr + 8 * (uintptr_t)k, c.want[k]};
    }
    pair_check *pairs = (pair_check *)(void *)out;
    while (np % 4) {
        pair_check *p = &pairs[np++];
        p->addr = (uintptr_t)&p->want;
        p->want = (lw_v2){0, 0};
    }
    word_check *w = (word_check *)(void *)(pairs + np);
    memcpy(w, words, (size_t)nw * sizeof *words);
    while (nw % 4) {
        w[nw].addr = (uintptr_t)&w[nw].want;
        w[nw++].want = 0;
    }
    *npair = np;
    return np + nw;
}
#endif

static inline unsigned set_of(uintptr_t sp) {
    return (unsigned)((sp * 0x9e3779b97f4a7c15ull) >> 62) & (STACK_SETS - 1);
}

/* Returns the frame count, or -1 when the walker cannot follow this stack
 * (the caller falls back). */
__attribute__((noinline, no_sanitize_address)) static int
fast_walk(thread_state *ts, uintptr_t *ips, int max, uintptr_t cut_lo, uintptr_t cut_hi,
          lw_stack_info *out) {
#if LW_UNW_FAST
    lw_unw_regs r0;
    lw_unw_getcontext(&r0);
    /* In locals, not in r0 (whose address was taken): registers. */
    uintptr_t ip = r0.ip, sp = r0.sp, fp = r0.fp;
    if (sp < ts->lo || sp >= ts->hi) return -1; /* another stack: a coroutine, sigaltstack */
    const uintptr_t hi = ts->hi;
    /* The anchor is this frame: has this thread been here before with the
     * same registers, and the same stack above? */
    unsigned set = set_of(sp);
    stack_slot *const ways = &ts->stacks[set * STACK_WAYS];
    for (int k = 0; k < STACK_WAYS; k++) {
        stack_slot *e = &ways[k];
        if (e->nchk == 0 || e->anchor_sp != sp || e->anchor_ip != ip ||
            (e->need_fp && e->anchor_fp != fp) || e->cut_lo != cut_lo || e->cut_hi != cut_hi ||
            e->n > max)
            continue;
        /* Each word the walk read then, read again: all in this thread's
         * stack above sp (docs/stacks.md), and independent of each other,
         * so no chain of loads (the padding reads the slot itself). */
        const pair_check *c = (const pair_check *)(const void *)e->chk;
        /* Eight pairs, then one branch: a stack from another call site
         * differs within the first few frames. Then the rest, four at a
         * time (both lists are padded to a multiple of 4), and one branch. */
        int i = 0, np = e->npair, nw = e->nchk - np;
        lw_v2 acc = {0, 0};
        if (np >= 8) {
            acc = pairs_differ(c, 8);
            i = 8;
            if ((acc[0] | acc[1]) && !trust_cache) continue;
        }
        for (; i < np; i += 4)
            acc |= pairs_differ(c + i, 4);
        uint64_t diff = acc[0] | acc[1];
        const word_check *w = (const word_check *)(const void *)(c + np);
        for (i = 0; i < nw; i += 4)
            diff |= differs(w + i, 4);
        if (diff != 0 && !trust_cache) continue;
        out->cached = e->ips; /* copied if the caller needs them (lw_stack_ips) */
        out->known = 1;
        out->tag = &e->tag;
        out->aux = e->aux;
        out->cut = e->end == END_CUT;
        return e->n;
    }
    /* A full walk, into the set's next way. */
    stack_slot *e = &ways[ts->next_way[set]];
    ts->next_way[set] = (unsigned char)((ts->next_way[set] + 1) % STACK_WAYS);
    e->nchk = 0; /* rewritten below; empty if the walk fails */
    e->tag = NULL;
    e->anchor_ip = ip;
    e->anchor_sp = sp;
    e->anchor_fp = fp;
    e->cut_lo = cut_lo;
    e->cut_hi = cut_hi;
    check *const chk = e->chk;
    /* fp_chk, fp_word: where the fp value in force was read (-1: the
     * anchor's own register). Its check compares it only once a frame's CFA
     * is computed from it: in code without frame pointers rbp holds data
     * that changes from call to call. */
    int nchk = 0, need_fp = 0, fp_chk = -1, fp_word = 0;
    lw_unw_rule R;
    /* leakwatch's own frames */
    for (int own = 0; lw_is_own_address(ip); own++) {
        R = rule_for(ts, ip);
        if (own == OWN_FRAMES_MAX || R.kind != LW_UNW_STEP) return -1;
        STEP_OR_FAIL(R);
    }
    uintptr_t *const eips = e->ips;
    int n = 0, end, last_nchk = 0;
    for (;;) {
        if (n == max) {
            end = END_MAX;
            /* The last step read a frame that is not kept: not checked. */
            nchk = last_nchk;
            break;
        }
        ips[n] = ip;
        eips[n] = ip;
        n++;
        if (ip - cut_lo < cut_hi - cut_lo) {
            end = END_CUT;
            break;
        }
        R = rule_for(ts, ip);
        if (R.kind == LW_UNW_LAST) {
            end = END_LAST;
            break;
        }
        if (R.kind != LW_UNW_STEP) return -1;
        last_nchk = nchk;
        STEP_OR_FAIL(R);
        if (ip == 0) {
            end = END_ZERO;
            break;
        }
    }
    e->need_fp = need_fp;
    e->end = end;
    e->n = n;
    nchk = compact_checks(chk, nchk, ts->words, &e->npair);
    e->nchk = nchk > 0 ? nchk : -1; /* never 0 for a filled slot */
    out->known = 0;
    out->tag = &e->tag;
    out->cut = end == END_CUT;
    return n;
#else
    return -1;
#endif
}

static void verify_stack(const uintptr_t *ips, int n, int max, uintptr_t cut_lo, uintptr_t cut_hi) {
    uintptr_t other[LW_STACK_MAX];
    uint8_t cut;
    int m = capture_with(reference_backtrace, other, max, cut_lo, cut_hi, &cut);
    atomic_fetch_add_explicit(&n_verified, 1, memory_order_relaxed);
    int i = 0;
    while (i < n && i < m && ips[i] == other[i])
        i++;
    if (i == n && i == m) return;
    atomic_fetch_add_explicit(&n_mismatch, 1, memory_order_relaxed);
    lw_log_once(said,
                "LEAKWATCH_VERIFY_STACKS: a stack differs from %s's at frame %d (%d frames: "
                "%#lx, against %d: %#lx); counted in tracker.stack_mismatches",
                fb_gcc ? "libgcc_s" : fb_name, i, n, i < n ? (unsigned long)ips[i] : 0ul, m,
                i < m ? (unsigned long)other[i] : 0ul);
}

void lw_stack_capture(uintptr_t *ips, int max, uintptr_t cut_lo, uintptr_t cut_hi,
                      lw_stack_info *out) {
    out->n = 0;
    out->cut = out->known = 0;
    out->tag = NULL;
    out->internal = NULL;
    out->cached = NULL;
    if (max > LW_STACK_MAX) max = LW_STACK_MAX;
    if (cut_hi <= cut_lo) cut_lo = cut_hi = 0;
#ifdef LW_ABLATE_unwind
    /* make ablate ABLATE=unwind: a fixed 36-frame stack, not unwound */
    out->n = max < 36 ? max : 36;
    for (int i = 0; i < out->n; i++)
        ips[i] = 0x1000 + 16 * (uintptr_t)i;
    __asm__ volatile("" : : "r"(ips) : "memory");
    return;
#endif
    if (!atomic_load_explicit(&inited, memory_order_acquire)) lw_stack_init();
    if (use_fast) {
        uintptr_t here = (uintptr_t)__builtin_frame_address(0);
        thread_state *ts = state_for_thread(max, here);
        if (ts && !ts->busy && ts->hi) {
            unsigned gen = lw_code_epoch();
            if (gen != ts->gen && !keep_rules) {
                forget_caches(ts);
                ts->gen = gen;
            }
            ts->busy = 1;
            int n = fast_walk(ts, ips, max, cut_lo, cut_hi, out);
            if (n >= 0) {
                out->n = n;
                out->internal = ts;
                if (lw_stack_verify) {
                    lw_stack_ips(out, ips);
                    verify_stack(ips, n, max, cut_lo, cut_hi);
                }
                return;
            }
            ts->busy = 0;
            out->tag = NULL;
            out->known = 0;
            out->cached = NULL;
        }
    }
    atomic_fetch_add_explicit(&n_fallback, 1, memory_order_relaxed);
    out->n = capture_fallback(ips, max, cut_lo, cut_hi, &out->cut);
}

__attribute__((noinline)) static lw_py_cache *py_cache_first(int max) {
    thread_state *ts = state_for_thread(max, (uintptr_t)__builtin_frame_address(0));
    return ts && !ts->busy ? &ts->py : NULL;
}

lw_py_cache *lw_stack_py_cache(int max) {
    if (!use_fast) return NULL;
    /* The thread's state made: no frame of its own (state_for_thread's
     * first call, out of line, makes it). */
    thread_state *ts = tls_state;
    if (__builtin_expect(ts == NULL, 0)) return py_cache_first(max);
    return ts->cap >= max && !ts->busy ? &ts->py : NULL;
}

void lw_stack_done(lw_stack_info *info, void *tag, uint64_t aux) {
    thread_state *ts = info->internal;
    if (!ts) return;
    if (info->tag) {
        *info->tag = tag;
        /* the slot of the tag: aux sits with it */
        stack_slot *e = (stack_slot *)(void *)((char *)info->tag - offsetof(stack_slot, tag));
        e->aux = aux;
    }
    ts->busy = 0;
    info->internal = NULL;
}

void lw_stack_count_mismatch(void) {
    atomic_fetch_add_explicit(&n_mismatch, 1, memory_order_relaxed);
    lw_log_once(said, "LEAKWATCH_VERIFY_STACKS: a known stack was given another stack's call site, "
                      "or cached Python frames differ from a walk; counted in "
                      "tracker.stack_mismatches");
}

void lw_stack_get_stats(lw_stack_stats *out) {
    out->unwinder = unwinder_text;
    out->fallback = atomic_load(&n_fallback);
    out->verified = atomic_load(&n_verified);
    out->mismatches = atomic_load(&n_mismatch);
}

void lw_stack_forget_stats(void) {
    atomic_store(&n_fallback, 0);
    atomic_store(&n_verified, 0);
    atomic_store(&n_mismatch, 0);
}
