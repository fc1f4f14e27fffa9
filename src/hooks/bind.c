/* SPDX-License-Identifier: Apache-2.0 */
#include "bind.h"

#include "dl_walk.h"
#include "dynamic.h"
#include "got.h"
#include "real.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* 1 once the constructor found our exports first in the global scope
 * (preloaded); never set when loaded late. */
static atomic_int enabled;
/* The loader's count of objects added and removed when last bound. */
atomic_ullong lw_bind_seen_adds;
static unsigned long long seen_subs;
/* Objects already walked (first mapped address); cleared when any object was
 * unloaded since (an address may be reused). Under bind_lock. */
static uintptr_t *done;
static size_t ndone, done_cap;
/* Taken with trylock only: a thread that finds it held leaves the binding to
 * the holder, so no thread ever waits on it (a constructor running under the
 * loader's lock may call an export while another thread binds and asks the
 * loader for a reference). */
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;

/* What the entries are compared with, found before the walk: the walk runs
 * under the loader's list lock (dl_iterate_phdr), where nothing may ask the
 * loader anything (dladdr, dlsym and dlopen take its load lock, which a
 * dlopen in another thread holds while it waits for the list lock). */
#define MAX_F 32
/* Every runtime name of hook_list.h has an index below LW_CALLER_FUNCS
 * (runtime.c), so below MAX_F. */
_Static_assert(LW_CALLER_FUNCS <= MAX_F, "raise MAX_F");
static const lw_bind_runtime *runtime; /* runtime.c's names and entries */
static void *exports[MAX_F];           /* our export of each wrapped runtime name */
static int nexports;
typedef void *(*dlopen_fn)(const char *, int);
static _Atomic(dlopen_fn) real_dlopen;
static void *bind_dlopen(const char *file, int mode);

typedef struct {
    void **slot;
    void *cur;
    int f; /* the runtime name's index; -1: dlopen */
} want;

/* One object with entries to write, as the walk found it. */
typedef struct {
    char *name; /* NULL: the program */
    uintptr_t addr, lo, hi, relro_lo, relro_hi;
    const void *ld;
    want *w;
    size_t nw, cap;
} found;

typedef struct {
    int global_ours[MAX_F]; /* RTLD_DEFAULT's NAME is our export */
    int global_dlopen;      /* RTLD_DEFAULT's dlopen is the C library's */
    found *objs;
    size_t nobjs, cap;
    found *cur; /* the object being walked */
    int index, failed;
} scan;

static int is_done(uintptr_t lo) {
    for (size_t i = 0; i < ndone; i++)
        if (done[i] == lo) return 1;
    return 0;
}

static void mark_done(uintptr_t lo) {
    if (ndone == done_cap) {
        size_t nc = done_cap ? done_cap * 2 : 256;
        uintptr_t *d = realloc(done, nc * sizeof *d);
        if (!d) return; /* walked again next time: no harm */
        done = d;
        done_cap = nc;
    }
    done[ndone++] = lo;
}

static void add_want(scan *s, void **slot, void *cur, int f) {
    found *o = s->cur;
    if (o->nw == o->cap) {
        size_t nc = o->cap ? o->cap * 2 : 16;
        want *w = realloc(o->w, nc * sizeof *w);
        if (!w) {
            s->failed = 1;
            return;
        }
        o->w = w;
        o->cap = nc;
    }
    o->w[o->nw++] = (want){slot, cur, f};
}

/* Under the list lock: decides from the tables only. */
static void visit_entry(const struct dl_phdr_info *info, const char *name, void **slot, void *cur,
                        int jump_slot, void *arg) {
    (void)info;
    scan *s = arg;
    found *o = s->cur;
    /* Not bound yet (lazy binding: the entry leads to the object's own
     * PLT): bound when binding it would reach what we replace. */
    int lazy = jump_slot && (uintptr_t)cur >= o->lo && (uintptr_t)cur < o->hi;
    if (name[0] == 'd' && !strcmp(name, "dlopen")) {
        dlopen_fn real = atomic_load_explicit(&real_dlopen, memory_order_relaxed);
        if (real && cur != (void *)bind_dlopen &&
            (cur == (void *)real || (lazy && s->global_dlopen)))
            add_want(s, slot, cur, -1);
        return;
    }
    int f = runtime->index(name);
    if (f < 0 || f >= nexports || !exports[f]) return;
    /* Our export: bind it. One of our entries already, or another
     * interposer's definition: left alone. */
    if (cur == exports[f] || (lazy && s->global_ours[f])) add_want(s, slot, cur, f);
}

