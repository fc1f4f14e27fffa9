/* SPDX-License-Identifier: Apache-2.0 */
/* Calls CUDA through tail-calling modules (tests/modules/mod_tail.c) opened
 * RTLD_LOCAL, from a program whose global scope has no CUDA library:
 *   dl_tailcall N SIZE MODULE[:local|global|bare|late|closed] [MODULE...]
 * For each module (in ../lib beside the program, opened in order), then for
 * each in turn: N blocks of SIZE bytes kept and CHURN more freed, through the
 * module's tail-calling wrappers of cudaMalloc/cudaFree and of
 * cuMemAlloc_v2/cuMemFree_v2, and through the cudaMalloc/cudaFree that dlsym
 * on the module's handle finds; one pinned host block, allocated and freed
 * through the module; N more through generated code (an anonymous executable
 * mapping) calling the module's wrapper. Prints one line per module: whether
 * its wrapper is a
 * jump, the first error of each path (0: all succeeded), which runtime the
 * module is linked to and how many allocations reached it. The tests compare
 * the lines with and without leakwatch. MODULE:late is opened by bare name
 * when its turn comes, after the calls through the modules before it;
 * MODULE:closed (a library without CUDA references, which nothing else
 * holds) is opened by path when its turn comes and closed again at once,
 * and prints nothing. So "A B:closed C:late" loads C behind leakwatch's back
 * with the loader's count of loaded objects back where it was at the last
 * bind (B's dlopen): only its count of objects ever added moves. */
#include <leakwatch/cuda_api.h>

#include <dlfcn.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CHURN 3
#define NOINLINE __attribute__((noinline))

typedef cudaError_t (*rt_alloc_fn)(void **, size_t);
typedef cudaError_t (*rt_free_fn)(void *);
typedef CUresult (*drv_alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*drv_free_fn)(CUdeviceptr);

static void *sym(void *h, const char *name) {
    void *p = dlsym(h, name);
    if (!p) {
        fprintf(stderr, "dl_tailcall: no %s: %s\n", name, dlerror());
        exit(3);
    }
    return p;
}

NOINLINE static int leak_tail_runtime(rt_alloc_fn a, rt_free_fn f, size_t n, size_t size) {
    int first = 0;
    for (size_t i = 0; i < n + CHURN; i++) {
        void *p = NULL;
        int r = (int)a(&p, size);
        if (r && !first) first = r;
        if (!r && i >= n) {
            r = (int)f(p);
            if (r && !first) first = r;
        }
    }
    return first;
}

NOINLINE static int leak_tail_driver(drv_alloc_fn a, drv_free_fn f, size_t n, size_t size) {
    int first = 0;
    for (size_t i = 0; i < n + CHURN; i++) {
        CUdeviceptr p = 0;
        int r = (int)a(&p, size);
        if (r && !first) first = r;
        if (!r && i >= n) {
            r = (int)f(p);
            if (r && !first) first = r;
        }
    }
    return first;
}

/* Generated code: a stub in an anonymous executable mapping (as a JIT
 * compiler makes one) that calls fn(a, b) and returns its result, so that a
 * tail call made by fn returns into code in no loaded object. NULL where the
 * architecture has no stub here (then the JIT path reports -1, with and
 * without leakwatch alike). */
typedef int (*stub_fn)(void *, size_t);
static stub_fn make_stub(void *fn) {
#if defined(__x86_64__)
    unsigned char code[] = {
        0x48, 0x83, 0xec, 0x08,                   /* sub $8, %rsp */
        0x48, 0xb8, 0,    0,    0, 0, 0, 0, 0, 0, /* movabs $fn, %rax */
        0xff, 0xd0,                               /* call *%rax */
        0x48, 0x83, 0xc4, 0x08,                   /* add $8, %rsp */
        0xc3,                                     /* ret */
    };
    memcpy(code + 6, &fn, sizeof fn);
#elif defined(__aarch64__)
    uint32_t insns[] = {
        0xa9bf7bfdu, /* stp x29, x30, [sp, #-16]! */
        0x580000b0u, /* ldr x16, #20 (the address below) */
        0xd63f0200u, /* blr x16 */
        0xa8c17bfdu, /* ldp x29, x30, [sp], #16 */
        0xd65f03c0u, /* ret */
        0xd503201fu, /* nop (aligns the address) */
        0,           0,
    };
    memcpy(&insns[6], &fn, sizeof fn);
    unsigned char code[sizeof insns];
    memcpy(code, insns, sizeof insns);
#else
    (void)fn;
    return NULL;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
    void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    memcpy(m, code, sizeof code);
    __builtin___clear_cache((char *)m, (char *)m + sizeof code);
    if (mprotect(m, 4096, PROT_READ | PROT_EXEC) != 0) return NULL;
    stub_fn f;
    memcpy(&f, &m, sizeof f);
    return f;
#endif
}

