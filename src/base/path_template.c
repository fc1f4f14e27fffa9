/* SPDX-License-Identifier: Apache-2.0 */
#include "path_template.h"

#include "rank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int lw_path_expand(const char *tpl, char *out, size_t outlen) {
    size_t o = 0;
    char tmp[256];
    for (const char *p = tpl; *p; p++) {
        const char *add = NULL;
        char one[2] = {0, 0};
        if (*p == '%' && p[1]) {
            p++;
            if (*p == 'p') {
                snprintf(tmp, sizeof tmp, "%ld", (long)getpid());
                add = tmp;
            } else if (*p == 'h') {
                if (gethostname(tmp, sizeof tmp) != 0) snprintf(tmp, sizeof tmp, "unknown-host");
                tmp[sizeof tmp - 1] = '\0';
                add = tmp;
            } else if (*p == 'r') {
                /* The global rank, else the local one, else 0. */
                lw_rank_info r;
                lw_rank_get(&r);
                snprintf(tmp, sizeof tmp, "%ld",
                         r.rank >= 0         ? r.rank
                         : r.local_rank >= 0 ? r.local_rank
                                             : 0);
                add = tmp;
            } else if (*p == '%') {
                add = "%";
            } else {
                /* Unknown: keep it as written. */
                one[0] = '%';
                if (o + 1 >= outlen) return -1;
                out[o++] = '%';
                one[0] = *p;
                add = one;
            }
        } else {
            one[0] = *p;
            add = one;
        }
        size_t len = strlen(add);
        if (o + len >= outlen) return -1;
        memcpy(out + o, add, len);
        o += len;
    }
    if (o >= outlen) return -1;
    out[o] = '\0';
    return 0;
}
