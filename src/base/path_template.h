/* SPDX-License-Identifier: Apache-2.0 */
/* Output paths as users write them: LEAKWATCH_REPORT=run-%p.json. */
#ifndef LW_PATH_TEMPLATE_H
#define LW_PATH_TEMPLATE_H

#include <stddef.h>

/* Expands %p (pid), %h (host name), %r (rank: rank.h says from which
 * variables; else the local rank, else 0)
 * and %% in template into out; other %x stay as written. Returns 0, or -1 if
 * the result does not fit. */
int lw_path_expand(const char *template_path, char *out, size_t outlen);

#endif
