/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target for lw_option_parse (src/base/options.c): every LEAKWATCH_*
 * setting's text, as the environment could hold it.
 *
 * The first byte picks the option; the rest is the value. Besides "no crash,
 * no undefined behaviour" it checks what the loader relies on:
 *   - a value is accepted, or a one-line, NUL-terminated reason is given;
 *   - an accepted bool is 0 or 1, an accepted int lies in its range and reads
 *     back as the same number (strtol agrees), an accepted string is
 *     non-empty and at most 4000 characters. */
#include "options.h"

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
    size_t n = 0;
    const lw_option_def *defs = lw_options_table(&n);
    const lw_option_def *d = &defs[data[0] % n];
    /* The environment holds C strings: the value ends at the first NUL. */
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    long v = -12345;
    char err[160];
    memset(err, 'x', sizeof err);
    int rc = lw_option_parse(d, text, &v, err, sizeof err);
    if (rc != 0) {
        CHECK(rc == -1);
        CHECK(memchr(err, '\0', sizeof err) != NULL);
        CHECK(strchr(err, '\n') == NULL);
        CHECK(err[0] != '\0');
    } else if (d->type == LW_OPT_BOOL) {
        CHECK(v == 0 || v == 1);
    } else if (d->type == LW_OPT_INT) {
        CHECK(v >= d->min && v <= d->max);
        CHECK(strtol(text, NULL, 10) == v);
    } else {
        size_t len = strlen(text);
        CHECK(len > 0 && len <= 4000);
    }
    free(text);
    return 0;
}