static int walk_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    scan *s = data;
    int index = s->index++;
    found o = {.addr = info->dlpi_addr};
    lw_dyn_object_span(info, &o.lo, &o.hi);
    if (o.lo >= o.hi || is_done(o.lo)) return 0;
    if (index != 0 && !(info->dlpi_name && info->dlpi_name[0])) return 0;
    /* The pages glibc's _dl_protect_relro makes read-only (none when the
     * segment does not span a page boundary). */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_GNU_RELRO) {
            uintptr_t a = info->dlpi_addr + ph->p_vaddr;
            o.relro_lo = a & ~(page - 1);
            o.relro_hi = (a + ph->p_memsz) & ~(page - 1);
        }
        if (ph->p_type == PT_DYNAMIC) o.ld = (const void *)(info->dlpi_addr + ph->p_vaddr);
    }
    s->cur = &o;
    lw_got_walk_object(info, visit_entry, s);
    s->cur = NULL;
    if (!o.nw) {
        mark_done(o.lo);
        return 0;
    }
    if (index != 0) o.name = strdup(info->dlpi_name);
    if (s->nobjs == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 16;
        found *f = realloc(s->objs, nc * sizeof *f);
        if (!f)
            nc = 0;
        else
            s->objs = f;
        if (nc) s->cap = nc;
    }
    if ((index != 0 && !o.name) || s->nobjs == s->cap) {
        free(o.name);
        free(o.w);
        s->failed = 1;
        return 0;
    }
    s->objs[s->nobjs++] = o;
    return 0;
}

/* Outside the list lock: the object is held (a reference of ours) and is
 * the one walked (same load address and dynamic section) before any entry
 * of it is written. 1: done; 0: left for a later look. */
static int write_object(found *o, int *regions_read) {
    void *h = NULL;
    if (o->name) {
        h = dlopen(o->name, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) return 0;
        struct link_map *lm = NULL;
        if (dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm || lm->l_addr != o->addr ||
            (const void *)lm->l_ld != o->ld) {
            dlclose(h);
            return 0;
        }
    }
    if (!*regions_read) {
        lw_got_read_regions();
        *regions_read = 1;
    }
    /* Another thread still loading it has its RELRO pages writable: the
     * loader may make them read-only between our look and our store, which
     * would fault. */
    int ok = 1;
    if (o->relro_lo < o->relro_hi) {
        int prot = lw_got_prot_of(o->relro_lo);
        if (prot < 0 || (prot & PROT_WRITE)) ok = 0;
    }
    int k = -2;
    for (size_t i = 0; ok && i < o->nw; i++) {
        want *w = &o->w[i];
        if (__atomic_load_n(w->slot, __ATOMIC_ACQUIRE) != w->cur) continue;
        void *value = NULL;
        if (w->f < 0) {
            value = (void *)bind_dlopen;
        } else {
            if (k == -2) k = lw_real_object_slot((const void *)o->lo);
            if (k < 0) continue; /* the table is full: the export decides */
            value = runtime->entry(w->f, k);
        }
        if (value) lw_got_write_slot(w->slot, value);
    }
    if (h) dlclose(h);
    return ok;
}

