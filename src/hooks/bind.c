/* SPDX-License-Identifier: Apache-2.0 */
#include "bind.h"

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
static atomic_ullong seen_adds;
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

typedef struct {
    uintptr_t lo, hi;
    uintptr_t relro_lo, relro_hi; /* the pages the loader makes read-only */
    int slot;                     /* the object's caller slot; -2: not claimed yet */
    int pending;                  /* still being loaded by another thread: not done */
    int *regions_read;            /* per scan */
} object;

/* An object another thread is still loading has its read-only-after-
 * relocation pages (PT_GNU_RELRO) writable: the loader may make them
 * read-only between our look and our store, which would fault. Such an
 * object is left for a later look. */
static int still_loading(object *o) {
    if (!*o->regions_read) {
        lw_got_read_regions();
        *o->regions_read = 1;
    }
    if (o->relro_lo >= o->relro_hi) return 0;
    int prot = lw_got_prot_of(o->relro_lo);
    if (prot < 0 || (prot & PROT_WRITE)) {
        o->pending = 1;
        return 1;
    }
    return 0;
}

static void bind_dlopen_entry(void **slot, void *cur, int jump_slot, object *o);

static int is_our_export(const void *p, const char *name) {
    const char *own = p ? lw_own_export_name(p) : NULL;
    return own && strcmp(own, name) == 0;
}

static void bind_entry(const struct dl_phdr_info *info, const char *name, void **slot, void *cur,
                       int jump_slot, void *arg) {
    (void)info;
    object *o = arg;
    if (name[0] == 'd' && !strcmp(name, "dlopen")) {
        bind_dlopen_entry(slot, cur, jump_slot, o);
        return;
    }
    int f = lw_runtime_index(name);
    if (f < 0) return;
    if (lw_is_own_address((uintptr_t)cur)) {
        /* Our export: bind it. Already one of our entries: done. */
        if (!is_our_export(cur, name)) return;
    } else {
        /* Not bound yet (lazy binding: the entry leads to the object's own
         * PLT), and binding it would reach our export. Anything else leads
         * to someone else's definition: left alone. */
        if (!jump_slot || (uintptr_t)cur < o->lo || (uintptr_t)cur >= o->hi) return;
        if (!is_our_export(lw_real_dlsym(RTLD_DEFAULT, name), name)) return;
    }
    if (o->slot == -2) o->slot = lw_real_object_slot((const void *)o->lo);
    if (o->slot < 0) return; /* the table is full: the export decides */
    void *e = lw_runtime_entry(f, o->slot);
    if (!e || still_loading(o)) return;
    lw_got_write_slot(slot, e);
}

typedef struct {
    unsigned long long adds, subs;
    int regions_read;
    int pending; /* an object was left for a later look */
} scan;

static int is_done(uintptr_t lo) {
    for (size_t i = 0; i < ndone; i++)
        if (done[i] == lo) return 1;
    return 0;
}

static int bind_object(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    scan *s = data;
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
    object o = {.slot = -2, .regions_read = &s->regions_read};
    lw_got_object_span(info, &o.lo, &o.hi);
    if (o.lo >= o.hi || is_done(o.lo)) return 0;
    /* The pages glibc's _dl_protect_relro makes read-only (none when the
     * segment does not span a page boundary). */
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_RELRO) {
            uintptr_t a = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            o.relro_lo = a & ~(page - 1);
            o.relro_hi = (a + info->dlpi_phdr[i].p_memsz) & ~(page - 1);
        }
    lw_got_walk_object(info, bind_entry, &o);
    if (o.pending) {
        s->pending = 1;
        return 0;
    }
    if (ndone == done_cap) {
        size_t nc = done_cap ? done_cap * 2 : 256;
        uintptr_t *d = realloc(done, nc * sizeof *d);
        if (!d) return 0; /* walked again next time: no harm */
        done = d;
        done_cap = nc;
    }
    done[ndone++] = o.lo;
    return 0;
}

static int counts_of(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    unsigned long long *c = data;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1;
}

static void bind_all(void) {
    if (pthread_mutex_trylock(&bind_lock) != 0) return;
    int saved = errno;
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(counts_of, c);
    if (c[1] != seen_subs) {
        ndone = 0;
        seen_subs = c[1];
    }
    scan s = {0};
    dl_iterate_phdr(bind_object, &s);
    /* The count from before the walk: what was added during it is looked at
     * again next time (the list makes that cheap). */
    atomic_store_explicit(&seen_adds, s.pending ? 0 : c[0], memory_order_release);
    errno = saved;
    pthread_mutex_unlock(&bind_lock);
}

void lw_bind_poll(void) {
    if (!atomic_load_explicit(&enabled, memory_order_relaxed)) return;
    unsigned long long c[2] = {0, 0};
    int saved = errno;
    dl_iterate_phdr(counts_of, c);
    errno = saved;
    if (c[0] != atomic_load_explicit(&seen_adds, memory_order_acquire)) bind_all();
}

/* ---- dlopen ----
 * Each object's dlopen entry (where it leads to the C library's dlopen) is
 * rewritten to bind_dlopen, so that a module opened by path has its entries
 * bound before its opener can call through them. glibc's dlopen takes the
 * caller's RUNPATH and $ORIGIN from its return address: a bare name, or one
 * with '$', must reach it as a tail call (our caller's identity), and its
 * objects are bound at the next look (lw_bind_poll). */
typedef void *(*dlopen_fn)(const char *, int);
static _Atomic(dlopen_fn) real_dlopen;

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

static void bind_dlopen_entry(void **slot, void *cur, int jump_slot, object *o) {
    dlopen_fn real = atomic_load_explicit(&real_dlopen, memory_order_relaxed);
    if (!real || cur == (void *)bind_dlopen) return;
    if (cur != (void *)real) {
        if (!jump_slot || (uintptr_t)cur < o->lo || (uintptr_t)cur >= o->hi) return;
        if (lw_real_dlsym(RTLD_DEFAULT, "dlopen") != (void *)real) return;
    }
    if (still_loading(o)) return;
    lw_got_write_slot(slot, (void *)bind_dlopen);
}

static void fork_child(void) {
    pthread_mutex_init(&bind_lock, NULL);
    ndone = 0;
}

/* After the C library's constructors and before the program's: every object
 * loaded at start is relocated by now. */
__attribute__((constructor)) static void bind_init(void) {
    int saved = errno;
    void *main = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    void *p = main ? lw_real_dlsym(main, "cudaMalloc") : NULL;
    if (is_our_export(p, "cudaMalloc") && !lw_real_is_late()) {
        atomic_store(&real_dlopen, (dlopen_fn)lw_real_dlsym(RTLD_NEXT, "dlopen"));
        pthread_atfork(NULL, NULL, fork_child);
        atomic_store(&enabled, 1);
        bind_all();
    }
    errno = saved;
}
