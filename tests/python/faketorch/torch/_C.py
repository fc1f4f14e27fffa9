# SPDX-License-Identifier: Apache-2.0
"""The torch._C functions leakwatch and the stand-in's callers use, bound to
the stand-in allocators (torch/csrc/cuda/Module.cpp names)."""
from .cuda import memory as _mem


def _cuda_memoryStats(device):
    return _mem.memory_stats_as_nested_dict(device)


def _cuda_isHistoryEnabled():
    return _mem.allocator(0).is_history_enabled()


def _cuda_getAllocatorBackend():
    return _mem.BACKEND


def _cuda_checkPoolLiveAllocations(device, pool, expected):
    return _mem.allocator(device).check_pool_live_allocations(pool, expected)


def _cuda_attach_out_of_memory_observer(fn):
    return _mem.allocator(0).attach_out_of_memory_observer(fn)


def _cuda_attach_allocator_trace_tracker(fn):
    return _mem.allocator(0).attach_allocator_trace_tracker(fn)
