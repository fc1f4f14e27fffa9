/* SPDX-License-Identifier: Apache-2.0 */
/* Self-check of the stand-in runtime linked statically (build/tests/lib/libcudart_static.a),
 * the way conda builds link cudart_static, without leakwatch. Exit 0 when
 * every check passes; each failure is printed.
 *
 *   static_stubcheck [legacy|export-fail|no-device]
 *
 * The driver is found through this program's RUNPATH ($ORIGIN/../lib), or
 * LD_LIBRARY_PATH (lib-legacy for the legacy mode). */
#define FAKE_RUNTIME_SELFCHECK 1
#include "../stubs/fake_common.h"

int main(int argc, char **argv) {
    int failures = fake_runtime_selfcheck(argc > 1 ? argv[1] : NULL, true);
    if (failures != 0) fprintf(stderr, "static_stubcheck: %d check(s) failed\n", failures);
    return failures != 0;
}
