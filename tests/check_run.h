/* SPDX-License-Identifier: Apache-2.0 */
/* Runs a Check suite the way every test binary here does: normal output
 * (Check's summary line, which CI reads), and the number of failed tests. */
#ifndef LW_CHECK_RUN_H
#define LW_CHECK_RUN_H

#include <check.h>

static inline int lw_check_run(Suite *s) {
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed;
}

#endif
