/* SPDX-License-Identifier: Apache-2.0 */
/* PyTorch out of the box. In a Python process, before the interpreter starts,
 * a library constructor (torch_mode.c) prepares two things that must be in
 * place before `import torch`:
 *
 *  - LEAKWATCH_TORCH_MODE=segments (default): PyTorch's allocator is left
 *    exactly as configured. LEAKWATCH_TORCH_MODE=tensors (opt-in): the backend
 *    is switched to cudaMallocAsync through its allocator configuration
 *    variable, so each tensor is one cudaMallocAsync/cudaFreeAsync that
 *    leakwatch sees. A backend the user chose is left alone.
 *  - LEAKWATCH_TORCH_STEPS=iteration (default; anything but 0): the leakwatch
 *    Python package's auto-start directory is put first on PYTHONPATH; its
 *    helper marks one step per training iteration, hands PyTorch's own memory
 *    counters to the library at each, and opens a diagnosis window when they
 *    grow (python/leakwatch/_torch.py).
 *
 * Anything else (compilers, shells, any non-Python program) is left exactly as
 * it was. See docs/pytorch.md. */
#ifndef LW_TORCH_MODE_H
#define LW_TORCH_MODE_H

#include <stddef.h>

/* Called once leakwatch starts in this process (its first CUDA call, under
 * lifecycle.c's start lock): prints the constructor's deferred notice, if
 * any, once per process tree (a forked child does not repeat it). */
void lw_torch_mode_started(void);

/* The rewrite rule for PyTorch's allocator configuration, pure (tests and
 * the constructor share it). conf: the value of the variable PyTorch reads,
 * or NULL when it is unset. Returns 1 and writes the new value into out when
 * the variable should be set to it; 0 when it must be left alone, with the
 * backend the user chose (possibly empty) in backend. */
int lw_torch_conf_rewrite(const char *conf, char *out, size_t outlen, char *backend,
                          size_t backendlen);

/* The folder that holds this installation's leakwatch Python package (for
 * leakwatch attach, which imports it into a running interpreter). 1, or 0
 * when there is none. */
int lw_torch_package_dir(char *out, size_t len);

#endif
