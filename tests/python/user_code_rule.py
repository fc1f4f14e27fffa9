# SPDX-License-Identifier: Apache-2.0
"""The Python helper's rule of "user code" on the paths read from stdin, one
a line: prints, for each, its copy's decision (python/leakwatch/_torch.py,
_user_code_rule: 1 or 0), a tab, the path, a tab, the library's exported
decision (leakwatch_user_code, from LW_LIB, loaded here as the preload
would), a tab, and what the helper itself decides with the library loaded
(_is_user_file, which asks the library). tests/unit/test_where.c compares
each with the library's rule (src/base/where.c) on the same paths, with the
same LEAKWATCH_USER_CODE."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from leakwatch import _torch  # noqa: E402

paths = [line.rstrip("\n") for line in sys.stdin]
# The helper's copy first, before the library is there to be asked.
copy = [_torch._user_code_rule(p) for p in paths]
# Global, as under LD_PRELOAD: the helper finds the library by its symbols.
fn = ctypes.CDLL(os.environ["LW_LIB"], mode=ctypes.RTLD_GLOBAL).leakwatch_user_code
fn.restype = ctypes.c_int
fn.argtypes = [ctypes.c_char_p]
for p, c in zip(paths, copy):
    print("%d\t%s\t%d\t%d" % (c, p, fn(os.fsencode(p)), _torch._is_user_file(p)))
