/* SPDX-License-Identifier: Apache-2.0 */
/* Imported memory (src/track/imports.c): IPC opens and imported VMM handles,
 * counted apart from the process's own totals. */
#include "imports.h"
#include "totals.h"

#include "../check_run.h"

#include <check.h>

/* IPC opens are references on one mapping; a refused close leaves the
 * import as it was; an imported VMM handle's bytes are what its mappings
 * reach. Nothing of it reaches the process's own totals. */
START_TEST(imports_count_references_and_bytes) {
    lw_totals_reset();
    lw_imports_forget_all();
    lw_import_opened(LW_CLASS_DPTR, 0x1000, 512);
    lw_import_opened(LW_CLASS_DPTR, 0x1000, 512); /* opened again: the same mapping */
    lw_import_opened(LW_CLASS_DPTR, 0x9000, 1024);
    lw_import_failed();
    lw_counts c = lw_imports_get();
    ck_assert_uint_eq(c.alloc_count, 3);
    ck_assert_uint_eq(c.failed_count, 1);
    ck_assert_int_eq(c.live_count, 3);
    ck_assert_int_eq(c.live_bytes, 1536);
    lw_import_ticket t;
    lw_import_close_begin(LW_CLASS_DPTR, 0x1000, &t);
    lw_import_close_end(&t, 1);
    ck_assert_int_eq(lw_imports_get().live_bytes, 1536); /* one reference left */
    lw_import_close_begin(LW_CLASS_DPTR, 0x1000, &t);
    ck_assert_int_eq(lw_imports_get().live_bytes, 1024);
    lw_import_close_end(&t, 0); /* refused: still open */
    c = lw_imports_get();
    ck_assert_int_eq(c.live_bytes, 1536);
    ck_assert_int_eq(c.live_count, 2);
    ck_assert_uint_eq(c.alloc_count, 3);
    ck_assert_uint_eq(c.free_count, 1);
    lw_import_close_begin(LW_CLASS_DPTR, 0x1000, &t);
    lw_import_close_end(&t, 1);
    lw_import_close_begin(LW_CLASS_DPTR, 0x5555, &t); /* never opened */
    lw_import_close_end(&t, 1);
    c = lw_imports_get();
    ck_assert_uint_eq(c.free_count, 2);
    ck_assert_int_eq(c.live_count, 1);
    ck_assert_int_eq(c.live_bytes, 1024);
    ck_assert_int_eq(c.peak_live_bytes, 1536);
    /* A VMM handle: 0 bytes until mapped, then what the mappings reach. */
    lw_import_opened(LW_CLASS_HANDLE, 7, 0);
    ck_assert(lw_import_is_handle(7));
    ck_assert(!lw_import_is_handle(0x9000)); /* an address, not a handle */
    lw_import_mapped(7, 0, 4096);
    lw_import_mapped(7, 4096, 4096);
    lw_import_mapped(7, 0, 4096);    /* no further */
    lw_import_mapped(8, 0, 1 << 20); /* not imported */
    ck_assert_int_eq(lw_imports_get().live_bytes, 1024 + 8192);
    lw_import_close_begin(LW_CLASS_HANDLE, 7, &t);
    lw_import_close_end(&t, 1);
    ck_assert(!lw_import_is_handle(7));
    ck_assert_int_eq(lw_imports_get().live_bytes, 1024);
    /* The process's own totals never moved. */
    lw_counts own = lw_totals_get(-2, LW_KIND_COUNT);
    ck_assert_int_eq(own.live_bytes, 0);
    ck_assert_uint_eq(own.alloc_count, 0);
    lw_imports_forget_all();
    ck_assert_uint_eq(lw_imports_get().alloc_count, 0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("imports");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, imports_count_references_and_bytes);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
