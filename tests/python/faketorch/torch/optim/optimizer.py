# SPDX-License-Identifier: Apache-2.0
"""The part of torch/optim/optimizer.py that leakwatch relies on: a module
level dict of global post-hooks (a reload makes a new, empty one), the
registration function, and Optimizer.step() calling each hook as
hook(optimizer, args, kwargs) after the update."""
from collections import OrderedDict

_global_optimizer_post_hooks = OrderedDict()
_next_id = [0]


class RemovableHandle:
    def __init__(self, hooks, key):
        self._hooks, self._key = hooks, key

    def remove(self):
        self._hooks.pop(self._key, None)


def register_optimizer_step_post_hook(hook):
    _next_id[0] += 1
    _global_optimizer_post_hooks[_next_id[0]] = hook
    return RemovableHandle(_global_optimizer_post_hooks, _next_id[0])


class Optimizer:
    def __init__(self, update):
        self._update = update

    def step(self, *args, **kwargs):
        out = self._update(*args, **kwargs)
        # Looked up at call time, as in PyTorch: after a reload the new dict.
        for hook in list(globals()["_global_optimizer_post_hooks"].values()):
            hook(self, args, kwargs)
        return out
