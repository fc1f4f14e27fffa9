/* SPDX-License-Identifier: Apache-2.0 */
/* The public C API: the functions include/leakwatch.h declares (a contract:
 * never renamed or removed), the PyTorch helper's entry points and the
 * exports for tests and for other copies of the library. Each reads the
 * lifecycle's state (lifecycle.h) and hands its work to the layer that does
 * it; none keeps state of its own but CPython's exit hook. */
#include "lifecycle.h"

#include "anatomy.h"
#include "export.h"
#include "fmt.h"
#include "growth.h"
#include "host_leak.h"
#include "options.h"
#include "rank.h"
#include "real.h"
#include "record.h"
#include "runstate.h"
#include "torch_info.h"
#include "where.h"

#include <leakwatch.h>

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The marker of every copy of the library (instance.h): the first copy
 * loaded records, whatever its file name; another one stays inert. */
LW_EXPORT void leakwatch__instance(void) {}

/* ---- CPython: every way a Python job ends writes the final report ----
 * After an uncaught KeyboardInterrupt (Ctrl-C), CPython finalises and then
 * kills itself with SIGINT at its default action (Modules/main.c,
 * exit_sigint), so exit() and its handlers never run. Py_AtExit callbacks
 * run at the very end of Py_FinalizeEx, after the interpreter's teardown
 * (arrays freed at exit are seen) and before that kill, for every ending
 * that finalises: a normal exit, sys.exit, an uncaught exception and
 * KeyboardInterrupt. The leakwatch package registers it at import (with the
 * GIL held: ctypes.PyDLL), so it needs no lock of CPython's. os._exit (a
 * forked worker's end) runs no handler at all. */
static void python_finalized(void) {
    lw_lifecycle_exit_report();
}

LW_EXPORT int leakwatch_python_exit_hook(void) {
    static pid_t registered_in;
    if (registered_in) return 0; /* inherited across fork: CPython's list is too */
    int (*py_at_exit)(void (*)(void)) =
        (int (*)(void (*)(void)))lw_real_dlsym(RTLD_DEFAULT, "Py_AtExit");
    if (!py_at_exit || py_at_exit(python_finalized) != 0) return -1;
    registered_in = getpid();
    return 0;
}

LW_EXPORT void leakwatch_step(void) {
    lw_step_mark();
    /* Steps before the first CUDA allocation are counted, nothing more. */
    if (lw_lifecycle_recording_here()) {
        lw_growth_step();
    }
}

/* For tests only (LEAKWATCH_TEST_CLOCK=1, runstate.h): moves the run's time
 * on by ns and returns once the sampler has done what fell due (intervals
 * closed, warnings said); -1, nothing done, when the test clock is off. Not
 * in leakwatch.h: test programs look it up with dlsym. */
LW_EXPORT int leakwatch__test_clock_advance(long long ns) {
    if (ns < 0) return -1;
    return lw_test_clock_advance((uint64_t)ns, lw_growth_wake_sampler);
}

LW_EXPORT void leakwatch_dump(void) {
    if (lw_lifecycle_state() != LW_RECORDING) return;
    lw_lifecycle_dump();
}

LW_EXPORT const char *leakwatch_version(void) {
    return LEAKWATCH_VERSION;
}

LW_EXPORT int leakwatch_enabled(void) {
    int s = lw_lifecycle_state();
    if (s != LW_NOT_STARTED) return s == LW_RECORDING;
    /* Before the first CUDA call: what start() will decide, by the same
     * parser. */
    long off = 0;
    lw_option_env(LW_OPT_DISABLE, &off);
    return !off;
}

LW_EXPORT int leakwatch_user_code(const char *file) {
    /* Recording: the settings the run uses (an attach passes its own); before
     * that, the environment as is (nothing parsed, nothing printed). */
    const char *uc = lw_lifecycle_state() == LW_RECORDING ? lw_opt_str(LW_OPT_USER_CODE)
                                                          : getenv("LEAKWATCH_USER_CODE");
    lw_frame_ref f = {1, NULL, file, NULL, 0};
    return file && lw_frame_classify(&f, uc) == LW_FRAME_USER;
}

/* The PyTorch helper's entry points (python/leakwatch/_torch.py). Like
 * leakwatch_step, nothing is recorded before this process's own start. */

LW_EXPORT int leakwatch_torch_counters(int device, long long allocated, long long reserved,
                                       long long device_free) {
    if (!lw_lifecycle_recording_here()) return 0;
    return lw_growth_torch_counters(device, allocated, reserved, device_free);
}

LW_EXPORT int leakwatch_torch_host_blocks(unsigned long long *pairs, int max_pairs,
                                          unsigned int *site_id) {
    if (!lw_lifecycle_recording_here() || !site_id) return -1;
    uint32_t id = 0;
    int n = lw_host_leak_blocks(pairs, max_pairs, &id);
    if (n >= 0) *site_id = id;
    return n;
}

LW_EXPORT void leakwatch_torch_backward(int entering) {
    if (!lw_lifecycle_recording_here()) return;
    lw_record_backward(entering);
}