NOINLINE static int leak_tail_jit(stub_fn alloc, size_t n, size_t size) {
    if (!alloc) return -1;
    int first = 0;
    for (size_t i = 0; i < n; i++) {
        void *p = NULL;
        int r = alloc(&p, size);
        if (r && !first) first = r;
    }
    return first;
}

/* How MODULE[:how] is opened ("" when plainly). */
static const char *how_of(const char *arg) {
    const char *colon = strchr(arg, ':');
    return colon ? colon + 1 : "";
}

/* Opens MODULE[:how] from dir (by bare name for bare and late); NULL after a
 * message when it cannot. */
static void *open_module(const char *dir, const char *arg) {
    char name[256], path[4400];
    snprintf(name, sizeof name, "%s", arg);
    char *colon = strchr(name, ':');
    if (colon) *colon = '\0';
    const char *how = how_of(arg);
    int mode = !strcmp(how, "global") ? RTLD_NOW | RTLD_GLOBAL : RTLD_NOW | RTLD_LOCAL;
    /* By bare name (found on LD_LIBRARY_PATH): leakwatch binds such a module
     * at its next look, not at the dlopen. */
    if (!strcmp(how, "bare") || !strcmp(how, "late"))
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s", dir, name);
    void *h = dlopen(path, mode);
    if (!h) fprintf(stderr, "dl_tailcall: %s\n", dlerror());
    return h;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: dl_tailcall N SIZE MODULE[:how]...\n");
        return 2;
    }
    size_t n = strtoul(argv[1], NULL, 0), size = strtoul(argv[2], NULL, 0);
    char dir[4096];
    ssize_t len = readlink("/proc/self/exe", dir, sizeof dir - 16);
    if (len <= 0) return 3;
    dir[len] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash) strcpy(slash, "/../lib");
    void *handles[8];
    int count = 0;
    for (int i = 3; i < argc && count < 8; i++, count++) {
        const char *how = how_of(argv[i]);
        handles[count] = NULL;
        if (!strcmp(how, "late") || !strcmp(how, "closed")) continue; /* at its turn */
        if (!(handles[count] = open_module(dir, argv[i]))) return 3;
    }
    for (int i = 0; i < count; i++) {
        const char *how = how_of(argv[3 + i]);
        if (!strcmp(how, "late") || !strcmp(how, "closed")) {
            if (!(handles[i] = open_module(dir, argv[3 + i]))) return 3;
            if (!strcmp(how, "closed")) {
                dlclose(handles[i]);
                continue;
            }
        }
        void *h = handles[i];
        int (*is_jump)(void) = (int (*)(void))sym(h, "tail_is_jump");
        const char *(*runtime)(void) = (const char *(*)(void))sym(h, "tail_runtime");
        unsigned long (*mallocs)(void) = (unsigned long (*)(void))sym(h, "tail_runtime_mallocs");
        unsigned long before = mallocs();
        int rt = leak_tail_runtime((rt_alloc_fn)sym(h, "tail_malloc"),
                                   (rt_free_fn)sym(h, "tail_free"), n, size);
        /* A pinned host block, allocated and freed through the module. */
        void *hp = NULL;
        int host = (int)((rt_alloc_fn)sym(h, "tail_malloc_host"))(&hp, 4096);
        if (!host) host = (int)((rt_free_fn)sym(h, "tail_free_host"))(hp);
        /* The runtime's own functions, found by dlsym on the module's handle. */
        int found = leak_tail_runtime((rt_alloc_fn)sym(h, "cudaMalloc"),
                                      (rt_free_fn)sym(h, "cudaFree"), n, size);
        int drv = leak_tail_driver((drv_alloc_fn)sym(h, "tail_mem_alloc"),
                                   (drv_free_fn)sym(h, "tail_mem_free"), n, size);
        /* Generated code calling the module's tail-calling wrapper. */
        int jit = leak_tail_jit(make_stub(sym(h, "tail_malloc")), n, size);
        char name[256];
        snprintf(name, sizeof name, "%s", argv[3 + i]);
        char *colon = strchr(name, ':');
        if (colon) *colon = '\0';
        printf("%s: jump=%d tail=%d host=%d dlsym=%d driver=%d jit=%d runtime=%s calls=%lu\n", name,
               is_jump(), rt, host, found, drv, jit, runtime(), mallocs() - before);
    }
    return 0;
}
