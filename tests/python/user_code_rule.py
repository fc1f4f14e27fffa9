# SPDX-License-Identifier: Apache-2.0
"""The Python helper's copy of "user code" (python/leakwatch/_torch.py,
_user_code_rule) on the paths read from stdin, one a line: prints, for each,
1 or 0, then a tab and the path. tests/unit/test_where.c compares them with
the library's rule (src/base/where.c) on the same paths, with the same
LEAKWATCH_USER_CODE. With LW_LIB set, the library's exported decision
(leakwatch_user_code, which the helper uses when the library is loaded) is
printed as a third column."""
import ctypes
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from leakwatch import _torch  # noqa: E402

lib = os.environ.get("LW_LIB")
fn = None
if lib:
    fn = ctypes.CDLL(lib).leakwatch_user_code
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p]
for line in sys.stdin:
    path = line.rstrip("\n")
    out = "%d\t%s" % (_torch._user_code_rule(path), path)
    if fn is not None:
        out += "\t%d" % fn(os.fsencode(path))
    print(out)
