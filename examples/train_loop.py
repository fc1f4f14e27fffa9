# SPDX-License-Identifier: Apache-2.0
"""train_loop.c in Python: a training loop written against the CUDA runtime
API through ctypes, with the classic leak: each step keeps its loss on the
GPU (history.append(loss) without .item()). No PyTorch needed: it runs on a
real GPU (the CUDA runtime library of the toolkit) or on leakwatch's CPU
stand-ins, where the report names this file's line.

    leakwatch run --cuda-stand-ins -- python examples/train_loop.py
    python -m leakwatch run --cuda-stand-ins examples/train_loop.py --fixed

Options: --steps N (default 300), --fixed (no leak), --step-ms MS (sleep per
step, to watch it with leakwatch top). LEAKWATCH_CUDART names the runtime
library to load when it is not found as libcudart.so.
"""

import argparse
import ctypes
import os
import sys
import time

MiB = 1 << 20

try:
    # Installed with pip, or under leakwatch (its auto-start provides it).
    from leakwatch import step as mark_step
except ImportError:

    def mark_step():
        pass


def load_runtime():
    names = [os.environ.get("LEAKWATCH_CUDART"), "libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    sys.exit(
        "train_loop.py: no CUDA runtime library (libcudart.so) found; without a GPU run it "
        "with 'leakwatch run --cuda-stand-ins -- python train_loop.py'"
    )


rt = load_runtime()
rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
rt.cudaFree.argtypes = [ctypes.c_void_p]


def malloc(size):
    p = ctypes.c_void_p()
    err = rt.cudaMalloc(ctypes.byref(p), size)
    if err != 0:
        sys.exit("cudaMalloc(%d) failed: error %d" % (size, err))
    return p


def forward_backward():
    activations = [malloc(4 * MiB) for _ in range(8)]
    for a in reversed(activations):  # freed by backward
        rt.cudaFree(a)


def train(steps, fixed, step_ms):
    history = []
    for _ in range(steps):
        forward_backward()
        loss = ctypes.c_void_p()
        if rt.cudaMalloc(ctypes.byref(loss), 512) != 0:  # leak-line: this step's loss
            sys.exit("cudaMalloc of the loss failed")
        if fixed:
            rt.cudaFree(loss)  # loss.item(): the value kept, the memory freed
        else:
            history.append(loss)  # the bug: the loss outlives the step
        mark_step()
        if step_ms:
            time.sleep(step_ms / 1000.0)
    return history


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--fixed", action="store_true", help="free the loss: no leak")
    ap.add_argument("--step-ms", type=float, default=0.0, help="sleep per step")
    args = ap.parse_args()
    weights, optimizer_state = malloc(64 * MiB), malloc(128 * MiB)
    train(args.steps, args.fixed, args.step_ms)
    print("trained %d steps" % args.steps)
    rt.cudaFree(weights)
    rt.cudaFree(optimizer_state)


if __name__ == "__main__":
    main()
