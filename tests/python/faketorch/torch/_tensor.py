# SPDX-License-Identifier: Apache-2.0
"""Tensors of the stand-in torch: a shape, a dtype size, a device and, on a
CUDA device, one block from the allocator (cuda/memory.py), freed when the
tensor's storage dies (CPython refcounting, as PyTorch's StorageImpl dies
with its last reference). Autograd as torch/csrc/autograd does it for what
leakwatch sees: an operation on tensors that require grad, with grad mode
on, gives its output a grad_fn node holding the tensors saved for backward
and the nodes of its inputs (next_functions); backward() runs on an engine
thread while the calling thread waits (torch/csrc/autograd/engine.cpp: each
device has its own worker thread; the caller blocks in execute()), frees the
saved tensors (SavedVariable release unless retain_graph) and accumulates
gradients into the leaves' .grad. Values are not computed, except Python
scalars for .item()."""
import threading

from .cuda import memory as _mem

_grad = threading.local()


def is_grad_enabled():
    return getattr(_grad, "enabled", True)


class no_grad:
    """torch.no_grad(): a context manager and a decorator."""

    def __enter__(self):
        self.prev = is_grad_enabled()
        _grad.enabled = False

    def __exit__(self, *exc):
        _grad.enabled = self.prev
        return False

    def __call__(self, fn):
        def wrapper(*args, **kwargs):
            with no_grad():
                return fn(*args, **kwargs)

        wrapper.__name__, wrapper.__qualname__ = fn.__name__, fn.__qualname__
        return wrapper


class _Storage:
    __slots__ = ("device", "addr", "nbytes", "__weakref__")

    def __init__(self, device, nbytes):
        self.device, self.nbytes, self.addr = device, nbytes, 0
        self.addr = _mem.allocator(device).malloc(nbytes)[0] if device is not None else 0

    def data_ptr(self):
        return self.addr

    def __del__(self):
        if self.device is not None and self.addr:
            try:
                _mem.allocator(self.device).free(self.addr)
            except Exception:
                pass


_pinned_free = {}  # size -> blocks cached for reuse, as the CachingHostAllocator's


class _PinnedStorage:
    """A CPU storage in pinned host memory (torch.empty(..., pin_memory=True)),
    as PyTorch's CachingHostAllocator gives it: one block per storage, its
    size rounded up to a power of two, from cudaHostAlloc (through the
    runtime) unless a freed block of that size is cached; a dead storage's
    block goes back to the cache, never to the runtime."""
    __slots__ = ("device", "addr", "nbytes", "size", "__weakref__")

    def __init__(self, nbytes):
        self.device, self.nbytes, self.addr = None, nbytes, 0
        self.size = 1 << max(nbytes - 1, 0).bit_length()
        cached = _pinned_free.get(self.size)
        self.addr = cached.pop() if cached else _mem.runtime().host_alloc(self.size)

    def data_ptr(self):
        return self.addr

    def __del__(self):
        if self.addr:
            _pinned_free.setdefault(self.size, []).append(self.addr)


_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad().")


class Node:
    """A grad_fn: what backward needs (saved tensors) and where to go next.
    As torch/csrc/autograd's Python nodes: name() gives the type name,
    next_functions is a tuple of (node, input_nr) pairs whose leaves are
    AccumulateGrad nodes (one per leaf tensor, holding it as .variable), and
    the saved tensors are attributes _saved_NAME, which raise RuntimeError
    once backward has freed them."""

    def __init__(self, name, saved, inputs, saved_names=None):
        self._name = name
        self.saved = [t for t in saved if t is not None]
        self.saved_names = tuple(f"_saved_{n}" for n in (saved_names or
                                                          range(len(self.saved))))
        self.next_functions = tuple((i.grad_fn or _accumulate(i), 0) for i in inputs
                                    if i.grad_fn is not None or i.requires_grad)
        self.leaves = [i for i in inputs if i.grad_fn is None and i.requires_grad]
        self.hooks = []
        self.out = None  # (shape, itemsize, device) of the gradient hooks receive

    def name(self):
        return self._name

    def __getattr__(self, attr):
        names = self.__dict__.get("saved_names", ())
        if attr in names:
            saved = self.__dict__.get("saved")
            if not saved:
                raise RuntimeError(_FREED)
            return saved[names.index(attr)]
        raise AttributeError(attr)

    def __dir__(self):
        return list(super().__dir__()) + list(self.saved_names)

    def __repr__(self):
        return f"<{self._name}>"


class AccumulateGrad(Node):
    """The node of a leaf that requires grad, made once per leaf."""

    def __init__(self, variable):
        super().__init__("AccumulateGrad", [], [])
        self.variable = variable


def _accumulate(leaf):
    node = leaf.__dict__.get("_accumulate")
    if node is None:
        node = leaf._accumulate = AccumulateGrad(leaf)
    return node


class device:
    def __init__(self, spec, index=None):
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        spec = str(spec)
        self.type, _, idx = spec.partition(":")
        self.index = int(idx) if idx else (index if index is not None else
                                           (0 if self.type == "cuda" else None))

    def __repr__(self):
        return f"device(type='{self.type}', index={self.index})"


