/* SPDX-License-Identifier: Apache-2.0 */
/* Self-check of the stand-in runtime linked dynamically (build/tests/lib/libcudart.so),
 * without leakwatch. Exit 0 when every check passes; each failure is printed.
 *
 *   rt_stubcheck [legacy|export-fail|no-device]
 *
 * Needs LD_LIBRARY_PATH to hold the stand-in driver's folder: the runtime
 * dlopen()s "libcuda.so.1" by name, and a library without a RUNPATH does not
 * search the program's. tests/unit/test_stubs.c runs every mode. */
#define FAKE_RUNTIME_SELFCHECK 1
#include "../stubs/fake_common.h"

int main(int argc, char **argv) {
    int failures = fake_runtime_selfcheck(argc > 1 ? argv[1] : NULL, false);
    if (failures != 0) fprintf(stderr, "rt_stubcheck: %d check(s) failed\n", failures);
    return failures != 0;
}
