# SPDX-License-Identifier: Apache-2.0
"""The part of torch/optim/optimizer.py that leakwatch relies on: a module
level dict of global post-hooks (a reload makes a new, empty one), the
registration function, and Optimizer.step() calling each hook as
hook(optimizer, args, kwargs) after the update (the profile_hook_step
wrapper around every subclass's step). State (momentum buffers) is new
device memory at the first step, as in SGD/Adam."""
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
    def __init__(self, params, defaults=None):
        # Optimizer(update): a bare update function (the older tests' form).
        if callable(params):
            self._update, self.params = params, []
        else:
            self._update, self.params = None, list(params)
        self.defaults = defaults or {}
        self.state = {}

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None

    def _init_state(self, p):
        return []

    def step(self, closure=None, *args, **kwargs):
        loss = closure() if closure is not None else None
        if self._update is not None:
            out = self._update(*args, **kwargs)
        else:
            for p in self.params:
                if p.grad is not None and id(p) not in self.state:
                    self.state[id(p)] = self._init_state(p)
            out = loss
        # Looked up at call time, as in PyTorch: after a reload the new dict.
        for hook in list(globals()["_global_optimizer_post_hooks"].values()):
            hook(self, args, kwargs)
        return out


def _like(p):
    from .. import _tensor

    return _tensor.Tensor(p.shape, p.itemsize, device=p._storage.device)


class SGD(Optimizer):
    def __init__(self, params, lr=0.01, momentum=0.0):
        super().__init__(params, {"lr": lr, "momentum": momentum})

    def _init_state(self, p):
        return [_like(p)] if self.defaults["momentum"] else []


class Adam(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, {"lr": lr})

    def _init_state(self, p):
        return [_like(p), _like(p)]  # exp_avg, exp_avg_sq
