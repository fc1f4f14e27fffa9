/* SPDX-License-Identifier: Apache-2.0 */
#include "verdict.h"

#include <string.h>

static const char *const names[LW_VERDICT_COUNT] = {
    [LW_VERDICT_INCONCLUSIVE] = "inconclusive",
    [LW_VERDICT_LEAK] = "leak",
    [LW_VERDICT_NO_LEAK] = "no_leak",
    [LW_VERDICT_NOTHING_SEEN] = "nothing_seen",
};

const char *lw_verdict_name(int v) {
    return v >= 0 && v < LW_VERDICT_COUNT ? names[v] : "unknown";
}

int lw_verdict_parse(const char *s) {
    for (int v = 0; s && v < LW_VERDICT_COUNT; v++)
        if (!strcmp(s, names[v])) return v;
    return -1;
}
