/* SPDX-License-Identifier: Apache-2.0 */
/* The hook layer in this process (the library's code linked in, the driver
 * stand-in loaded beside it): what a hook moves when leakwatch does not
 * record, that the library exports exactly the functions of the hook lists
 * (src/hooks/hook_list.h), from which every per-name table is made, and that
 * each hook is written out as a function a reader finds by name. */
#include "harness.h"
#include "hooks.h"
#include "hook_list.h"
#include <leakwatch/cuda_api.h>
#include "imports.h"
#include "real.h"
#include "totals.h"

#include "../check_run.h"

#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The library's own driver wrappers (linked in from liblw_core.a). */
CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t s, const CUmemAllocationProp *prop,
                     unsigned long long flags);
CUresult cuMemMap(CUdeviceptr p, size_t s, size_t o, CUmemGenericAllocationHandle h,
                  unsigned long long flags);
CUresult cuMemUnmap(CUdeviceptr p, size_t s);

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                              unsigned long long);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle,
                           unsigned long long);

#define PAGE (2u << 20)

typedef struct {
    void *h;
    reserve_fn reserve;
    create_fn create; /* the stand-in's own, not through a hook */
    map_fn map;
    CUmemAllocationProp prop;
} driver;

/* The stand-in driver, loaded in the global scope (where the hooks find the
 * next definition), initialised; leakwatch disabled before its first event. */
static void disabled_with_a_driver(driver *d) {
    setenv("LEAKWATCH_DISABLE", "1", 1);
    char path[4200];
    snprintf(path, sizeof path, "%s/tests/lib/libcuda.so.1", lw_build_dir());
    d->h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    ck_assert_msg(d->h, "%s", dlerror());
    init_fn init = (init_fn)dlsym(d->h, "cuInit");
    d->reserve = (reserve_fn)dlsym(d->h, "cuMemAddressReserve");
    /* The stand-in's own (the library's dlsym would hand out its wrappers). */
    d->create = (create_fn)lw_real_dlsym(d->h, "cuMemCreate");
    d->map = (map_fn)lw_real_dlsym(d->h, "cuMemMap");
    ck_assert(init && d->reserve && d->create && d->map);
    ck_assert_int_eq(init(0), CUDA_SUCCESS);
    memset(&d->prop, 0, sizeof d->prop);
    d->prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    d->prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d->prop.location.id = 0;
}

/* With LEAKWATCH_DISABLE, cuMemMap and cuMemUnmap moved the mapped bytes
 * anyway: the map counted before asking whether leakwatch records, the unmap
 * without asking. */
START_TEST(vmm_map_moves_no_counter_when_disabled) {
    driver d;
    disabled_with_a_driver(&d);
    CUdeviceptr va;
    ck_assert_int_eq(d.reserve(&va, 2 * PAGE, 0, 0, 0), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    ck_assert_int_eq(cuMemCreate(&h, PAGE, &d.prop, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemMap(va, PAGE, 0, h, 0), CUDA_SUCCESS);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    ck_assert_int_eq(lw_imports_mapped_bytes(), 0);
    ck_assert_int_eq(cuMemUnmap(va, PAGE), CUDA_SUCCESS);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    ck_assert_uint_eq(lw_totals_get(-2, LW_KIND_COUNT).alloc_count, 0);
}
END_TEST

START_TEST(vmm_unmap_moves_no_counter_when_disabled) {
    driver d;
    disabled_with_a_driver(&d);
    CUdeviceptr va;
    ck_assert_int_eq(d.reserve(&va, 2 * PAGE, 0, 0, 0), CUDA_SUCCESS);
    CUmemGenericAllocationHandle h;
    /* Mapped behind the hooks' back; unmapped through them. */
    ck_assert_int_eq(d.create(&h, PAGE, &d.prop, 0), CUDA_SUCCESS);
    ck_assert_int_eq(d.map(va, PAGE, 0, h, 0), CUDA_SUCCESS);
    ck_assert_int_eq(cuMemUnmap(va, PAGE), CUDA_SUCCESS);
    ck_assert_int_eq(lw_totals_mapped_bytes(), 0);
    ck_assert_int_eq(lw_imports_mapped_bytes(), 0);
}
END_TEST

/* ---- the exports are the lists ---- */

#define DRIVER_NAME(NAME, ...) #NAME,
#define RUNTIME_NAME(NAME, ...) #NAME,
#define NOTHING(...)
static const char *const listed[] = {
    LW_DRIVER_HOOKS(DRIVER_NAME, DRIVER_NAME) LW_RUNTIME_HOOKS(RUNTIME_NAME, NOTHING)
    /* Exported beside the lists: the dynamic loader's lookups. */
    "dlsym",
    "dlclose",
};
#define NLISTED (sizeof listed / sizeof listed[0])

/* The library file's exported functions (its .dynsym), the public API
 * (leakwatch_*) left out. */
static size_t exported_functions(const char *path, char ***out) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)n);
    ck_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)b;
    ck_assert(!memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_ident[EI_CLASS] == ELFCLASS64);
    const Elf64_Shdr *sh = (const Elf64_Shdr *)(b + eh->e_shoff);
    char **names = NULL;
    size_t k = 0;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type != SHT_DYNSYM) continue;
        const Elf64_Sym *sym = (const Elf64_Sym *)(b + sh[i].sh_offset);
        const char *str = (const char *)(b + sh[sh[i].sh_link].sh_offset);
        size_t count = sh[i].sh_size / sizeof *sym;
        names = calloc(count, sizeof *names);
        ck_assert(names);
        for (size_t j = 0; j < count; j++) {
            const Elf64_Sym *s = &sym[j];
            if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) != STT_FUNC ||
                ELF64_ST_BIND(s->st_info) == STB_LOCAL ||
                ELF64_ST_VISIBILITY(s->st_other) != STV_DEFAULT)
                continue;
            const char *name = str + s->st_name;
            if (!strncmp(name, "leakwatch", 9)) continue;
            names[k++] = strdup(name);
        }
    }
    free(b);
    *out = names;
    return k;
}

