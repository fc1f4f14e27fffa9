/* SPDX-License-Identifier: Apache-2.0 */
/* An object's dynamic section read in place (src/loader/dynamic.c). */
#include "dynamic.h"

#include "../check_run.h"

#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <string.h>

/* The C library's dynamic section, as loaded in this process. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libc.so.6")) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC) {
            const ElfW(Dyn) *ld = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            return lw_dyn_read(info->dlpi_addr, ld, data) == 0;
        }
    return 0;
}

/* lw_dyn_defined finds an object's own definition by its hash table, as the
 * dynamic linker binds an unversioned reference (the default version), and
 * never an indirect function's resolver. */
START_TEST(dynamic_definitions) {
    lw_dyn d;
    ck_assert_int_eq(dl_iterate_phdr(find_libc, &d), 1);
    void *h = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    ck_assert_ptr_nonnull(h);
    static const char *const names[] = {"fopen", "dlopen", "pthread_create", "qsort"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(lw_dyn_defined(&d, names[i]) == dlsym(h, names[i]), "%s", names[i]);
    ck_assert_ptr_null(lw_dyn_defined(&d, "no_such_function_in_libc"));
    ck_assert_ptr_null(lw_dyn_defined(&d, "cudaMalloc"));
    /* An indirect function (the string functions, chosen per CPU). */
    size_t n = lw_dyn_symbol_count(&d), ifuncs = 0;
    for (size_t i = 1; i < n; i++) {
        const ElfW(Sym) *sym = &d.symtab[i];
        if (ELF64_ST_TYPE(sym->st_info) != STT_GNU_IFUNC || sym->st_shndx == SHN_UNDEF) continue;
        const char *name = lw_dyn_symbol_name(&d, i);
        ck_assert_msg(lw_dyn_defined(&d, name) == NULL, "%s", name);
        ifuncs++;
    }
    ck_assert_uint_gt(ifuncs, 0);
    dlclose(h);
}
END_TEST

int main(void) {
    Suite *s = suite_create("dynamic");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, dynamic_definitions);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
