/* SPDX-License-Identifier: Apache-2.0 */
/* dlsym: where libraries that load libcuda.so.1 themselves (the CUDA runtime,
 * static or shared, and PyTorch before 2.5) find the driver's functions.
 *
 * Every other lookup must be exactly glibc's. For RTLD_NEXT that means glibc
 * must see our caller's return address, not ours (RTLD_NEXT is "next after the
 * object that called dlsym"): so this function ends in a tail call to the real
 * dlsym, compiled without instrumentation that could prevent one. Lookups
 * with RTLD_NEXT are never wrapped: they come from other interposers, which
 * want the next function, not ours. */
#include "hooks.h"
#include "real.h"

#include <dlfcn.h>
#include <string.h>

typedef void *(*dlsym_fn)(void *, const char *);

LW_EXPORT __attribute__((optimize("optimize-sibling-calls"), no_sanitize_address,
                         no_sanitize("undefined"), no_sanitize("thread"))) void *
dlsym(void *handle, const char *name) {
    /* glibc declares name nonnull; a buggy caller may still pass NULL, and
     * that must reach glibc, not crash in here. Hide it from the optimiser. */
    const char *n = name;
    __asm__("" : "+r"(n));
    /* Attached (RTLD_LOCAL), our public API is not in the global scope; a
     * lookup there made after the attach (the Python package's
     * ctypes.CDLL(None), which is dlopen(NULL)) finds it as it would
     * preloaded. */
    if (n && n[0] == 'l' && !strncmp(n, "leakwatch_", 10) && lw_real_is_late() &&
        (handle == RTLD_DEFAULT || lw_is_main_handle(handle)))
        return lw_own_symbol(n);
    if (handle == RTLD_NEXT || !n || !lw_maybe_cuda_name(n)) {
        dlsym_fn real = (dlsym_fn)lw_real_dlsym_function();
        return real(handle, name); /* tail call: keeps the caller's identity */
    }
    const void *ra = __builtin_return_address(0);
    void *fn = lw_real_dlsym(handle, name);
    if (fn && lw_is_own_address((uintptr_t)fn)) {
        /* Our own export answered (RTLD_DEFAULT finds us first). Without us
         * the caller would get the next definition in the global scope, or
         * one from its own dependencies, or nothing: programs probe for CUDA
         * this way, and must see what they would see without us. */
        void *real = lw_default_for_caller(ra, name);
        if (!real) return NULL;
        /* Our export, when called from there, reaches that same function
         * (and records): hand it out; else the real one itself. */
        return lw_export_reaches(ra, name, real) ? fn : real;
    }
    if (fn && n[0] == 'c' && n[1] == 'u' && n[2] == 'd') return lw_runtime_bind(name, fn);
    return lw_wrap_by_name(name, fn);
}
