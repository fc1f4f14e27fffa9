/* SPDX-License-Identifier: Apache-2.0 */
#include "real.h"

#include "dl_walk.h"
#include "dynamic.h"
#include "log.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_int late;

void lw_real_set_late(void) {
    atomic_store(&late, 1);
}

int lw_real_is_late(void) {
    return atomic_load_explicit(&late, memory_order_relaxed);
}

int lw_is_main_handle(void *handle) {
    static void *_Atomic main_handle;
    void *h = atomic_load_explicit(&main_handle, memory_order_acquire);
    if (!h) {
        h = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) return 0;
        atomic_store_explicit(&main_handle, h, memory_order_release);
    }
    return handle == h;
}

void *lw_own_symbol(const char *name) {
    static void *_Atomic own;
    void *h = atomic_load_explicit(&own, memory_order_acquire);
    if (!h) {
        Dl_info info;
        if (!dladdr((void *)&lw_own_symbol, &info) || !info.dli_fname) return NULL;
        h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
        if (!h) return NULL;
        void *expected = NULL;
        if (!atomic_compare_exchange_strong(&own, &expected, h)) {
            dlclose(h);
            h = expected;
        }
    }
    return lw_real_dlsym(h, name);
}

/* "Next after us" in the global scope. Preloaded, that is RTLD_NEXT. Loaded
 * late (RTLD_LOCAL, by attach), RTLD_NEXT searches only our own
 * dependencies; the global scope, which does not hold us, is what
 * RTLD_DEFAULT searches first. */
static void *next_global(const char *name) {
    return lw_real_dlsym(
        atomic_load_explicit(&late, memory_order_relaxed) ? RTLD_DEFAULT : RTLD_NEXT, name);
}

/* ---- our own text range ---- */
static uintptr_t own_lo, own_hi;
static atomic_int own_state; /* 0 unknown, 1 known, -1 failed */

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
    uintptr_t probe = (uintptr_t)data, lo, hi;
    lw_dyn_object_span(info, &lo, &hi);
    if (probe >= lo && probe < hi) {
        own_lo = lo;
        own_hi = hi;
        return 1;
    }
    return 0;
}

int lw_is_own_address(uintptr_t addr) {
    int st = atomic_load_explicit(&own_state, memory_order_acquire);
    if (st == 0) {
        /* Racing threads compute the same answer; no lock needed. */
        st = lw_dl_walk(find_own, (void *)(uintptr_t)&lw_is_own_address) ? 1 : -1;
        atomic_store_explicit(&own_state, st, memory_order_release);
    }
    return st == 1 && addr >= own_lo && addr < own_hi;
}

const char *lw_own_export_name(const void *addr) {
    Dl_info info;
    if (!addr || !lw_is_own_address((uintptr_t)addr)) return NULL;
    if (!dladdr(addr, &info) || info.dli_saddr != addr) return NULL;
    return info.dli_sname;
}

/* ---- objects kept loaded ----
 * A pointer leakwatch keeps (a real function behind a wrapper) must stay
 * valid for as long as the process may call it: the object it lies in gets
 * one reference of ours (dlopen with RTLD_NOLOAD takes one and loads
 * nothing), never given back. Without it, the CUDA runtime's dlclose of the
 * driver after a failed start, or a module's dlclose, would leave us calling
 * unmapped code. Lock-free (the table only grows; fork-safe). */
#define KEPT_MAX 256
static uintptr_t kept_base[KEPT_MAX];
static atomic_int kept_ready[KEPT_MAX];
static atomic_int kept_claimed;

int lw_keep_loaded(const void *addr) {
    Dl_info info;
    if (!addr || !dladdr(addr, &info) || !info.dli_fname || !info.dli_fname[0]) return -1;
    uintptr_t base = (uintptr_t)info.dli_fbase;
    if (lw_is_own_address(base)) return 0;
    int n = atomic_load_explicit(&kept_claimed, memory_order_acquire);
    for (int i = 0; i < n && i < KEPT_MAX; i++)
        if (atomic_load_explicit(&kept_ready[i], memory_order_acquire) && kept_base[i] == base)
            return 0;
    void *h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return -1;
    /* Racing threads may both take a reference: one too many, never one
     * too few. A full table only costs more dlopen calls. */
    int i = atomic_fetch_add(&kept_claimed, 1);
    if (i < KEPT_MAX) {
        kept_base[i] = base;
        atomic_store_explicit(&kept_ready[i], 1, memory_order_release);
    }
    return 0;
}

