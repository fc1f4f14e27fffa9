/* SPDX-License-Identifier: Apache-2.0 */
#include "memory_kind.h"

#include <string.h>

static const char *const names[LW_KIND_COUNT] = {
    [LW_KIND_DEVICE] = "device",
    [LW_KIND_MANAGED] = "managed",
    [LW_KIND_PINNED_HOST] = "pinned_host",
    [LW_KIND_PHYSICAL] = "physical",
};

const char *lw_kind_name(lw_kind k) {
    return (unsigned)k < LW_KIND_COUNT ? names[k] : "unknown";
}

int lw_kind_parse(const char *s) {
    for (int k = 0; s && k < LW_KIND_COUNT; k++)
        if (!strcmp(s, names[k])) return k;
    return -1;
}
