/* SPDX-License-Identifier: Apache-2.0 */
#include "hook_depth.h"

__thread int lw_hook_depth __attribute__((tls_model("initial-exec")));
