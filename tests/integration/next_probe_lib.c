/* SPDX-License-Identifier: Apache-2.0 */
/* Preloaded after libleakwatch.so by a test: an interposer of getuid that
 * finds the real one with dlsym(RTLD_NEXT). If leakwatch's dlsym lost the
 * caller's identity, "next" would be this library again and getuid would
 * recurse until the stack overflows. */
#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

__attribute__((visibility("default"))) uid_t getuid(void) {
    uid_t (*next)(void) = (uid_t(*)(void))dlsym(RTLD_NEXT, "getuid");
    return next ? next() : (uid_t)-1;
}