/* ---- symbol versions ----
 * The version a definition was exported under ("libcudart.so.13" for
 * cudaMalloc@@libcudart.so.13), or NULL for an unversioned one, read from the
 * object's dynamic section as the dynamic linker does. */
static const char *symbol_version(const void *addr) {
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    struct link_map *lm = NULL;
    if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) return NULL;
    if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm || !lm->l_ld) return NULL;
    lw_dyn d;
    if (lw_dyn_read(lm->l_addr, lm->l_ld, &d) != 0) return NULL;
    const ElfW(Sym) *symtab = d.symtab;
    const char *strtab = d.strtab;
    const ElfW(Half) *versym = d.versym;
    const char *verdef = d.verdef;
    if (!symtab || !strtab || !versym || !verdef || sym < symtab) return NULL;
    ElfW(Half) v = versym[sym - symtab] & 0x7fff;
    if (v <= 1) return NULL; /* local or base: unversioned */
    for (const char *p = verdef;;) {
        const ElfW(Verdef) *vd = (const ElfW(Verdef) *)p;
        if (vd->vd_ndx == v && !(vd->vd_flags & VER_FLG_BASE)) {
            const ElfW(Verdaux) *aux = (const ElfW(Verdaux) *)(p + vd->vd_aux);
            return strtab + aux->vda_name;
        }
        if (!vd->vd_next) return NULL;
        p += vd->vd_next;
    }
}

/* ---- the real function for a caller ---- */

/* One object that called one of our runtime exports. */
typedef struct {
    uintptr_t lo, hi; /* its mapped span: return addresses in it are its calls */
    void *handle;     /* its dependency tree (our reference); NULL: the program */
    uintptr_t base;   /* load bias and dynamic section: the versions it asks for */
    const ElfW(Dyn) * ld;
    void *_Atomic fn[LW_CALLER_FUNCS];
    atomic_uint guessed; /* bit i: fn[i] is a guess (see guess below) */
} caller_obj;
_Static_assert(LW_CALLER_FUNCS <= 32, "one bit per function in caller_obj.guessed");

#define CALLERS_MAX LW_CALLER_OBJECTS
static caller_obj callers[CALLERS_MAX];
static atomic_int callers_ready[CALLERS_MAX];
static atomic_int callers_claimed;
/* Calls from code in no object (generated code) or past a full table. */
static void *_Atomic anonymous_fn[LW_CALLER_FUNCS];
static atomic_uint anonymous_guessed;
/* Calls whose target was guessed (tracker.guessed_target_calls). */
static atomic_ullong guessed_calls;

struct find_obj {
    uintptr_t addr, lo, hi, base;
    const ElfW(Dyn) * ld;
    const char *name;
    int index, is_program;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data) {
    struct find_obj *f = data;
    uintptr_t lo, hi;
    lw_dyn_object_span(info, &lo, &hi);
    if (f->addr >= lo && f->addr < hi) {
        f->lo = lo;
        f->hi = hi;
        f->base = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; i++)
            if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
                f->ld = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
        f->name = info->dlpi_name;
        f->is_program = f->index == 0; /* the executable comes first */
        return 1;
    }
    f->index++;
    return 0;
}

/* Said once, by whichever caller first finds the table full: the 65th
 * library (the check before the search returned silently, so the message
 * came only from two threads racing for the last slot: it never printed). */
static void say_full(void) {
    lw_log_once(callers_full,
                "more than %d libraries call the CUDA runtime; calls from the others go to "
                "the runtime in the global scope (else to a guessed one, counted in "
                "tracker.guessed_target_calls)",
                CALLERS_MAX);
}