def _dev(d):
    if d is None:
        return None
    if isinstance(d, int):
        return d
    dv = device(d)
    return dv.index if dv.type == "cuda" else None


class Tensor:
    def __init__(self, shape, itemsize=4, device=None, requires_grad=False, value=0.0,
                 storage=None):
        self.shape = tuple(shape)
        self.itemsize = itemsize
        n = 1
        for s in self.shape:
            n *= s
        self.numel_ = n
        self._storage = storage if storage is not None else _Storage(device, n * itemsize)
        self.requires_grad = requires_grad
        self.grad_fn = None
        self.grad = None
        self.value = value

    # -- properties --

    @property
    def device(self):
        d = self._storage.device
        return device("cpu") if d is None else device("cuda", d)

    @property
    def is_cuda(self):
        return self._storage.device is not None

    def numel(self):
        return self.numel_

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def untyped_storage(self):
        return self._storage

    def data_ptr(self):
        return self._storage.addr

    def __repr__(self):
        return f"tensor(shape={self.shape}, device={self.device})"

    # -- moves --

    def to(self, dev, non_blocking=False):
        d = _dev(dev)
        if d == self._storage.device:
            return self
        out = Tensor(self.shape, self.itemsize, device=d, value=self.value)
        return _track(out, "ToCopyBackward", [], [self])

    def cuda(self, dev=None, non_blocking=False):
        return self.to(dev if dev is not None else 0)

    def cpu(self):
        return self.to("cpu")

    def detach(self):
        t = Tensor(self.shape, self.itemsize, storage=self._storage, value=self.value)
        return t

    def item(self):
        # As PyTorch: only a one-element tensor converts to a Python number.
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return float(self.value)

    def __float__(self):
        return float(self.value)

    def argmax(self, dim=None):
        shape = self.shape[:1] if dim is not None and len(self.shape) > 1 else ()
        return Tensor(shape, 8, device=self._storage.device)

    # -- arithmetic --

    def _binary(self, other, name):
        if isinstance(other, Tensor):
            shape = self.shape if self.numel_ >= other.numel_ else other.shape
            value = self.value + other.value
            inputs = [self, other]
        else:
            shape, value, inputs = self.shape, self.value + float(other), [self]
        dev = self._storage.device if isinstance(other, (int, float)) or self.is_cuda else \
            other._storage.device
        out = Tensor(shape, self.itemsize, device=dev, value=value)
        return _track(out, name, [], inputs)

    def __add__(self, other):
        return self._binary(other, "AddBackward0")

    __radd__ = __add__

    def __mul__(self, other):
        return self._binary(other, "MulBackward0")

    __rmul__ = __mul__

    def __eq__(self, other):
        """Elementwise, as torch: a new bool tensor (no grad)."""
        shape = self.shape
        if isinstance(other, Tensor) and other.numel_ > self.numel_:
            shape = other.shape
        return Tensor(shape, 1, device=self._storage.device)

    __hash__ = object.__hash__  # by identity, as torch.Tensor

    def float(self):
        out = Tensor(self.shape, 4, device=self._storage.device, value=self.value)
        return _track(out, "ToCopyBackward0", [], [self])

    def __truediv__(self, other):
        if isinstance(other, Tensor):
            return self._binary(other, "DivBackward0")
        out = self._binary(0.0, "DivBackward0")
        out.value = self.value / float(other)
        return out

    def __iadd__(self, other):
        """In place: no new memory; with grad, the node joins other's graph."""
        if isinstance(other, Tensor):
            self.value += other.value
            if is_grad_enabled() and (self.requires_grad or other.requires_grad):
                self.requires_grad = True
                node = Node("AddBackward0", [], [self, other])
                self.grad_fn = node
        else:
            self.value += float(other)
        return self

    def mean(self):
        out = Tensor((), self.itemsize, device=self._storage.device, value=self.value)
        return _track(out, "MeanBackward0", [], [self])

    def sum(self):
        out = Tensor((), self.itemsize, device=self._storage.device, value=self.value)
        return _track(out, "SumBackward0", [], [self])

    def norm(self):
        out = Tensor((), self.itemsize, device=self._storage.device, value=self.value)
        return _track(out, "NormBackward1", [], [self])

    def register_hook(self, hook):
        """hook(grad) runs in backward, on the engine's thread, with the
        gradient of this tensor (new memory the engine allocated)."""
        if self.grad_fn is None:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        self.grad_fn.hooks.append(hook)
        self.grad_fn.out = (self.shape, self.itemsize, self._storage.device)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        # As torch/_tensor.py: through torch.autograd.backward, looked up at
        # each call.
        from . import autograd

        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _track(out, name, saved, inputs, saved_names=None):
    """Gives out a grad_fn when autograd records this operation."""
    if is_grad_enabled() and any(i.requires_grad for i in inputs):
        out.requires_grad = True
        out.grad_fn = Node(name, saved, inputs, saved_names)
    return out


def _new(shape, itemsize=4, device=None, requires_grad=False, value=0.0, pin_memory=False):
    if pin_memory and _dev(device) is None:
        n = 1
        for d in shape:
            n *= d
        return Tensor(shape, itemsize, None, requires_grad, value,
                      storage=_PinnedStorage(n * itemsize))
    return Tensor(shape, itemsize, _dev(device), requires_grad, value)
