# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the torch package, for the CPU tests: PyTorch 2.11's
behaviour for everything leakwatch relies on, with device memory from the
CPU stand-in runtime ($LW_CUDART).

  torch.cuda / torch.cuda.memory  the native caching allocator and the
                                  cudaMallocAsync backend (cuda/memory.py)
  torch.Tensor, torch.nn          tensors, autograd graphs and saved tensors,
                                  the modules of the seeds (_tensor.py, nn)
  torch.autograd.backward         the engine on its own thread (autograd)
  torch.optim                     Optimizer/SGD with global step post-hooks
  torch.amp.GradScaler            skips optimizer.step() on inf gradients
  torch.compile                   mode="reduce-overhead"/"max-autotune" or
                                  backend="cudagraphs": cudagraph trees'
                                  checkPoolLiveAllocations
  torch.multiprocessing           CUDA tensor sharing (shareIpcHandle)

Imported, like torch, with torch.optim (torch/__init__ imports it)."""
__version__ = "2.11.0"

from . import _C  # noqa: F401
from . import cuda  # noqa: F401
from . import autograd  # noqa: F401
from ._tensor import Tensor, device, is_grad_enabled, no_grad  # noqa: F401
from ._tensor import _new, _track
from . import nn  # noqa: F401
from . import optim  # noqa: F401
from . import amp  # noqa: F401
from . import multiprocessing  # noqa: F401

float32, int64, uint8 = 4, 8, 1


def empty(*shape, dtype=4, device=None, requires_grad=False, pin_memory=False):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return _new(shape, dtype, device, requires_grad, pin_memory=pin_memory)


def randn(*shape, dtype=4, device=None, requires_grad=False, generator=None):
    return empty(*shape, dtype=dtype, device=device, requires_grad=requires_grad)


zeros = randn


def randint(high, size, device=None, generator=None):
    return _new(tuple(size), 8, device)


def cat(tensors, dim=0):
    """torch.cat: one new tensor on the inputs' device, as long as theirs
    together along dim (other dims: the first input's)."""
    tensors = list(tensors)
    first = tensors[0]
    shape = list(first.shape) or [1]
    shape[dim] = sum((t.shape or (1,))[dim] for t in tensors)
    out = Tensor(tuple(shape), first.itemsize, device=first._storage.device)
    return _track(out, "CatBackward0", [], tensors)


class Generator:
    """torch.Generator: a CPU random-number generator (values are not
    computed here; only the API the examples use)."""

    def __init__(self, device="cpu"):
        self.seed = 0

    def manual_seed(self, seed):
        self.seed = seed
        return self


def compile(model=None, *, mode=None, backend="inductor", fullgraph=False, dynamic=None):
    """torch.compile: with CUDA graphs (mode "reduce-overhead" or
    "max-autotune", or backend "cudagraphs"), cudagraph trees record the
    function into a private memory pool and check its live allocations
    (torch/_inductor/cudagraph_trees.py: check_memory_pool ->
    torch._C._cuda_checkPoolLiveAllocations), which the cudaMallocAsync
    backend refuses."""
    graphs = mode in ("reduce-overhead", "max-autotune") or backend == "cudagraphs"

    def wrap(fn):
        pool = cuda.MemPool.__new__(cuda.MemPool)
        pool.id = (1, 0)
        state = {"recorded": False, "outputs": None}

        def compiled(*args, **kwargs):
            if not graphs:
                return fn(*args, **kwargs)
            if not state["recorded"]:
                with cuda.use_mem_pool(pool):
                    out = fn(*args, **kwargs)
                state["recorded"], state["outputs"] = True, out
                live = [out.data_ptr()] if isinstance(out, Tensor) else []
                _C._cuda_checkPoolLiveAllocations(0, pool.id, live)
                return out
            return state["outputs"]  # replay: the pool's memory is reused

        compiled.__wrapped__ = fn
        return compiled

    return wrap if model is None else wrap(model)
