# SPDX-License-Identifier: Apache-2.0
"""torch.autograd.backward: the engine runs the graph on its own thread (one
per device in PyTorch, torch/csrc/autograd/engine.cpp) while the calling
thread waits. The engine thread's Python state has no frames of the job; here
it is a plain thread running the engine's loop inside torch."""
import threading

from .. import _tensor


def _run_engine(roots, retain_graph, errors):
    try:
        seen, stack = set(), [r.grad_fn for r in roots if r.grad_fn is not None]
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.hooks:
                shape, itemsize, dev = node.out
                grad = _tensor.Tensor(shape, itemsize, device=dev)
                for hook in node.hooks:
                    hook(grad)
            for leaf in node.leaves:
                if leaf.grad is None:  # AccumulateGrad: the first gradient is new memory
                    leaf.grad = _tensor.Tensor(leaf.shape, leaf.itemsize,
                                               device=leaf._storage.device)
            if not retain_graph:
                node.saved = []  # SavedVariable released after use
            stack.extend(n for n, _ in node.next_functions)
    except BaseException as e:  # handed back to the waiting thread
        errors.append(e)


def _engine_execute(roots, retain_graph):
    """Runs the graph on the engine's thread; the caller waits."""
    errors = []
    t = threading.Thread(target=_run_engine, args=(roots, retain_graph, errors),
                         name="pt_autograd_0")
    t.start()
    t.join()
    if errors:
        raise errors[0]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    roots = [tensors] if isinstance(tensors, _tensor.Tensor) else list(tensors)
    for r in roots:
        if not r.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    # Looked up at each call: a test may stand in a native engine.
    globals()["_engine_execute"](roots, retain_graph)


grad_mode = _tensor
