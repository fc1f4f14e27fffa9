# SPDX-License-Identifier: Apache-2.0
"""torch.cuda of the stand-in: devices ($FAKETORCH_DEVICES, default 1) whose
memory comes from the CPU stand-in runtime, through cuda/memory.py."""
from . import memory
from .memory import (  # noqa: F401
    MemPool,
    empty_cache,
    get_allocator_backend,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats_as_nested_dict,
    use_mem_pool,
)


def is_available():
    return True


def is_initialized():
    return memory.initialized


def device_count():
    return memory.device_count()


def current_device():
    return 0


def synchronize(device=None):
    pass


def is_current_stream_capturing():
    return False


def memory_stats(device=None):
    out = {}

    def walk(prefix, obj):
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        else:
            out[prefix] = obj

    walk("", memory_stats_as_nested_dict(device))
    return dict(sorted(out.items()))


def host_memory_stats():
    return {}
