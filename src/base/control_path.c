/* SPDX-License-Identifier: Apache-2.0 */
/* Where the control sockets live, and the checks that make that place safe:
 * another user must not be able to plant a socket we would talk to, nor read
 * our reports through one of ours. Shared by the library and the command. */
#include "control_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lw_control_check_dir(const char *dir, char *err, size_t errlen) {
    struct stat st;
    if (lstat(dir, &st) != 0) {
        snprintf(err, errlen, "cannot use %s: %s", dir, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen,
                 "%s is not a directory (a symlink or file is in its place); remove it", dir);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "%s belongs to uid %ld, not to us (uid %ld); remove it or set XDG_RUNTIME_DIR",
                 dir, (long)st.st_uid, (long)geteuid());
        return -1;
    }
    if (st.st_mode & 077) {
        snprintf(err, errlen, "%s is open to other users (mode %03o); run chmod 700 %s", dir,
                 (unsigned)(st.st_mode & 0777), dir);
        return -1;
    }
    return 0;
}

int lw_control_fallback_dir(char *out, size_t n) {
    int w = snprintf(out, n, "/tmp/leakwatch-%ld", (long)geteuid());
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

int lw_control_dir(int create, char *out, size_t n, char *err, size_t errlen) {
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int w;
    struct stat st;
    /* XDG_RUNTIME_DIR only when it is usable: absolute, and an existing
     * directory of ours (pam_systemd makes it; a stale value after su is not). */
    if (xdg && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == geteuid())
        w = snprintf(out, n, "%s/leakwatch", xdg);
    else
        w = lw_control_fallback_dir(out, n) == 0 ? (int)strlen(out) : -1;
    if (w < 0 || (size_t)w >= n) {
        snprintf(err, errlen, "the socket folder path is too long");
        return -1;
    }
    if (create && mkdir(out, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot create %s: %s", out, strerror(errno));
        return -1;
    }
    return lw_control_check_dir(out, err, errlen);
}
