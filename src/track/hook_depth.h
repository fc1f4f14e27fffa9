/* SPDX-License-Identifier: Apache-2.0 */
/* Depth of leakwatch hooks on this thread (hooks/guard.h): only the
 * outermost hook records, so one user allocation is one record whichever layer
 * it entered by. lifecycle.c raises it before the exit report, so that the
 * runtime's teardown calls are not recorded. In the track layer, the highest
 * one that both the hooks and lifecycle.c may reach. */
#ifndef LW_HOOK_DEPTH_H
#define LW_HOOK_DEPTH_H

/* Initial-exec: every hook reads and writes it twice, which in the default
 * model is a __tls_get_addr call each (4 bytes of the static TLS surplus when
 * the library is loaded by attach). */
extern __thread int lw_hook_depth __attribute__((tls_model("initial-exec")));

#endif
