# SPDX-License-Identifier: Apache-2.0
"""Shared by the PyTorch examples: synthetic data, a small classifier, the
command line, and the timing line tests/gpu/run.sh reads. Nothing is
downloaded; every example needs torch and a CUDA GPU."""
import argparse
import sys
import time

import torch
from torch import nn


def parse_args(doc):
    p = argparse.ArgumentParser(description=doc)
    p.add_argument("--fixed", action="store_true", help="run the corrected version")
    p.add_argument("--steps", type=int, default=300, help="optimizer steps (default 300)")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("this example needs a CUDA GPU")
    return args


def synthetic_batches(n, batch=256, features=256, classes=10, seed=0):
    """n (inputs, targets) batches on the CPU, as a DataLoader yields them."""
    g = torch.Generator().manual_seed(seed)
    return [
        (torch.randn(batch, features, generator=g), torch.randint(classes, (batch,), generator=g))
        for _ in range(n)
    ]


def classifier(features=256, hidden=2048, classes=10, dropout=0.1):
    return nn.Sequential(
        nn.Dropout(dropout),
        nn.Linear(features, hidden),
        nn.ReLU(),
        nn.Linear(hidden, classes),
    ).cuda()


class StepTimer:
    """Wall time per optimizer step, after a warm-up, synchronised at both
    ends only (a sync per step would change what is measured)."""

    def __init__(self, warmup=20):
        self.warmup, self.count, self.t0 = warmup, 0, None

    def step(self):
        self.count += 1
        if self.count == self.warmup:
            torch.cuda.synchronize()
            self.t0 = time.perf_counter()

    def report(self, extra=""):
        torch.cuda.synchronize()
        timed = self.count - self.warmup
        ms = (time.perf_counter() - self.t0) * 1e3 / timed if self.t0 and timed > 0 else float("nan")
        backend = torch.cuda.get_allocator_backend()
        print(f"steps={self.count} step_ms={ms:.4f} backend={backend} {extra}".rstrip(), flush=True)
