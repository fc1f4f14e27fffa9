/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for lw_path_expand (src/base/path_template.c): the report path
 * template from LEAKWATCH_REPORT.
 *
 * The first byte sets the output buffer's size (0..255); the rest is the
 * template. Besides "no crash, no undefined behaviour, no write past the
 * buffer" (the buffer is an exact-size heap block, so ASan sees overruns) it
 * checks:
 *   - on success the result is NUL-terminated within the buffer;
 *   - a template without '%' comes back unchanged, or is refused as too long
 *     exactly when it does not fit;
 *   - expanding into a larger buffer never fails where a smaller one
 *     succeeded, and gives the same text. */
#include "path_template.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);                  \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t outlen = data[0];
    char *tpl = malloc(size);
    if (!tpl) return 0;
    memcpy(tpl, data + 1, size - 1);
    tpl[size - 1] = '\0';
    char *out = malloc(outlen ? outlen : 1);
    char *big = malloc(8192);
    if (!out || !big) abort();
    int rc = lw_path_expand(tpl, out, outlen);
    CHECK(rc == 0 || rc == -1);
    if (rc == 0) {
        CHECK(outlen > 0 && memchr(out, '\0', outlen) != NULL);
        CHECK(lw_path_expand(tpl, big, 8192) == 0);
        CHECK(strcmp(out, big) == 0);
    }
    if (!strchr(tpl, '%')) {
        size_t len = strlen(tpl);
        CHECK((rc == 0) == (len < outlen));
        if (rc == 0) CHECK(strcmp(out, tpl) == 0);
    }
    free(big);
    free(out);
    free(tpl);
    return 0;
}
