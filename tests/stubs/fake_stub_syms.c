/* SPDX-License-Identifier: Apache-2.0 */
/* Loader stand-ins for NVIDIA's CUDA 12 libraries (tests only): one weak
 * function per symbol of the committed list tests/stubs/cuda12/<soname>.syms
 * (what Debian's PyTorch 2.6, gloo and PyCUDA reference; the Makefile turns
 * the list into FAKE_STUB(name) lines, FAKE_STUB_SYMS). Each answers
 * FAKE_STUB_RESULT: the library's "not supported" status, or success where
 * doing nothing is a correct answer. fake_cuda12_libs.c defines, strongly,
 * the few functions that must do something (handles, versions, strings). */

#ifndef FAKE_STUB_RESULT
#define FAKE_STUB_RESULT 0
#endif

#define FAKE_STUB(name)                                                                            \
    __attribute__((weak, visibility("default"))) long name(void);                                  \
    long name(void) {                                                                              \
        return FAKE_STUB_RESULT;                                                                   \
    }

#include FAKE_STUB_SYMS
