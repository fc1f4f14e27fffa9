#include "real.h"

#include "log.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

typedef void *(*dlsym_fn)(void *, const char *);
static _Atomic(dlsym_fn) real_dlsym_fn;

static void *no_dlsym(void *handle, const char *name) {
    return NULL;
}

/* Runs inside our dlsym, which a sanitizer runtime calls before it has set
 * itself up: no instrumentation here. */
__attribute__((no_sanitize_address, no_sanitize("undefined"), no_sanitize("thread"))) dlsym_fn
lw_real_dlsym_function(void) {
    dlsym_fn fn = atomic_load_explicit(&real_dlsym_fn, memory_order_acquire);
    if (!fn) {
        /* dlvsym is not interposed, so this cannot recurse. */
        fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!fn) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
        if (!fn) return no_dlsym;
        atomic_store_explicit(&real_dlsym_fn, fn, memory_order_release);
    }
    return fn;
}

void *lw_real_dlsym(void *handle, const char *name) {
    return lw_real_dlsym_function()(handle, name);
}

void *lw_real_next(void *_Atomic *slot, const char *name) {
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (p) return p;
    p = lw_real_dlsym(RTLD_NEXT, name);
    if (p && lw_is_own_address((uintptr_t)p)) p = NULL;
    if (p) atomic_store_explicit(slot, p, memory_order_release);
    return p;
}

/* ---- our own text range ---- */
static uintptr_t own_lo, own_hi;
static atomic_int own_state; /* 0 unknown, 1 known, -1 failed */

static int find_own(struct dl_phdr_info *info, size_t size, void *data) {
    uintptr_t probe = (uintptr_t)data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo) lo = a;
        if (a + ph->p_memsz > hi) hi = a + ph->p_memsz;
    }
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
        st = dl_iterate_phdr(find_own, (void *)(uintptr_t)&lw_is_own_address) ? 1 : -1;
        atomic_store_explicit(&own_state, st, memory_order_release);
    }
    return st == 1 && addr >= own_lo && addr < own_hi;
}

/* ---- driver functions we call ourselves ---- */
static void *_Atomic drv_ctx_get_device;
static void *_Atomic drv_mem_get_info;

static void *_Atomic *driver_slot(const char *name) {
    if (strcmp(name, "cuCtxGetDevice") == 0) return &drv_ctx_get_device;
    if (strcmp(name, "cuMemGetInfo_v2") == 0) return &drv_mem_get_info;
    return NULL;
}

void lw_note_driver_symbol(const char *versioned_name, void *fn) {
    void *_Atomic *slot = driver_slot(versioned_name);
    void *expected = NULL;
    if (slot && fn) atomic_compare_exchange_strong(slot, &expected, fn);
}

void *lw_driver_symbol(const char *versioned_name) {
    void *_Atomic *slot = driver_slot(versioned_name);
    if (!slot) return NULL;
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (p) return p;
    /* libcuda.so.1 is loaded by now (we are answering one of its calls);
     * RTLD_NOLOAD never loads anything new. */
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h) {
        p = lw_real_dlsym(h, versioned_name);
        dlclose(h);
    }
    if (p) lw_note_driver_symbol(versioned_name, p);
    return p;
}
