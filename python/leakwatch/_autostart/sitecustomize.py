# SPDX-License-Identifier: Apache-2.0
"""leakwatch's auto-start. libleakwatch.so puts this folder first on
PYTHONPATH in Python processes (LEAKWATCH_TORCH_STEPS=1, the default), so
Python's site module imports this file at startup instead of the first
sitecustomize it would otherwise find.

It does two things, then steps aside:
  1. When libleakwatch.so is loaded and enabled, it installs leakwatch._torch
     (loaded as _leakwatch_helper._torch, never as "leakwatch", which is the
     job's name to import): a step is marked after every torch optimizer
     step.
  2. It runs the sitecustomize this one shadows (the next one on sys.path),
     as Python would have, and leaves that module in sys.modules.

Its own failures are silent: it must never stop a job from starting. Errors
raised by the shadowed sitecustomize propagate as they would without us
(site prints "Error in sitecustomize").
"""


def _leakwatch_start(here):
    import os
    import sys

    value = os.environ.get("LEAKWATCH_TORCH_STEPS", "1").strip().lower()
    if value in ("0", "false", "no", "off"):
        return
    package = os.path.join(os.path.dirname(os.path.dirname(here)), "leakwatch")
    # Loaded from our tree by path, under a name of our own: sys.path stays
    # as the job set it, and "leakwatch" stays the job's to import (its own
    # leakwatch.py, or this package, which then reuses this copy).
    name = "_leakwatch_helper"
    helper = sys.modules.get(name)
    if helper is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location(
            name,
            os.path.join(package, "__init__.py"),
            submodule_search_locations=[package],
        )
        helper = importlib.util.module_from_spec(spec)
        sys.modules[name] = helper
        try:
            spec.loader.exec_module(helper)
        except BaseException:
            del sys.modules[name]
            raise
    if helper.enabled():
        import importlib

        importlib.import_module(name + "._torch").install()


def _leakwatch_chain(here):
    import os
    import sys
    from importlib.machinery import PathFinder

    def same(p):
        try:
            return os.path.realpath(p or ".") == here
        except (OSError, ValueError):
            return False

    entries = list(sys.path)
    mine = [i for i, p in enumerate(entries) if same(p)]
    rest = entries[mine[0] + 1 :] if mine else entries
    rest = [p for p in rest if not same(p)]
    spec = PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    ours = sys.modules.get("sitecustomize")
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if ours is not None:
            sys.modules["sitecustomize"] = ours
        raise


def _leakwatch_main():
    import os

    here = os.path.dirname(os.path.realpath(__file__))
    try:
        _leakwatch_start(here)
    except Exception:
        pass
    _leakwatch_chain(here)


_leakwatch_main()
