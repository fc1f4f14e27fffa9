# SPDX-License-Identifier: Apache-2.0
"""A training loop as PyTorch runs it, through the CPU stand-in runtime
($LW_CUDART) with ctypes, and the (fake) torch package for the steps: no
step is marked by this script, only optimizer.step() is called. The test
checks that leakwatch marks one step per optimizer step and names the line
that allocates the leaking memory.

    torch_train.py PATTERN [fixed] [reload]

PATTERN, the allocation pattern of one PyTorch allocator configuration:
  tensors   backend:cudaMallocAsync: each tensor one cudaMallocAsync on the
            per-thread default stream (cudaMallocAsync_ptsz), freed with
            cudaFreeAsync_ptsz; the leak keeps each step's loss tensor.
  segments  native caching allocator: a 20 MiB segment for activations at the
            start (cached, never freed), then a new 2 MiB segment (cudaMalloc)
            every 4 steps as kept small tensors fill the last one.
  vmm       expandable segments: one address reservation, then a 2 MiB page
            (cuMemCreate + cuMemMap, found with
            cudaGetDriverEntryPointByVersion) every 4 steps.
fixed: nothing is kept. reload: importlib.reload(torch.optim.optimizer)
halfway (its hook dict starts empty again)."""
import ctypes
import importlib
import os
import sys

import torch
import torch.optim.optimizer

PATTERN = sys.argv[1]
FIXED = "fixed" in sys.argv[2:]
RELOAD = "reload" in sys.argv[2:]
STEPS = int(os.environ.get("STEPS", "120"))
MiB = 1 << 20

rt = ctypes.CDLL(os.environ["LW_CUDART"])
vp = ctypes.c_void_p
rt.cudaMalloc.argtypes = [ctypes.POINTER(vp), ctypes.c_size_t]
rt.cudaFree.argtypes = [vp]
rt.cudaMallocAsync_ptsz.argtypes = [ctypes.POINTER(vp), ctypes.c_size_t, vp]
rt.cudaFreeAsync_ptsz.argtypes = [vp, vp]


def check(r):
    if r != 0:
        raise RuntimeError(f"CUDA error {r}")


def new_tensor(nbytes):
    """A device tensor under backend:cudaMallocAsync. (A function, not a
    class: CPython 3.13 specialises class calls through a frame leakwatch
    does not walk yet, which would hide the calling lines.)"""
    ptr = vp()
    check(rt.cudaMallocAsync_ptsz(ctypes.byref(ptr), nbytes, None))
    return ptr


def free_tensor(ptr):
    check(rt.cudaFreeAsync_ptsz(ptr, None))


history = []


def train_tensors(optimizer):
    for step in range(STEPS):
        acts = [new_tensor(256 * 1024) for _ in range(4)]  # forward activations
        loss = new_tensor(512)  # LEAK-TENSORS: loss = criterion(outputs, targets)
        for a in acts:  # backward frees the graph's buffers
            free_tensor(a)
        optimizer.step()
        if FIXED:
            free_tensor(loss)
        else:
            history.append(loss)  # total_loss += loss
        maybe_reload(step)


def train_segments(optimizer):
    act = vp()
    check(rt.cudaMalloc(ctypes.byref(act), 20 * MiB))  # cached activation segment
    for step in range(STEPS):
        if step % 4 == 0 and not FIXED:
            seg = vp()
            check(rt.cudaMalloc(ctypes.byref(seg), 2 * MiB))  # LEAK-SEGMENTS
            history.append(seg)
        optimizer.step()
        maybe_reload(step)


class Prop(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("requestedHandleTypes", ctypes.c_int),
        ("location_type", ctypes.c_int),
        ("location_id", ctypes.c_int),
        ("win32HandleMetaData", vp),
        ("allocFlags", ctypes.c_ubyte * 8),
    ]


def driver(name, restype, *argtypes):
    fp = vp()
    rt.cudaGetDriverEntryPointByVersion.argtypes = [
        ctypes.c_char_p, ctypes.POINTER(vp), ctypes.c_uint, ctypes.c_ulonglong, vp]
    check(rt.cudaGetDriverEntryPointByVersion(name.encode(), ctypes.byref(fp), 12000, 0, None))
    return ctypes.CFUNCTYPE(restype, *argtypes)(fp.value)


def train_vmm(optimizer):
    u64, sz = ctypes.c_uint64, ctypes.c_size_t
    check(rt.cudaFree(None))  # initialise, as PyTorch does
    reserve = driver("cuMemAddressReserve", ctypes.c_int, ctypes.POINTER(u64), sz, sz, u64,
                     ctypes.c_ulonglong)
    create = driver("cuMemCreate", ctypes.c_int, ctypes.POINTER(u64), sz, ctypes.POINTER(Prop),
                    ctypes.c_ulonglong)
    mmap = driver("cuMemMap", ctypes.c_int, u64, sz, sz, u64, ctypes.c_ulonglong)
    prop = Prop(type=1, location_type=1, location_id=0)
    va = u64()
    pages = STEPS // 4 + 1
    check(reserve(ctypes.byref(va), (pages + 1) * 2 * MiB, 0, 0, 0))
    h = u64()
    check(create(ctypes.byref(h), 2 * MiB, ctypes.byref(prop), 0))  # weights: the first page
    check(mmap(va.value, 2 * MiB, 0, h.value, 0))
    mapped = 1
    for step in range(STEPS):
        if step % 4 == 0 and not FIXED:
            h = u64()
            check(create(ctypes.byref(h), 2 * MiB, ctypes.byref(prop), 0))  # LEAK-VMM
            check(mmap(va.value + mapped * 2 * MiB, 2 * MiB, 0, h.value, 0))
            mapped += 1
        optimizer.step()
        maybe_reload(step)


def maybe_reload(step):
    if RELOAD and step == STEPS // 2:
        importlib.reload(torch.optim.optimizer)


optimizer = torch.optim.Optimizer(lambda: None)
{"tensors": train_tensors, "segments": train_segments, "vmm": train_vmm}[PATTERN](optimizer)
print(f"trained {STEPS} steps")
