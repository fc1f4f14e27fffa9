/* SPDX-License-Identifier: Apache-2.0 */
/* The decisions of 'leakwatch attach' that tests call directly. */
#ifndef LW_COMMANDS_ATTACH_H
#define LW_COMMANDS_ATTACH_H

#include <stddef.h>

/* Whether /proc/sys/kernel/yama/ptrace_scope (scope) lets this command trace
 * a process of its user that is not its child; privileged: root or
 * CAP_SYS_PTRACE. 0, or -1 with what exactly to change in err. */
int lw_attach_scope_problem(int scope, int privileged, char *err, size_t n);

#endif
