/* SPDX-License-Identifier: Apache-2.0 */
/* Where the control sockets live (see output/control.h), shared by the
 * library and the command. */
#ifndef LW_CONTROL_PATH_H
#define LW_CONTROL_PATH_H

#include <stddef.h>

/* The socket folder for this user. create: make it (0700) when missing.
 * Checks it is a real directory owned by us with no access for others.
 * 0, or -1 with a reason in err. Shared with the leakwatch command. */
int lw_control_dir(int create, char *out, size_t n, char *err, size_t errlen);
/* The fallback folder, /tmp/leakwatch-UID (never under $TMPDIR, which may
 * differ between the process and the command). The command searches it too:
 * the watched process may have had another XDG_RUNTIME_DIR. */
int lw_control_fallback_dir(char *out, size_t n);
/* Checks an existing folder as lw_control_dir does. */
int lw_control_check_dir(const char *dir, char *err, size_t errlen);

#endif
