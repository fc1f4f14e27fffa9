/* SPDX-License-Identifier: Apache-2.0 */
/* A site's Python frames: described once, when the site is first seen (the
 * frames are alive then, see pyframes.h), and placed into the site's stack
 * at report time where the interpreter's native evaluation frames stand. */
#ifndef LW_PYSTACK_H
#define LW_PYSTACK_H

#include "pyframes.h"

#include <stdint.h>

struct lw_site;

typedef struct {
    char *file;
    char *function;
    int line;
    uint8_t entry; /* first Python frame of its own native eval call */
} lw_pystack_frame;

typedef struct {
    int n;
    lw_pystack_frame f[];
} lw_pystack;

/* Most Python frames kept per stack (innermost ones). */
#define LW_PY_MAX 48

/* Key words for captured frames: (code, instr | entry << 32) pairs. */
void lw_pystack_key(const lw_pyframe *f, int n, uintptr_t *words);

/* Describes f[0..n) and attaches the result to s (once; thread-safe). */
void lw_pystack_attach(struct lw_site *s, const lw_pyframe *f, int n);

/* The description attached to s, or NULL. */
const lw_pystack *lw_pystack_of(const struct lw_site *s);

#endif
