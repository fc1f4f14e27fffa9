/* SPDX-License-Identifier: Apache-2.0 */
/* Stands in for a free-threaded CPython build (3.13t, 3.14t) in an ordinary
 * one: exports the function that only such builds export, which
 * src/track/pyframes.c uses to recognise them. tests/python/leak_ctypes.py
 * loads it with RTLD_GLOBAL when LW_FAKE_FREE_THREADED names it; leakwatch
 * must then say once that Python lines are unavailable, and show none. */
__attribute__((visibility("default"))) void _Py_MergeZeroLocalRefcount(void *op);
void _Py_MergeZeroLocalRefcount(void *op) {
    (void)op;
}
