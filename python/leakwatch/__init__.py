"""leakwatch from Python: mark training steps, write the report now, ask
whether the library is recording.

The functions reach libleakwatch.so through the process's global symbol
scope (ctypes.CDLL(None)), where LD_PRELOAD put it: nothing is loaded by this
package. Without the library every function is a harmless no-op, so a job can
keep these calls when it runs without leakwatch.

    import leakwatch
    for batch in loader:
        ...
        optimizer.step()
        leakwatch.step()      # not needed with PyTorch: see below

Under the shim, PyTorch jobs get steps without any call: the shim's
auto-start (leakwatch/_autostart/sitecustomize.py) registers an optimizer
step post-hook when torch is imported (leakwatch._torch). Calling step()
yourself turns those automatic steps off, so a step is never counted twice.
"""

import ctypes

__all__ = ["step", "dump", "enabled"]


def _lookup(name, restype):
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype = restype
    fn.argtypes = []
    return fn


_step = _lookup("leakwatch_step", None)
_dump = _lookup("leakwatch_dump", None)
_enabled = _lookup("leakwatch_enabled", ctypes.c_int)

# Set by step(): the program marks its own steps, so the optimizer hook must
# not add more (leakwatch._torch reads it).
manual_steps = False


def step():
    """Marks the end of one training step."""
    global manual_steps
    manual_steps = True
    if _step is not None:
        _step()


def dump():
    """Writes the JSON report now (LEAKWATCH_REPORT) and a summary on stderr."""
    if _dump is not None:
        _dump()


def enabled():
    """True when libleakwatch.so is loaded in this process and not disabled."""
    return _enabled is not None and bool(_enabled())


def _auto_step():
    """A step from the optimizer hook: counted unless the program marks its
    own."""
    if _step is not None and not manual_steps:
        _step()
