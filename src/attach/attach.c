/* SPDX-License-Identifier: Apache-2.0 */
/* Hooks installed late: leakwatch loaded into a running process by
 * `leakwatch attach` (tools/commands/attach.c), which calls the target's own
 * dlopen (RTLD_LOCAL) and then leakwatch__attach below.
 *
 * Loaded that way, the library interposes nothing: every object already bound
 * its calls. So the global offset table entries through which the loaded
 * objects call the functions that preloading would interpose (hook_names.c)
 * are rewritten to point at our hooks (patch.c), and so is dlopen's
 * (late_dlopen.c), so that objects loaded later get theirs too. The hooks find
 * the real functions as they do preloaded (real.c, per caller), with "next
 * after us" meaning the global scope's first definition (lw_real_set_late).
 * A detach writes every entry back as it was.
 *
 * The rest of the folder, one job each: the settings the command passed
 * (attach_settings.c), the Python helper (python_helper.c), and the locks of
 * attach and detach with what a fork does to them (attach_locks.h: their
 * order). This file: the attach and the detach. */
#include "attach_locks.h"
#include "attach_settings.h"
#include "control.h"
#include "export.h"
#include "hook_names.h"
#include "instance.h"
#include "late_dlopen.h"
#include "lifecycle.h"
#include "log.h"
#include "options.h"
#include "patch.h"
#include "python_helper.h"
#include "real.h"
#include "worker.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

static int detach(char *msg, size_t n) {
    lw_attach_lock();
    if (lw_patch_uninstall() != 0) {
        lw_attach_unlock();
        snprintf(msg, n, "leakwatch is not attached to this process");
        return -1;
    }
    lw_python_helper_uninstall();
    char path[PATH_MAX] = "";
    if (lw_lifecycle_detach(path, sizeof path) != 0 || !path[0])
        snprintf(msg, n, "(no report written: LEAKWATCH_REPORT is none, or see the job's stderr)");
    else
        snprintf(msg, n, "%s", path);
    lw_attach_unlock();
    return 0;
}

static int attach_now(const char *settings, char *msg, size_t n) {
    int rc = -1;
    lw_attach_lock();
    if (lw_patch_installed()) {
        snprintf(msg, n, "leakwatch is already attached");
        rc = 1;
        goto out;
    }
    char other[PATH_MAX];
    if (lw_instance_other(other, sizeof other)) {
        /* A copy of the library under another name (or another
         * installation's) was loaded first: it is the one that watches. */
        char safe[PATH_MAX];
        lw_log_escape(other, safe, sizeof safe);
        snprintf(msg, n,
                 "another copy of leakwatch's library is loaded in this process (%s): one "
                 "instance per process; use that copy's leakwatch",
                 safe);
        goto out;
    }
    if (!lw_hook_names_built()) {
        if (lw_hook_names_build("dlopen", (void *)lw_late_dlopen) != 0) {
            snprintf(msg, n, "cannot read leakwatch's own symbol table");
            goto out;
        }
        lw_attach_locks_for_fork();
    }
    if (lw_late_dlopen_init() != 0 || lw_attach_settings_take(settings) != 0) {
        snprintf(msg, n, "cannot find the C library's dlopen");
        goto out;
    }
    lw_options_set_source(lw_attach_setting);
    lw_real_set_late();
    lw_control_set_detach(detach);
    lw_worker_set_tick(lw_patch_tick);
    int started = lw_lifecycle_attach();
    if (started != 0) {
        snprintf(msg, n,
                 started > 0 ? "leakwatch already records in this process"
                             : "leakwatch is disabled (LEAKWATCH_DISABLE) or could not "
                               "start");
        rc = started > 0 ? 1 : -1;
        goto out;
    }
    if (!lw_control_serving()) {
        /* Without the socket there is no detach: recording ends here. */
        char path[PATH_MAX];
        lw_lifecycle_detach(path, sizeof path);
        snprintf(msg, n,
                 "the library could not serve its control socket (see the job's stderr), "
                 "so it could not be detached: not attached");
        goto out;
    }
    snprintf(msg, n, "%zu", lw_patch_install());
    lw_python_helper_install();
    rc = 0;
out:
    lw_attach_unlock();
    return rc;
}

typedef struct {
    const char *settings;
    char *msg;
    size_t n;
} attach_args;

static void *attach_thread(void *p) {
    const attach_args *a = p;
    return (void *)(intptr_t)(attach_now(a->settings, a->msg, a->n) + 2);
}

/* Called by leakwatch attach on one of the job's threads, stopped in a system
 * call, right after the dlopen that loaded us. settings: the LEAKWATCH_*
 * settings, NAME=VALUE lines. 0: attached (msg: how many entries were
 * rewritten); 1: leakwatch already records here; -1: not attached, msg says
 * why (nothing changed). The work is done on a thread of ours (every signal
 * blocked, a stack of its own), which the borrowed thread waits for: that
 * thread runs as little as possible of ours. errno is left as it was. */
LW_EXPORT int leakwatch__attach(const char *settings, char *msg, size_t n) {
    int saved = errno;
    attach_args a = {settings, msg, n};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    int created = pthread_create(&t, NULL, attach_thread, &a) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    int rc;
    if (created) {
        void *r = NULL;
        pthread_join(t, &r);
        rc = (int)(intptr_t)r - 2;
    } else {
        rc = attach_now(settings, msg, n);
    }
    errno = saved;
    return rc;
}