/* The helper's per-step calls as Python builtins: python/leakwatch/__init__.py
 * makes each a builtin function (PyCFunction_NewEx over a METH_NOARGS
 * PyMethodDef that points here), whose call costs tens of nanoseconds where a
 * ctypes call costs one to three microseconds (ctypes describes the call to
 * libffi and converts the arguments each time, and releases and retakes the
 * GIL). They run with the GIL held, as every builtin does: each takes only
 * the library's short locks, and no thread ever waits for the GIL while
 * holding one. The CPython API comes from the process: the library links no
 * Python. Not in leakwatch.h. leakwatch_py_builtins: 0 when they can be
 * used (CPython's Py_IncRef and None were found). */
static void *py_none;
static void (*py_incref)(void *);

LW_EXPORT int leakwatch_py_builtins(void) {
    void *none = lw_real_dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
    void (*incref)(void *) = (void (*)(void *))lw_real_dlsym(RTLD_DEFAULT, "Py_IncRef");
    if (!none || !incref) return -1;
    py_incref = incref;
    py_none = none;
    return 0;
}

/* None, as a builtin returns it: a new reference. */
static void *py_return_none(void) {
    py_incref(py_none);
    return py_none;
}

LW_EXPORT void *leakwatch_py_step(void *self, void *unused) {
    leakwatch_step();
    return py_return_none();
}

LW_EXPORT void *leakwatch_py_backward_enter(void *self, void *unused) {
    leakwatch_torch_backward(1);
    return py_return_none();
}

LW_EXPORT void *leakwatch_py_backward_leave(void *self, void *unused) {
    leakwatch_torch_backward(0);
    return py_return_none();
}

LW_EXPORT void leakwatch_torch_rank(int rank, int world_size) {
    lw_rank_set_group(rank, world_size);
}

LW_EXPORT int leakwatch_torch_anatomy(int device, int event, const long long *values, int n) {
    /* The observer is attached when CUDA initialises, before this process
     * records anything: said whatever the state. */
    if (event == LW_AN_OBSERVING) return lw_anatomy_torch(device, event, values, n);
    if (!lw_lifecycle_recording_here()) return -1;
    if (lw_anatomy_torch(device, event, values, n)) lw_lifecycle_oom_report();
    return 0;
}

/* The helper's values are laid out as the store's (torch_values.h). */
_Static_assert(sizeof(leakwatch_value) == sizeof(lw_tv_value) &&
                   offsetof(leakwatch_value, path) == offsetof(lw_tv_value, path) &&
                   offsetof(leakwatch_value, index) == offsetof(lw_tv_value, index) &&
                   offsetof(leakwatch_value, type) == offsetof(lw_tv_value, type) &&
                   offsetof(leakwatch_value, number) == offsetof(lw_tv_value, number) &&
                   offsetof(leakwatch_value, text) == offsetof(lw_tv_value, text) &&
                   (int)LEAKWATCH_VALUE_NULL == (int)LW_TV_NULL &&
                   (int)LEAKWATCH_VALUE_BOOL == (int)LW_TV_BOOL &&
                   (int)LEAKWATCH_VALUE_NUMBER == (int)LW_TV_NUMBER &&
                   (int)LEAKWATCH_VALUE_STRING == (int)LW_TV_STRING &&
                   (int)LEAKWATCH_VALUE_ARRAY == (int)LW_TV_ARRAY &&
                   (int)LEAKWATCH_VALUE_OBJECT == (int)LW_TV_OBJECT,
               "leakwatch_value is lw_tv_value");

LW_EXPORT int leakwatch_torch_values(const char *section, unsigned int site,
                                     const leakwatch_value *values, int n, const char *message) {
    if (!lw_lifecycle_recording_here() || n < 0) return -1;
    return lw_torch_info_values(section, site, (const lw_tv_value *)values, (size_t)n, message);
}

LW_EXPORT int leakwatch_torch_values_packed(const char *section, unsigned int site,
                                            const char *paths, size_t paths_size, int npaths,
                                            const int *cells, const double *numbers,
                                            const char *texts, size_t ntexts, int n,
                                            const char *message) {
    if (!lw_lifecycle_recording_here() || n < 0 || npaths < 0) return -1;
    return lw_torch_info_values_packed(section, site, paths, paths_size, (size_t)npaths, cells,
                                       numbers, texts, ntexts, (size_t)n, message);
}

LW_EXPORT int leakwatch_torch_info(const char *field, const char *json, const char *message) {
    (void)message;
    if (!lw_lifecycle_recording_here() || !field || strcmp(field, "step_unit")) return -1;
    int rc = lw_torch_info_step_unit_json(json);
    /* What a step is: module calls (no optimizer) tell the detector that the
     * time between marks is no work (growth.h). */
    if (rc == 0 && strstr(json, "\"module_call\"")) lw_growth_steps_are_calls();
    return rc;
}

LW_EXPORT int leakwatch_torch_step_unit(const char *unit, const char *module) {
    if (!lw_lifecycle_recording_here()) return -1;
    int rc = lw_torch_info_step_unit_set(unit, module);
    /* As leakwatch_torch_info's "step_unit": module calls tell the detector
     * that the time between marks is no work (growth.h). */
    if (rc == 0 && !strcmp(unit, "module_call")) lw_growth_steps_are_calls();
    return rc;
}

/* The sizes in the PyTorch helper's sentences (the owner of a leak), as
 * every output prints them: fmt.c's rule, its one copy. */
LW_EXPORT int leakwatch_format_bytes(double bytes, char *out, size_t n) {
    if (!out || !n) return -1;
    lw_fmt_bytes(bytes, out, n);
    return (int)strlen(out);
}