static caller_obj *add_caller(uintptr_t ra) {
    /* A full table stays full: no search, no reference taken, per call. */
    if (atomic_load_explicit(&callers_claimed, memory_order_relaxed) >= CALLERS_MAX) {
        say_full();
        return NULL;
    }
    struct find_obj f = {.addr = ra};
    if (!lw_dl_walk(find_object, &f)) return NULL;
    int i = atomic_fetch_add(&callers_claimed, 1);
    if (i >= CALLERS_MAX) {
        atomic_store(&callers_claimed, CALLERS_MAX);
        say_full();
        return NULL;
    }
    void *h = NULL;
    /* The program's own scope is the global one: RTLD_NEXT answers for it. */
    if (!f.is_program && f.name && f.name[0] && !lw_is_own_address(ra))
        h = dlopen(f.name, RTLD_LAZY | RTLD_NOLOAD);
    callers[i].lo = f.lo;
    callers[i].hi = f.hi;
    callers[i].handle = h;
    callers[i].base = f.base;
    callers[i].ld = f.ld;
    atomic_store_explicit(&callers_ready[i], 1, memory_order_release);
    return &callers[i];
}

/* Which of the two definitions the dynamic linker would bind the caller's
 * reference to, given that next comes first in the global scope. The
 * caller's own tables say which version it asks for: an unversioned
 * reference takes the first definition (next); a versioned one takes the
 * first of that version (cudaMalloc@libcudart.so.12 does not satisfy a
 * reference to cudaMalloc@libcudart.so.13); an unversioned definition (an
 * interposer) satisfies every reference. Where the caller has no reference
 * of its own (it looked the name up), the version of its own runtime is
 * taken for the one it wants. */
static void *choose(const caller_obj *c, const char *name, void *local, void *next) {
    if (!local) return next;
    if (!next || next == local) return local;
    const char *vn = symbol_version(next);
    if (!vn) return next;
    const char *vl = symbol_version(local);
    lw_dyn d;
    const char *want = NULL;
    int asks = c && c->ld && lw_dyn_read(c->base, c->ld, &d) == 0
                   ? lw_dyn_required_version(&d, name, &want)
                   : -1;
    if (asks == 0) return next;
    if (asks == 1) {
        if (strcmp(vn, want) == 0) return next;
        if (!vl || strcmp(vl, want) == 0) return local;
    }
    if (vl && strcmp(vl, vn) != 0) return local;
    return next;
}

static void *resolve(const caller_obj *c, const char *name) {
    void *next = next_global(name);
    if (next && lw_is_own_address((uintptr_t)next)) next = NULL;
    void *local = NULL;
    if (c && c->handle) {
        local = lw_real_dlsym(c->handle, name);
        /* The caller's own definition is not its target: an interposer
         * loaded before us that forwards to us would be called again. */
        if (local && (lw_is_own_address((uintptr_t)local) ||
                      ((uintptr_t)local >= c->lo && (uintptr_t)local < c->hi)))
            local = NULL;
    }
    void *p = choose(c, name, local, next);
    if (p) lw_keep_loaded(p);
    return p;
}

/* ---- when the caller's own scope has no definition ----
 * The return address names the caller only when the call was a call. A tail
 * call (`jmp cudaMalloc@PLT`, what -O2 makes of `return cudaMalloc(p, n);`)
 * leaves the address of the module's caller; libffi (ctypes, cffi), generated
 * code and trampolines call from code that never referred to the function at
 * all. When that code's scope holds no definition, the job did not make a
 * call that fails: the function exists somewhere, and an error of ours would
 * fail the job's allocation. So the target is guessed: the global scope's
 * definition (resolve tried it), else the one object loaded that defines the
 * name, else the first of them in load order. Each call that reaches a
 * guessed target is counted (tracker.guessed_target_calls). */
struct find_def {
    const char *name;
    uintptr_t skip_lo, skip_hi; /* the caller itself */
    int seen_own, late, count;
    void *first;
    char first_name[256];
};

