# SPDX-License-Identifier: Apache-2.0
"""torch.multiprocessing's CUDA tensor sharing: pickling a CUDA tensor for
another process asks the allocator for an IPC handle (torch/multiprocessing/
reductions.py reduce_tensor -> storage._share_cuda_() -> shareIpcHandle)."""
from ..cuda import memory as _mem


def reduce_tensor(tensor):
    handle = _mem.allocator(tensor._storage.device).share_ipc_handle(tensor.data_ptr())
    return ("rebuild_cuda_tensor", handle, tensor.shape)
