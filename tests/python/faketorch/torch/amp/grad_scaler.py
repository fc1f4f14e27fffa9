# SPDX-License-Identifier: Apache-2.0
"""torch.amp.GradScaler as torch/amp/grad_scaler.py: step(optimizer) unscales,
then _maybe_opt_step calls optimizer.step() only if no gradient was inf/NaN,
so a skipped update runs no optimizer hook. update() once per iteration.
The stand-in's gradients are never inf: FAKETORCH_INF_EVERY=k makes every
k-th step(optimizer) call find one (k=0: never)."""
import os


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0**16, enabled=True):
        self._enabled = enabled
        self._calls = 0
        self._every = int(os.environ.get("FAKETORCH_INF_EVERY", "0"))

    def scale(self, outputs):
        return outputs

    def unscale_(self, optimizer):
        pass

    def _maybe_opt_step(self, optimizer, optimizer_state, *args, **kwargs):
        retval = None
        if not optimizer_state["found_inf"]:
            retval = optimizer.step(*args, **kwargs)
        return retval

    def step(self, optimizer, *args, **kwargs):
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        self._calls += 1
        found_inf = bool(self._every) and self._calls % self._every == 0
        return self._maybe_opt_step(optimizer, {"found_inf": found_inf}, *args, **kwargs)

    def update(self, new_scale=None):
        pass
