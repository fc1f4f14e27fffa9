# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the torch package, for the CPU tests: just enough of
torch.optim.optimizer (register_optimizer_step_post_hook and an Optimizer
whose step() runs the global post-hooks, as PyTorch >= 2.0 does) for
leakwatch's automatic steps. Imported, like torch, through torch.optim."""
from . import optim  # noqa: F401  (torch/__init__ imports torch.optim too)
