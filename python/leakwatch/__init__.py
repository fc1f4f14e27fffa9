# SPDX-License-Identifier: Apache-2.0
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

Installed with pip, the package also carries the library and the command:
library_path() is the libleakwatch.so to preload, and `python -m leakwatch`
(or the `leakwatch` console script) runs the command.

    LD_PRELOAD=$(python -m leakwatch --library) python train.py
"""

import ctypes
import os
import sys
import time

# The library loads this package under a name of its own (its auto-start
# under the preload, and attach), never as "leakwatch": that name follows
# Python's rules, and a job's own leakwatch.py or leakwatch/ earlier on
# sys.path is the job's. A job that imports this package as leakwatch where
# the library loaded it already gets that copy (one state, one optimizer
# hook): it replaces itself in sys.modules, which the import returns.
_HELPER = "_leakwatch_helper"
_helper = sys.modules.get(_HELPER) if __name__ != _HELPER else None
if _helper is not None:
    sys.modules[__name__] = _helper
    if _HELPER + "._torch" in sys.modules:
        sys.modules[__name__ + "._torch"] = sys.modules[_HELPER + "._torch"]

__all__ = [
    "step",
    "dump",
    "enabled",
    "loaded_version",
    "library_path",
    "command_path",
    "__version__",
]

_here = os.path.dirname(os.path.abspath(__file__))


def _read_version():
    try:
        from ._version import version  # written by the wheel's build and make install

        return version
    except ImportError:
        pass
    try:  # the source tree: python/leakwatch -> VERSION
        with open(os.path.join(_here, "..", "..", "VERSION")) as f:
            return f.read().strip()
    except OSError:
        return "unknown"


__version__ = _read_version()


def _find(name, installed):
    """name in this package's _bin (pip), else where make install or the
    source tree put it, relative to this file."""
    places = [
        os.path.join(_here, "_bin", name),
        # make install: PREFIX/share/leakwatch/python/leakwatch
        os.path.join(_here, "..", "..", "..", "..", installed, name),
        # the source tree (or an editable install): python/leakwatch -> build/
        os.path.join(_here, "..", "..", os.environ.get("LEAKWATCH_BUILD_DIR", "build"), name),
    ]
    for p in places:
        if os.path.isfile(p) and os.access(p, os.R_OK):
            return os.path.realpath(p)
    raise FileNotFoundError(
        "leakwatch: %s not found (looked in %s); reinstall leakwatch "
        "(pip install leakwatch, or make && make install)"
        % (name, ", ".join(os.path.normpath(os.path.dirname(p)) for p in places))
    )


def library_path():
    """The path of the libleakwatch.so installed with this package: the one
    to put in LD_PRELOAD. Raises FileNotFoundError when it is missing."""
    return _find("libleakwatch.so", "lib")


def command_path():
    """The path of the leakwatch command installed with this package."""
    return _find("leakwatch", "bin")


def _lookup(name, restype):
    try:
        fn = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError, TypeError):
        return None
    fn.restype = restype
    fn.argtypes = []
    return fn


_BUILTIN_DEFS = []  # the PyMethodDef structures behind _builtins(): alive for good
_BUILTINS = []  # (step, backward_enter, backward_leave), once made


def _builtins():
    """(step, backward_enter, backward_leave): the library's leakwatch_py_*
    (src/process/public_api.c) as Python builtins, or None where the library
    or CPython's API lacks them (looked for again on the next call: the
    library may come later, with leakwatch attach). A builtin's call costs
    tens of nanoseconds, a ctypes call one to three microseconds: these run
    at every step (the mark, and around every backward)."""
    if _BUILTINS:
        return _BUILTINS[0]
    try:
        lib = ctypes.CDLL(None)
        if lib.leakwatch_py_builtins() != 0:
            return None

        class MethodDef(ctypes.Structure):
            _fields_ = [("ml_name", ctypes.c_char_p), ("ml_meth", ctypes.c_void_p),
                        ("ml_flags", ctypes.c_int), ("ml_doc", ctypes.c_char_p)]

        new = ctypes.pythonapi.PyCFunction_NewEx
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.py_object, ctypes.py_object]
        fns = []
        for name in ("leakwatch_py_step", "leakwatch_py_backward_enter",
                     "leakwatch_py_backward_leave"):
            m = MethodDef(name.encode(), ctypes.cast(getattr(lib, name), ctypes.c_void_p).value,
                          0x0004, None)  # METH_NOARGS
            _BUILTIN_DEFS.append(m)
            fns.append(new(ctypes.addressof(m), None, None))
    except (OSError, AttributeError, TypeError, ValueError):
        return None
    _BUILTINS.append(tuple(fns))
    return _BUILTINS[0]


def _step_function():
    """leakwatch_step: the builtin where it can be made, else through ctypes."""
    fast = _builtins()
    return fast[0] if fast is not None else _lookup("leakwatch_step", None)


def _register_exit_hook():
    """The final report on every ending that finalises CPython. After an
    uncaught KeyboardInterrupt CPython kills itself with SIGINT instead of
    calling exit(), past the library's exit handler: the library writes the
    report from a Py_AtExit callback instead (registered with the GIL held,
    hence PyDLL). os._exit runs no handler at all."""
    try:
        fn = getattr(ctypes.PyDLL(None), "leakwatch_python_exit_hook")
        fn.restype = ctypes.c_int
        fn.argtypes = []
        fn()
    except Exception:
        pass


if _helper is None:
    _register_exit_hook()
_step = _step_function()
_dump = _lookup("leakwatch_dump", None)
_enabled = _lookup("leakwatch_enabled", ctypes.c_int)
_lib_version = _lookup("leakwatch_version", ctypes.c_char_p)
_looked_at = time.monotonic()


def _late_lookup():
    """The library may come later (leakwatch attach PID): looked for again,
    at most once a second."""
    global _step, _dump, _enabled, _lib_version, _looked_at
    now = time.monotonic()
    if now - _looked_at < 1.0:
        return
    _looked_at = now
    _step = _step_function()
    _dump = _lookup("leakwatch_dump", None)
    _enabled = _lookup("leakwatch_enabled", ctypes.c_int)
    _lib_version = _lookup("leakwatch_version", ctypes.c_char_p)

# Set by step(): the program marks its own steps, so the optimizer hook must
# not add more (leakwatch._torch reads it).
manual_steps = False

# Set by leakwatch._torch: what follows each mark (PyTorch's counters, the
# diagnosis window), also for marks the program makes itself.
_after_step = None


def step():
    """Marks the end of one training step."""
    global manual_steps
    manual_steps = True
    if _step is None:
        _late_lookup()
    if _step is not None:
        _step()
        if _after_step is not None:
            try:
                _after_step()
            except Exception:
                pass


def dump():
    """Writes the JSON report now (LEAKWATCH_REPORT) and a summary on stderr."""
    if _dump is None:
        _late_lookup()
    if _dump is not None:
        _dump()


def enabled():
    """True when libleakwatch.so is loaded in this process and not disabled."""
    if _enabled is None:
        _late_lookup()
    return _enabled is not None and bool(_enabled())


def loaded_version():
    """The version of the libleakwatch.so loaded in this process, or None
    when none is (__version__ is this package's)."""
    if _lib_version is None:
        return None
    v = _lib_version()
    return v.decode() if v else None


def _auto_step():
    """A step from the optimizer hook: counted unless the program marks its
    own."""
    if _step is None:
        _late_lookup()
    if _step is not None and not manual_steps:
        _step()


class _Fallback:
    """Last on sys.meta_path, after Python's own finders, where the library
    loaded this package as _leakwatch_helper: "import leakwatch" where
    nothing on sys.path has it (leakwatch run or attach, the package not
    installed) gives this package, which then gives the loaded copy. A
    job's own leakwatch earlier on sys.path is found first, as without
    leakwatch."""

    _leakwatch_fallback = True

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        if fullname != "leakwatch" or _HELPER not in sys.modules:
            return None
        import importlib.util

        return importlib.util.spec_from_file_location(
            fullname, os.path.join(_here, "__init__.py"), submodule_search_locations=[_here]
        )


if __name__ == _HELPER and not any(getattr(f, "_leakwatch_fallback", False) for f in sys.meta_path):
    sys.meta_path.append(_Fallback)