static int find_definition(struct dl_phdr_info *info, size_t size, void *data) {
    struct find_def *f = data;
    uintptr_t lo, hi;
    lw_dyn_object_span(info, &lo, &hi);
    if (lo >= hi) return 0;
    if (lw_is_own_address(lo)) {
        f->seen_own = 1;
        return 0;
    }
    /* Preloaded, what comes before us in the global scope (the program, and
     * interposers preloaded before us, which forward to the next definition:
     * ours) is never a target. Nor is the caller's own definition: an
     * interposer that forwards to us would be called again. */
    if (!f->seen_own && !f->late) return 0;
    if (f->skip_hi && lo < f->skip_hi && hi > f->skip_lo) return 0;
    const ElfW(Dyn) *ld = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            ld = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    lw_dyn d;
    if (!ld || lw_dyn_read(info->dlpi_addr, ld, &d) != 0) return 0;
    void *p = lw_dyn_defined(&d, f->name);
    if (!p || lw_is_own_address((uintptr_t)p)) return 0;
    if (!f->first) {
        f->first = p;
        snprintf(f->first_name, sizeof f->first_name, "%s",
                 info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "the program");
    }
    f->count++;
    return 0;
}

/* Once per process, whichever guess comes first. */
static void say_guess(const char *name, const char *target, const char *how) {
    lw_log_once(guessed_once,
                "a call of %s came from code whose own libraries hold no CUDA runtime (a tail "
                "call, a call through libffi/ctypes, generated code): passed to %s, %s; the "
                "report's tracker.guessed_target_calls counts such calls",
                name, target, how);
}

static void *guess(const caller_obj *c, const char *name) {
    (void)lw_is_own_address(0); /* our span known before the walk */
    struct find_def f = {.name = name, .late = lw_real_is_late()};
    if (c) {
        f.skip_lo = c->lo;
        f.skip_hi = c->hi;
    }
    lw_dl_walk(find_definition, &f);
    if (!f.first) return NULL;
    lw_keep_loaded(f.first);
    say_guess(name, f.first_name,
              f.count == 1 ? "the only library that defines it"
                           : "the first of the libraries that define it");
    return f.first;
}

/* The calling thread's last answer of the search below, by return address:
 * calls through libffi (ctypes, cffi) come from one address, call after call.
 * Exact: entries never change once ready and are only appended, so the
 * first one holding an address stays the first. One word, (address << 7) |
 * (index + 1), so that a signal handler that records in between sees either
 * the old pair or the new one (user addresses are below 2^57). */
static __thread _Atomic uint64_t last_call __attribute__((tls_model("initial-exec")));
_Static_assert(CALLERS_MAX < 127, "caller index + 1 in 7 bits");

__attribute__((noinline)) static caller_obj *caller_search(uintptr_t a) {
    int n = atomic_load_explicit(&callers_claimed, memory_order_acquire);
    if (n > CALLERS_MAX) n = CALLERS_MAX;
    caller_obj *c = NULL;
    for (int i = 0; i < n; i++) {
        if (!atomic_load_explicit(&callers_ready[i], memory_order_acquire)) continue;
        if (a >= callers[i].lo && a < callers[i].hi) {
            c = &callers[i];
            break;
        }
    }
    if (!c) return add_caller(a);
    if (a >> 57 == 0)
        atomic_store_explicit(&last_call, (uint64_t)a << 7 | (uint64_t)(c - callers + 1),
                              memory_order_relaxed);
    return c;
}

/* The caller's entry: the thread's last answer when the address is the
 * same (inline: every call reached by address asks), else the search. */
static inline caller_obj *caller_of(uintptr_t a) {
    uint64_t last = atomic_load_explicit(&last_call, memory_order_relaxed);
    if (__builtin_expect(last >> 7 == a && (last & 127) != 0, 1)) return &callers[(last & 127) - 1];
    return caller_search(a);
}

/* The first call of a function for a caller: its definition, found once
 * and kept in slot (and the call counted, as for_object does). Out of line,
 * so that the path of every later call (one load) sets up no frame for it. */
__attribute__((noinline, cold)) static void *resolve_into(caller_obj *c, int index,
                                                          const char *name, void *_Atomic *slot,
                                                          atomic_uint *guessed, int count) {
    void *p = resolve(c, name);
    /* Code in no object (or past a full table): the global scope's
     * definition is a guess too. */
    int g = !c;
    if (p && !c) {
        Dl_info info;
        say_guess(name,
                  dladdr(p, &info) && info.dli_fname && info.dli_fname[0] ? info.dli_fname
                                                                          : "the program",
                  "the global scope's definition");
    }
    if (!p) {
        p = guess(c, name);
        g = 1;
    }
    if (!p) return NULL;
    /* The mark before the pointer: who sees the one sees the other. */
    if (g) atomic_fetch_or_explicit(guessed, 1u << index, memory_order_relaxed);
    atomic_store_explicit(slot, p, memory_order_release);
    if (count && (atomic_load_explicit(guessed, memory_order_relaxed) >> index & 1u))
        atomic_fetch_add_explicit(&guessed_calls, 1, memory_order_relaxed);
    return p;
}