static int counts_of(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    unsigned long long *c = data;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

/* ---- the loader's count of objects added, read without its lock ----
 * dl_iterate_phdr hands out glibc's count of objects ever added
 * (GL(dl_load_adds), dlpi_adds), but only under the loader's recursive lock:
 * about 185 instructions, a poll per call of an export (ctypes, cffi: 370 a
 * cudaMalloc + cudaFree pair). The count itself is a word of ld.so's
 * _rtld_global, never freed, bumped by every load, whoever asked for it
 * (dlopen from code not bound yet, glibc's own loads, a dependency). Its
 * offset there differs between glibc versions, so it is found by value:
 * `lw_bind_cand` holds every 8-byte word of _rtld_global that has equalled dlpi_adds
 * at each bind since the first (read under the loader's lock, in the
 * dl_iterate_phdr callback, where the count is exactly dlpi_adds); the true
 * count is always among them. lw_bind_poll skips the lock when every one of
 * them still holds lw_bind_seen_adds: a load changes the true one, so nothing
 * loaded is missed; a word that merely matched only sends a poll the slow
 * way. No candidates (no _rtld_global: another C library, or more than
 * MAX_CAND matches so far): every poll takes the slow way, as before. */
#define MAX_CAND LW_BIND_MAX_CAND
_Atomic(const unsigned long long *) lw_bind_cand[MAX_CAND];
atomic_int lw_bind_ncand;
static const unsigned long long *rtld_lo; /* _rtld_global's words, [lo, hi) */
static size_t rtld_words;

static void find_rtld_global(void) {
    void *g = lw_real_dlsym(RTLD_DEFAULT, "_rtld_global");
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!g || !dladdr1(g, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) return;
    if (sym->st_size < sizeof(unsigned long long) || sym->st_size > 65536) return;
    uintptr_t a = ((uintptr_t)g + 7) & ~(uintptr_t)7;
    size_t end = (uintptr_t)g + sym->st_size;
    if (a >= end) return;
    rtld_lo = (const unsigned long long *)a;
    rtld_words = (end - a) / sizeof(unsigned long long);
}

typedef struct {
    unsigned long long adds, subs;
} counts;

/* Under the loader's lock (dl_iterate_phdr): the counts, and the candidates
 * narrowed to the words that hold dlpi_adds now (all of _rtld_global's the
 * first time, and whenever none is left). Only bind_all writes `lw_bind_cand`
 * (under bind_lock); a poll reading a shorter list meanwhile still
 * compares the true count. */
static int counts_and_cand(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    counts *c = data;
    c->adds = info->dlpi_adds;
    c->subs = info->dlpi_subs;
    if (!rtld_lo) return 1;
    int n = atomic_load_explicit(&lw_bind_ncand, memory_order_relaxed), k = 0;
    const unsigned long long *keep[MAX_CAND];
    for (int i = 0; i < n; i++) {
        const unsigned long long *w = atomic_load_explicit(&lw_bind_cand[i], memory_order_relaxed);
        if (__atomic_load_n(w, __ATOMIC_RELAXED) == c->adds) keep[k++] = w;
    }
    if (!k) {
        for (size_t i = 0; i < rtld_words; i++) {
            if (__atomic_load_n(&rtld_lo[i], __ATOMIC_RELAXED) != c->adds) continue;
            if (k == MAX_CAND) {
                k = 0; /* too many to compare at each call */
                break;
            }
            keep[k++] = &rtld_lo[i];
        }
    }
    /* Shrink first, so that a concurrent poll never compares fewer words
     * than are valid, then write the list, then publish its length. */
    atomic_store_explicit(&lw_bind_ncand, 0, memory_order_release);
    for (int i = 0; i < k; i++)
        atomic_store_explicit(&lw_bind_cand[i], keep[i], memory_order_relaxed);
    /* lw_bind_poll (bind.h) compares two words when there are one or two. */
    if (k == 1) atomic_store_explicit(&lw_bind_cand[1], keep[0], memory_order_relaxed);
    atomic_store_explicit(&lw_bind_ncand, k, memory_order_release);
    return 1;
}

/* 1: every candidate still holds lw_bind_seen_adds (nothing loaded since). */
static inline int nothing_added(void) {
    int n = atomic_load_explicit(&lw_bind_ncand, memory_order_acquire);
    if (!n) return 0;
    unsigned long long seen = atomic_load_explicit(&lw_bind_seen_adds, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        const unsigned long long *w = atomic_load_explicit(&lw_bind_cand[i], memory_order_relaxed);
        if (__atomic_load_n(w, __ATOMIC_ACQUIRE) != seen) return 0;
    }
    return 1;
}

static void bind_all(void) {
    if (pthread_mutex_trylock(&bind_lock) != 0) return;
    int saved = errno;
    counts c = {0, 0};
    lw_dl_walk(counts_and_cand, &c);
    if (c.subs != seen_subs) {
        ndone = 0;
        seen_subs = c.subs;
    }
    scan s = {0};
    for (int f = 0; f < nexports; f++)
        s.global_ours[f] =
            exports[f] && lw_real_dlsym(RTLD_DEFAULT, runtime->name(f)) == exports[f];
    dlopen_fn real = atomic_load_explicit(&real_dlopen, memory_order_relaxed);
    s.global_dlopen = real && lw_real_dlsym(RTLD_DEFAULT, "dlopen") == (void *)real;
    lw_dl_walk(walk_object, &s);
    int pending = s.failed, regions_read = 0;
    for (size_t i = 0; i < s.nobjs; i++) {
        if (write_object(&s.objs[i], &regions_read))
            mark_done(s.objs[i].lo);
        else
            pending = 1;
        free(s.objs[i].name);
        free(s.objs[i].w);
    }
    free(s.objs);
    /* The count from before the walk: what was added during it is looked at
     * again next time (the list makes that cheap); so is everything while
     * an object was left for later. */
    atomic_store_explicit(&lw_bind_seen_adds, pending ? 0 : c.adds, memory_order_release);
    errno = saved;
    pthread_mutex_unlock(&bind_lock);
}

/* lw_bind_poll (bind.h) found a candidate changed, or none to compare. */
void lw_bind_poll_slow(void) {
    if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return;
    if (nothing_added()) return;
    unsigned long long c[2] = {0, 0};
    int saved = errno;
    lw_dl_walk(counts_of, c);
    errno = saved;
    if (c[0] != atomic_load_explicit(&lw_bind_seen_adds, memory_order_acquire)) bind_all();
}

/* ---- dlopen ----
 * Each object's dlopen entry (where it leads to the C library's dlopen) is
 * rewritten to bind_dlopen, so that a module opened by path has its entries
 * bound before its opener can call through them. glibc's dlopen takes the
 * caller's RUNPATH and $ORIGIN from its return address: a bare name, or one
 * with '$', must reach it as a tail call (our caller's identity), and its
 * objects are bound at the next look (lw_bind_poll). */
#if defined(__has_attribute)
#if __has_attribute(musttail)
#define LW_MUSTTAIL __attribute__((musttail))
#endif
#endif
#ifndef LW_MUSTTAIL
#define LW_MUSTTAIL
#endif

__attribute__((optimize("optimize-sibling-calls"), noinline)) static void *
bind_dlopen(const char *file, int mode) {
    dlopen_fn real = atomic_load_explicit(&real_dlopen, memory_order_relaxed);
    const char *f = file;
    __asm__("" : "+r"(f));
    if (!f || !strchr(f, '/') || strchr(f, '$') || (mode & RTLD_NOLOAD)) LW_MUSTTAIL
    return real(file, mode);
    void *h = real(file, mode);
    if (h) lw_bind_poll();
    return h;
}

static void fork_child(void) {
    pthread_mutex_init(&bind_lock, NULL);
    ndone = 0;
}

void lw_bind_start(const lw_bind_runtime *rt) {
    int saved = errno;
    runtime = rt;
    void *main = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    void *p = main ? lw_real_dlsym(main, "cudaMalloc") : NULL;
    if (p && p == lw_own_symbol("cudaMalloc") && !lw_real_is_late()) {
        (void)lw_is_own_address(0); /* our span known before any walk */
        for (int f = 0; f < MAX_F && rt->name(f); f++) {
            exports[f] = lw_own_symbol(rt->name(f));
            nexports = f + 1;
        }
        atomic_store(&real_dlopen, (dlopen_fn)lw_real_dlsym(RTLD_NEXT, "dlopen"));
        pthread_atfork(NULL, NULL, fork_child);
        find_rtld_global();
        atomic_store(&enabled, 1);
        bind_all();
    }
    errno = saved;
}
