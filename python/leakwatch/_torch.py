# SPDX-License-Identifier: Apache-2.0
"""A leakwatch step after every torch optimizer step, with no change to the
job's code. Installed at interpreter start by the shim's auto-start
(leakwatch/_autostart/sitecustomize.py), before torch can be imported.

torch.optim.optimizer.register_optimizer_step_post_hook (PyTorch >= 2.0)
runs a hook after every Optimizer.step() of every optimizer. It lives in a
module-level dict of torch.optim.optimizer, so it must be registered after
that module runs, and again whenever it runs again (importlib.reload makes a
new dict). A sys.meta_path finder sees each of those imports: it finds
nothing itself, asks the other finders for the real spec, and wraps that
loader's exec_module so the hook is registered right after the module's code
has run. Nothing else is touched: no import of torch, no wrapped
__import__, the loader's class stays the same (only one instance attribute
is set). Older PyTorch, without the function, is left alone (leakwatch then
samples by time).

With k optimizers stepping per iteration, k steps are marked per iteration:
rates in the report are then per optimizer step.
"""

import sys

import leakwatch

TARGET = "torch.optim.optimizer"


def _on_optimizer_step(optimizer, args, kwargs):
    leakwatch._auto_step()


# Recognised across a reload of this module (a new function object).
_on_optimizer_step._leakwatch = True


def _register(module):
    register = getattr(module, "register_optimizer_step_post_hook", None)
    if register is None:
        return False  # PyTorch < 2.0
    hooks = getattr(module, "_global_optimizer_post_hooks", None)
    if hooks is not None and any(getattr(h, "_leakwatch", False) for h in list(hooks.values())):
        return True
    register(_on_optimizer_step)
    return True


class _Finder:
    _leakwatch = True

    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        spec = None
        for finder in sys.meta_path:
            if getattr(finder, "_leakwatch", False):
                continue
            find = getattr(finder, "find_spec", None)
            if find is not None:
                spec = find(name, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None or getattr(run, "_leakwatch", False):
            return spec

        def exec_module(module):
            run(module)
            try:
                _register(module)
            except Exception:  # never break the job's import of torch
                pass

        exec_module._leakwatch = True
        try:
            loader.exec_module = exec_module
        except (AttributeError, TypeError):
            pass  # a loader that takes no attributes: no automatic steps
        return spec


def install():
    """Idempotent; works whether torch is imported later (the usual case, from
    sitecustomize) or already was."""
    if not any(getattr(f, "_leakwatch", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    module = sys.modules.get(TARGET)
    if module is not None:
        _register(module)
