/* SPDX-License-Identifier: Apache-2.0 */
/* The Python helper in an attached job: in a Python process, the leakwatch
 * package's optimizer hook (leakwatch._torch) marks a step after every torch
 * optimizer step, as under the shim's auto-start. Installed at an attach,
 * removed at a detach, each time from a thread of ours that takes the GIL
 * (python_helper.c says how and why). A process without Python: nothing. */
#ifndef LW_ATTACH_PYTHON_HELPER_H
#define LW_ATTACH_PYTHON_HELPER_H

/* Installs the optimizer hook, on a thread of ours: returns at once. */
void lw_python_helper_install(void);

/* Removes it, on a thread of ours: returns at once (the detach does not wait
 * for the GIL). Until it runs, the hook's calls find the library not
 * recording. */
void lw_python_helper_uninstall(void);

#endif
