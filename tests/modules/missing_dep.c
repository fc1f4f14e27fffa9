/* SPDX-License-Identifier: Apache-2.0 */
/* A shared library the dynamic loader cannot load: it needs
 * libleakwatch-missing-dep.so (built with -DLW_THE_DEP into a folder that is
 * on no search path), as libleakwatch.so would need a library a slim
 * container image lacks. 'leakwatch run --library' must say so in one line
 * (tests/integration/test_cli.c). */
#ifdef LW_THE_DEP
int lw_missing_dep_value(void);
int lw_missing_dep_value(void) {
    return 1;
}
#else
int lw_missing_dep_value(void);
int lw_broken_preload_value(void);
int lw_broken_preload_value(void) {
    return lw_missing_dep_value();
}
#endif
