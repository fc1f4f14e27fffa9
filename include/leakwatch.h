/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch — find gradual GPU memory leaks. Public API of libleakwatch.so.
 *
 * The library works with no code change (LD_PRELOAD). These functions let a
 * program, or Python through ctypes, mark training steps and ask for a report.
 * Both are safe to call from any thread, at any time, in any process: when the
 * library has seen no CUDA allocation yet they do nothing visible. */
#ifndef LEAKWATCH_H
#define LEAKWATCH_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* LEAKWATCH_VERSION, the version of these headers ("1.2.3"), generated
 * from the VERSION file by the build. leakwatch_version() gives the loaded
 * library's. */
#include "leakwatch/version.h"

/* Marks the end of one training step. The detector follows the lowest live
 * bytes seen within each step (the floor); call once per step. */
void leakwatch_step(void);

/* Writes the JSON report now (to LEAKWATCH_REPORT) and prints a short summary
 * on stderr. The report is also written at exit. */
void leakwatch_dump(void);

/* 1 when the library is loaded and recording, 0 when it is loaded but
 * disabled (LEAKWATCH_DISABLE=1 or a failed start). */
int leakwatch_enabled(void);

/* The loaded library's version ("1.2.3", from the VERSION file of its
 * sources); the report's "version" is the same. */
const char *leakwatch_version(void);

/* For PyTorch's helper (python/leakwatch/_torch.py calls these through
 * ctypes at each step; other programs need not). */

/* PyTorch's own counters for one device at the step just marked (call right
 * after leakwatch_step()): allocated = torch.cuda.memory_allocated(device),
 * the bytes of live tensors; reserved = torch.cuda.memory_reserved(device);
 * device_free = the driver's free bytes on that device, or -1 when not read
 * this time. Once a device has such points, its series decides the verdict
 * (the report's growth.signal says "torch_allocated"). Returns bit 0 (1)
 * when the latest evaluation of that device's series sees growth, confirmed
 * or not (the cue for a diagnosis window); bit 1 (2) when the run's leak is
 * pinned host memory and its leaking site is known (the cue for
 * leakwatch_torch_host_blocks); else 0. A few microseconds. */
int leakwatch_torch_counters(int device, long long allocated, long long reserved,
                             long long device_free);

/* The live blocks of the leaking site that holds pinned host memory (the
 * run's pinned host leak): pairs[2k] = a block's address, pairs[2k+1] = its
 * size, at most max_pairs blocks; *site_id = that site's id (the report's
 * sites[].id). Returns how many blocks were written, or -1 when no leaking
 * site holds pinned host memory. Scans the table of live allocations: once
 * per search, never per step. */
int leakwatch_torch_host_blocks(unsigned long long *pairs, int max_pairs, unsigned int *site_id);

/* Around each torch.autograd.backward()/grad() call, on the calling thread:
 * entering = 1 before, 0 after. Meanwhile an allocation made on a thread
 * with a Python thread state but no Python frame (autograd's engine threads)
 * is attributed to the frames of the thread that called backward(), and its
 * site is marked as made in backward. */
void leakwatch_torch_backward(int entering);

/* The rank and world size of the job's default process group
 * (torch.distributed.get_rank(), get_world_size()), once the job has created
 * it: from then on they are the process's rank (the report's rank and
 * world_size, %r in LEAKWATCH_REPORT, the rank every line on stderr names),
 * whatever the launcher (mp.spawn sets no RANK). */
void leakwatch_torch_rank(int rank, int world_size);

/* What the helper found, for the report, as values (never JSON text): the
 * library keeps them and writes the JSON itself, by the report's fields
 * (docs/report-fields.md). Each value names its field by path, as the
 * field list writes it with its abbreviations written out
 * ("sites[].owners[].count", "sites[].where.file",
 * "torch.diagnosis.windows[].state"), with one array position per "[]" in
 * the path, outermost first, and -1 in the slots left over. */
enum {
    LEAKWATCH_VALUE_NULL = 0,
    LEAKWATCH_VALUE_BOOL = 1,   /* number: nonzero is true */
    LEAKWATCH_VALUE_NUMBER = 2, /* number */
    LEAKWATCH_VALUE_STRING = 3, /* text, UTF-8 (other bytes are written as U+FFFD) */
    LEAKWATCH_VALUE_ARRAY = 4,  /* the array is there (empty unless elements follow) */
    LEAKWATCH_VALUE_OBJECT = 5, /* the object is there (empty unless members follow) */
};
typedef struct {
    const char *path;
    int index[3];
    int type; /* LEAKWATCH_VALUE_* */
    double number;
    const char *text;
} leakwatch_value;

