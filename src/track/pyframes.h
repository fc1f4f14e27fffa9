/* SPDX-License-Identifier: Apache-2.0 */
/* pyframes.h - capture the calling thread's Python frames without the GIL.
 *
 * leakwatch records, for each CUDA allocation, where in the user's Python
 * program it was made. The hooks run with the GIL released (PyTorch drops it
 * before reaching CUDA and holds its allocator lock), so the CPython C API
 * cannot be used; this module reads the interpreter's frame structures
 * directly ("raw walk"), with per-version layouts for CPython 3.8-3.14 on
 * 64-bit Linux (x86-64, AArch64); free-threaded builds are refused. See the comment at the top of
 * pyframes.c for the design.
 *
 * Hot path: lw_py_capture() only. Everything else is off the hot path.
 */
#ifndef LW_PYFRAMES_H
#define LW_PYFRAMES_H

#include <stdint.h>

/* One Python frame as captured on the hot path. `code` is the PyCodeObject*
 * (not referenced: valid only while the frame is alive, i.e. while the
 * capturing thread is still inside the hook). `instr` is the byte offset of
 * the executing instruction in the code object's bytecode, normalised across
 * versions (3.8/3.9 f_lasti, 3.10 f_lasti*2, 3.11/3.12 prev_instr, 3.13+
 * instr_ptr, each minus the start of the bytecode); -1 if unknown / not
 * started. `entry` is 1 when the frame is the first Python frame run by its
 * own native _PyEval_EvalFrameDefault call (3.8-3.10: every frame; 3.11:
 * frame->is_entry; 3.12+: the previous frame is a C-stack shim frame). */
typedef struct {
    const void *code;
    int32_t instr;
    uint8_t entry;
} lw_pyframe;

/* Finds the CPython runtime in this process (idempotent, thread-safe). Returns
 * 0 when a supported CPython (3.8-3.14, 64-bit, not free-threaded, not a
 * Py_TRACE_REFS build) is
 * loaded, -1 otherwise; after -1 lw_py_capture() always returns 0. Works
 * before Py_Initialize (frames are simply not there yet). Best called once
 * from the library constructor so that the first capture never initialises. */
int lw_py_init(void);

/* Call after a successful dlopen(): when no Python was found before, looks
 * again (libpython may just have been loaded, e.g. by an embedding program).
 * Returns what lw_py_init() returns. Not for the hot path. */
int lw_py_reinit(void);

/* HOT PATH. Writes up to `max` frames of the calling thread, innermost first,
 * and returns how many. No allocation, no locks, no syscalls, no GIL. Returns
 * 0 (records no Python frames rather than guess) when: no supported Python;
 * the thread never ran Python; its thread state belongs to a sub-interpreter;
 * the interpreter is finalising; any pointer or value fails validation. When
 * the stack is deeper than `max`, the `max` innermost frames are returned. */
int lw_py_capture(lw_pyframe *out, int max);

/* HOT PATH. lw_py_capture with a per-thread cache (the caller keeps one per
 * thread, zeroed at first): when the thread's frame chain is word for word
 * the one of its last capture (same frames, code, instructions, links),
 * the last result is returned without walking it again. c->gen changes
 * whenever the result may differ from the previous one (0 frames: gen
 * unchanged and the return value says it). Chains deeper than
 * LW_PY_CACHE_FRAMES, or cut at max, are walked every time. */
#define LW_PY_CACHE_FRAMES 64
typedef struct {
    uint64_t gen;
    int steps; /* chain frames remembered; 0: none */
    int n;     /* frames they gave */
    uintptr_t f[LW_PY_CACHE_FRAMES];
    uintptr_t w[LW_PY_CACHE_FRAMES][4];
    lw_pyframe out[LW_PY_CACHE_FRAMES];
} lw_py_cache;
/* The frames are at *frames: out, or on a repeat the cache's own copy of
 * the last result (valid until the thread's next capture with c: read it,
 * do not keep it). */
int lw_py_capture_cached(lw_pyframe *out, int max, lw_py_cache *c, const lw_pyframe **frames);

/* 1 when the calling thread has a Python thread state of the main
 * interpreter but runs no Python frame: autograd's engine threads while they
 * run backward() (PyTorch gives each one a thread state, with no frame of
 * the job). 0 otherwise, or when that cannot be told. Cheap; no locks. */
int lw_py_thread_without_frames(void);

/* Source location of a frame: malloc'd UTF-8 strings; free with
 * lw_py_location_free(). `function` is co_qualname on 3.11+ (e.g.
 * "Trainer.step") and co_name on 3.8-3.10. `line` is -1 when the
 * instruction has no line number. */
typedef struct {
    char *file;
    char *function;
    int line;
} lw_py_location;

/* OFF the hot path: turns a captured frame into file/function/line without
 * the GIL and without calling into the interpreter. The caller must make sure
 * f->code is still alive: call it while the capturing thread is still inside
 * the hook (its frames, hence their code objects, cannot go away), or later
 * only if something else keeps the code object alive. Returns 0 and fills
 * *out, or -1 (and *out zeroed, line -1) if anything fails to validate. */
int lw_py_describe(const lw_pyframe *f, lw_py_location *out);

/* Frees the strings of *loc (safe on a zeroed or already freed location). */
void lw_py_location_free(lw_py_location *loc);

/* PY_VERSION_HEX of the CPython found, e.g. 0x030C01F0; 0 if none. */
int lw_py_version(void);

/* Why lw_py_init() failed, or "ok" / "not initialised"; a static string. */
const char *lw_py_status(void);

/* After lw_py_init() found a Python it cannot read (an unsupported version,
 * a free-threaded build...): why, in one sentence that says reports show no
 * Python lines there. NULL when frames are read or when there is no Python. */
const char *lw_py_unavailable(void);

#endif