static inline void *for_object(caller_obj *c, int index, const char *name, int count) {
    void *_Atomic *slot = c ? &c->fn[index] : &anonymous_fn[index];
    atomic_uint *guessed = c ? &c->guessed : &anonymous_guessed;
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    /* A tail call: the common path keeps no registers across a call. */
    if (__builtin_expect(!p, 0)) return resolve_into(c, index, name, slot, guessed, count);
    if (count && (atomic_load_explicit(guessed, memory_order_relaxed) >> index & 1u))
        atomic_fetch_add_explicit(&guessed_calls, 1, memory_order_relaxed);
    return p;
}

static void *for_caller(const void *ra, int index, const char *name, int count) {
    if (index < 0 || index >= LW_CALLER_FUNCS) return NULL;
    return for_object(caller_of((uintptr_t)ra), index, name, count);
}

int lw_real_object_slot(const void *addr) {
    caller_obj *c = caller_of((uintptr_t)addr);
    return c ? (int)(c - callers) : -1;
}

/* Slot k was claimed (and made ready) before any entry of it was bound: a
 * slot not ready is only possible for a bad k, which falls back to the
 * global scope's definition, counted as a guess. */
static void *for_slot(int k, int index, const char *name, int count) {
    if (index < 0 || index >= LW_CALLER_FUNCS) return NULL;
    caller_obj *c =
        k >= 0 && k < CALLERS_MAX && atomic_load_explicit(&callers_ready[k], memory_order_acquire)
            ? &callers[k]
            : NULL;
    return for_object(c, index, name, count);
}

void *lw_real_for_object(int k, int index, const char *name) {
    return for_slot(k, index, name, 1);
}

void *lw_real_for_object_nocount(int k, int index, const char *name) {
    return for_slot(k, index, name, 0);
}

void *lw_real_for_caller(const void *ra, int index, const char *name) {
    return for_caller(ra, index, name, 1);
}

void *lw_real_for_caller_nocount(const void *ra, int index, const char *name) {
    return for_caller(ra, index, name, 0);
}

uint64_t lw_real_guessed_calls(void) {
    return atomic_load_explicit(&guessed_calls, memory_order_relaxed);
}

void *lw_default_for_caller(const void *ra, const char *name) {
    void *next = next_global(name);
    if (next && !lw_is_own_address((uintptr_t)next)) return next;
    const caller_obj *c = caller_of((uintptr_t)ra);
    if (!c || !c->handle) return NULL;
    void *local = lw_real_dlsym(c->handle, name);
    return local && !lw_is_own_address((uintptr_t)local) ? local : NULL;
}

/* ---- the driver ---- */
static void *_Atomic driver;

void *lw_driver_handle(void) {
    void *h = atomic_load_explicit(&driver, memory_order_acquire);
    if (h) return h;
    /* RTLD_NOLOAD never loads anything new: a process that has no driver
     * loaded keeps having none. The reference is ours for good. */
    h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h) return NULL;
    void *expected = NULL;
    if (!atomic_compare_exchange_strong(&driver, &expected, h)) {
        dlclose(h); /* another thread's reference stands */
        return expected;
    }
    return h;
}

void *lw_driver_symbol(const char *versioned_name) {
    void *h = lw_driver_handle();
    if (!h) return NULL;
    void *p = lw_real_dlsym(h, versioned_name);
    return p && !lw_is_own_address((uintptr_t)p) ? p : NULL;
}

void *lw_driver_next(void *_Atomic *slot, const char *name) {
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (p) return p;
    p = next_global(name);
    if (p && lw_is_own_address((uintptr_t)p)) p = NULL;
    if (p)
        lw_keep_loaded(p);
    else
        p = lw_driver_symbol(name);
    if (p) atomic_store_explicit(slot, p, memory_order_release);
    return p;
}