/* One section of what the helper found, replacing the section's earlier
 * values: "sites" (PyTorch's sites from its allocation history: paths under
 * "sites[]"; the report lists them first, and its answer names the first
 * when PyTorch's counters decided the verdict), "diagnosis" (paths under
 * "torch.diagnosis"), "backend" ("torch.backend"), "steps" ("torch.steps"),
 * "host_owner" (what keeps the pinned host leak's site `site`, the report's
 * sites[].id, alive: paths under "sites[].owner", "sites[].owners",
 * "sites[].owner_search", first index 0; written into that site's entry).
 * The library composes the places' labels (where.label) and the owners'
 * sentences (owner.text, from the owner's values, or from owner.unnamed_*
 * and the site's owner_search when owner.name is null), which are not
 * handed over. message, if not NULL, is printed once on stderr ("diagnosis",
 * "backend", "steps"). A value is skipped when no field has its path, its
 * type is not one the field allows, its positions do not match the path's
 * "[]", or it lies outside the section. Returns how many values were
 * skipped (0: all taken), or -1 and nothing stored: not recording, an
 * unknown section, a host_owner without a site, every value skipped. */
int leakwatch_torch_values(const char *section, unsigned int site, const leakwatch_value *values,
                           int n, const char *message);

/* The same batch packed, for callers for whom n structures cost (Python's
 * ctypes builds each one in the interpreter, several microseconds a value,
 * where a window's sites are thousands of values): paths holds the batch's
 * npaths distinct paths (paths_size bytes), each ended by a NUL byte; cells
 * 6 ints per value: its path's number in paths (from 0), its 3 positions,
 * its type, its text's length in bytes (-1: none); numbers one per value;
 * texts the values' strings end to end, no separator (ntexts bytes). A
 * value whose path number or text lies outside these is skipped. Returns
 * as leakwatch_torch_values. */
int leakwatch_torch_values_packed(const char *section, unsigned int site, const char *paths,
                                  size_t paths_size, int npaths, const int *cells,
                                  const double *numbers, const char *texts, size_t ntexts, int n,
                                  const char *message);

/* Older helpers' entry: field "step_unit" ({"unit": ..., "module": ...}, as
 * leakwatch_torch_step_unit) only. The fields once handed over as JSON text
 * ("sites", "diagnosis", "backend", "steps", "host_owner", "answer") are
 * leakwatch_torch_values' now: -1. Returns 0, or -1 (not recording, another
 * field, a unit that is neither "module_call" nor "optimizer_step"). */
int leakwatch_torch_info(const char *field, const char *json, const char *message);

/* What one step is, said by the PyTorch helper: unit "module_call" (a call
 * of the job's outermost nn.Module; module: its class's name, an
 * identifier, else left out) or "optimizer_step" (module NULL): the report's
 * growth.step_unit and growth.step_module. Returns 0, or -1 for another
 * unit or when not recording. The same as leakwatch_torch_info's
 * "step_unit", which takes it as JSON. */
int leakwatch_torch_step_unit(const char *unit, const char *module);

/* A size as leakwatch prints it ("1.50 MiB", "512 B", "?" when not finite),
 * into out (n bytes, terminated): the PyTorch helper's sentences print
 * their sizes with it. Returns the length written, or -1 (no buffer). */
int leakwatch_format_bytes(double bytes, char *out, size_t n);

/* The anatomy of a device's memory and out-of-memory (python/leakwatch/
 * _anatomy.py): values[] = weights, gradients, optimizer state (bytes, each
 * storage once), PyTorch's allocated, reserved, peak allocated, peak
 * reserved, the driver's free and total, the failed request (-1 unknown);
 * n at least 10. event 0: a sample (sparse: never per step); 1: PyTorch's
 * out-of-memory observer fired on that device (the report is written now,
 * with its post-mortem, the report's "oom"); 2: the observer is attached
 * (device, values ignored). Returns 0, or -1 when not recording. */
int leakwatch_torch_anatomy(int device, int event, const long long *values, int n);

/* For the Python package (imported, with the GIL held): registers, once per
 * process, a Py_AtExit callback that writes the final report and summary at
 * the end of CPython's finalisation. It runs on every ending that finalises,
 * including an uncaught KeyboardInterrupt, after which CPython kills itself
 * with SIGINT instead of calling exit(). Returns 0, or -1 when the process has
 * no CPython. Nothing is written in a process that made no CUDA call. */
int leakwatch_python_exit_hook(void);

/* For the Python package: 1 when a Python frame in file (its co_filename) is
 * the user's own code by the rule the reports use to pick the place to look
 * (src/base/where.h: not the standard library, installed packages, torch or
 * leakwatch's own package; LEAKWATCH_USER_CODE adds paths and packages),
 * else 0. */
int leakwatch_user_code(const char *file);

#ifdef __cplusplus
}
#endif
#endif
