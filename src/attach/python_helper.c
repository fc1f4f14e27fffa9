/* SPDX-License-Identifier: Apache-2.0 */
/* The optimizer hook is installed from a thread of ours that takes the GIL
 * the documented way (PyGILState_Ensure: any thread the interpreter did not
 * create), never from the borrowed thread, which may be waiting for the GIL
 * itself. The code runs in a dictionary of its own: the job's __main__ is not
 * touched. The package is this installation's, loaded by its absolute path:
 * nothing is looked up on the job's sys.path (where the script's folder and
 * the working directory come first, and another user's leakwatch/ would run
 * with the job's rights), under a name of its own (_leakwatch_helper: the
 * name leakwatch stays the job's, as under the preload; this package
 * imported later as leakwatch reuses that copy). The copy the preload's
 * auto-start loaded, or a leakwatch package the job imported itself, is
 * used when it is this one; another is left alone (no step marks from the
 * optimizer then). Python without torch: no hook fires; steps are time
 * intervals. */
#include "python_helper.h"

#include "real.h"
#include "thread.h"
#include "torch_mode.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int (*py_initialized_fn)(void);
typedef int (*py_ensure_fn)(void);
typedef void (*py_release_fn)(int);
typedef int (*py_run_fn)(const char *, void *);

static const char py_install[] =
    "import sys, os, importlib, importlib.util\n"
    "d = DIR\n"
    "here = os.path.join(d, 'leakwatch') if d else ''\n"
    "name = '_leakwatch_helper'\n"
    "def ours(m):\n"
    "    f = getattr(m, '__file__', None) or ''\n"
    "    return bool(here) and os.path.realpath(os.path.dirname(f)) == os.path.realpath(here)\n"
    "added = False\n"
    "try:\n"
    "    pkg = sys.modules.get(name) or sys.modules.get('leakwatch')\n"
    "    if pkg is None and here:\n"
    "        spec = importlib.util.spec_from_file_location(name, os.path.join(here, "
    "'__init__.py'), submodule_search_locations=[here])\n"
    "        pkg = importlib.util.module_from_spec(spec)\n"
    "        sys.modules[name] = pkg\n"
    "        added = True\n"
    "        spec.loader.exec_module(pkg)\n"
    "    if pkg is not None and ours(pkg):\n"
    "        importlib.import_module(pkg.__name__ + '._torch').install()\n"
    "except Exception:\n"
    "    if added and sys.modules.get(name) is pkg:\n"
    "        del sys.modules[name]\n";
static const char py_uninstall[] = "import sys\n"
                                   "for n in ('_leakwatch_helper._torch', 'leakwatch._torch'):\n"
                                   "    t = sys.modules.get(n)\n"
                                   "    if t is not None and hasattr(t, 'uninstall'):\n"
                                   "        t.uninstall()\n"
                                   "        break\n";

/* One per attach and per detach: a Python thread of ours that gets the GIL
 * after the next attach or detach has begun does nothing (the uninstall of
 * a detach, run late, must not remove the next attach's hook). */
static atomic_long py_generation;

/* Runs src (Python) in the interpreter, if there is one, once it has the
 * GIL, unless another attach or detach came since generation gen: 0, or -1. */
static int run_python(const char *src, long gen) {
    py_initialized_fn initialized =
        (py_initialized_fn)lw_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized");
    py_ensure_fn ensure = (py_ensure_fn)lw_real_dlsym(RTLD_DEFAULT, "PyGILState_Ensure");
    py_release_fn release = (py_release_fn)lw_real_dlsym(RTLD_DEFAULT, "PyGILState_Release");
    py_run_fn run = (py_run_fn)lw_real_dlsym(RTLD_DEFAULT, "PyRun_SimpleStringFlags");
    if (!initialized || !ensure || !release || !run || !initialized()) return -1;
    /* exec(bytes.fromhex("...").decode(), {}): no quoting to get wrong, no
     * name left behind in __main__. */
    size_t n = strlen(src);
    char *code = malloc(n * 2 + 64);
    if (!code) return -1;
    char *p = code + sprintf(code, "exec(bytes.fromhex('");
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%02x", (unsigned char)src[i]);
    sprintf(p, "').decode(), {})");
    int st = ensure();
    int rc = atomic_load(&py_generation) == gen ? run(code, NULL) : 0;
    release(st);
    free(code);
    return rc == 0 ? 0 : -1;
}

static void *install_thread(void *arg) {
    long gen = (long)(intptr_t)arg;
    char dir[PATH_MAX], quoted[2 * PATH_MAX + 8];
    if (!lw_torch_package_dir(dir, sizeof dir)) dir[0] = '\0';
    /* DIR as a Python bytes literal, decoded: any byte in a path is fine. */
    char *q = quoted + sprintf(quoted, "bytes.fromhex('");
    for (const char *c = dir; *c; c++)
        q += sprintf(q, "%02x", (unsigned char)*c);
    sprintf(q, "').decode()");
    size_t len = sizeof py_install + strlen(quoted);
    char *src = malloc(len);
    if (src) {
        const char *at = strstr(py_install, "DIR");
        snprintf(src, len, "%.*s%s%s", (int)(at - py_install), py_install, quoted, at + 3);
        run_python(src, gen);
        free(src);
    }
    return NULL;
}

/* The detach's part in Python, on a thread of ours: the detach does not
 * wait for the GIL (a job that held it kept the detach, and the control
 * socket with it, waiting for seconds: snapshot blocked, then failed). */
static void *uninstall_thread(void *arg) {
    run_python(py_uninstall, (long)(intptr_t)arg);
    return NULL;
}

/* A new generation, and fn on a thread of ours in a Python process. */
static void start(void *(*fn)(void *)) {
    long gen = atomic_fetch_add(&py_generation, 1) + 1;
    if (lw_real_dlsym(RTLD_DEFAULT, "Py_IsInitialized"))
        lw_thread_start_arg(fn, (void *)(intptr_t)gen);
}

void lw_python_helper_install(void) {
    start(install_thread);
}

void lw_python_helper_uninstall(void) {
    start(uninstall_thread);
}