START_TEST(exports_are_the_hook_lists) {
    char path[4200];
    snprintf(path, sizeof path, "%s/libleakwatch.so", lw_build_dir());
    char **names;
    size_t n = exported_functions(path, &names);
    /* Every export is listed (an attach rewrites the entries of every export:
     * one not listed would have no slot, no lookup entry, no per-object
     * entries)... */
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < NLISTED && strcmp(names[i], listed[j]) != 0)
            j++;
        ck_assert_msg(j < NLISTED, "%s is exported but in no list of hook_list.h", names[i]);
    }
    /* ...and every listed name is exported. */
    for (size_t j = 0; j < NLISTED; j++) {
        size_t i = 0;
        while (i < n && strcmp(names[i], listed[j]) != 0)
            i++;
        ck_assert_msg(i < n, "%s is listed in hook_list.h but not exported", listed[j]);
    }
    ck_assert_uint_eq(n, NLISTED);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}
END_TEST

/* dlsym looks at a name only when it passes the cheap prefix tests of
 * hooks.h: a hook whose name they turned away would never be handed out. */
static const char *const driver_listed[] = {LW_DRIVER_HOOKS(DRIVER_NAME, DRIVER_NAME)};

START_TEST(dlsym_prefix_tests_pass_every_listed_name) {
    for (size_t j = 0; j < NLISTED; j++)
        if (strncmp(listed[j], "dl", 2) != 0)
            ck_assert_msg(lw_maybe_cuda_name(listed[j]), "%s", listed[j]);
    for (size_t j = 0; j < sizeof driver_listed / sizeof driver_listed[0]; j++)
        ck_assert_msg(lw_maybe_driver_name(driver_listed[j]), "%s", driver_listed[j]);
}
END_TEST

/* ---- each hook is a function a reader finds by name ---- */

/* The text of a source file (the tests run from the repository root). */
static char *source_text(const char *path) {
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f, "cannot open %s (run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    ck_assert(text && fread(text, 1, (size_t)n, f) == (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

#define DRIVER_FAMILY(NAME, ...) #NAME,
#define DRIVER_ALIAS(...)
static const char *const driver_hooks[] = {LW_DRIVER_HOOKS(DRIVER_FAMILY, DRIVER_ALIAS)};
static const char *const runtime_hooks[] = {LW_RUNTIME_HOOKS(RUNTIME_NAME, NOTHING)};

/* Every wrapped function's work is written out as lw_hook_NAME in plain
 * text, where grep 'NAME(' and ctags find it, not made by a macro. */
static void each_defined(const char *path, const char *result, const char *const *names, size_t n) {
    char *text = source_text(path);
    for (size_t i = 0; i < n; i++) {
        char head[200];
        snprintf(head, sizeof head, "\nstatic %s lw_hook_%s(", result, names[i]);
        char head_wrapped[200]; /* clang-format puts a long one's name on a line of its own */
        snprintf(head_wrapped, sizeof head_wrapped, "\nstatic %s\nlw_hook_%s(", result, names[i]);
        ck_assert_msg(strstr(text, head) || strstr(text, head_wrapped),
                      "%s: no function lw_hook_%s written out", path, names[i]);
    }
    free(text);
}

START_TEST(every_hook_is_a_function_found_by_name) {
    each_defined("src/hooks/driver.c", "CUresult", driver_hooks,
                 sizeof driver_hooks / sizeof driver_hooks[0]);
    each_defined("src/hooks/runtime.c", "cudaError_t", runtime_hooks,
                 sizeof runtime_hooks / sizeof runtime_hooks[0]);
}
END_TEST

static Suite *hook_events_suite(void) {
    Suite *s = suite_create("hook_events");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, vmm_map_moves_no_counter_when_disabled);
    tcase_add_test(tc, vmm_unmap_moves_no_counter_when_disabled);
    tcase_add_test(tc, exports_are_the_hook_lists);
    tcase_add_test(tc, dlsym_prefix_tests_pass_every_listed_name);
    tcase_add_test(tc, every_hook_is_a_function_found_by_name);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) {
    return lw_check_run(hook_events_suite());
}
