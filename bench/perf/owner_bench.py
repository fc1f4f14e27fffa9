# SPDX-License-Identifier: Apache-2.0
"""The cost of the owner search (python/leakwatch/_torch.py, find_owners):
what the diagnosis window spends, once, at its close, to find what keeps a
PyTorch leak alive. Runs on the stand-in torch (tests/python/faketorch, its
device memory from the CPU stand-in runtime $LW_CUDART), without the shim:
the search is plain Python over the job's objects.

    owner_bench.py KEPT [NODES] [NOISE]

KEPT tensors kept in a list (the leak: their storage is the site's blocks), an
accumulator tensor whose autograd graph has NODES AddBackward0 nodes, NOISE
other objects (dicts of floats) reachable from the frame. Prints
"search_ms=... objects=... graph_nodes=... stopped=... named=..." (median of
5), under the helper's default budget (LEAKWATCH_TORCH_OWNER_MS, 1000)."""
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [os.path.join(REPO, "tests", "python", "faketorch"), os.path.join(REPO, "python")]

import torch  # noqa: E402  (the stand-in)
from leakwatch import _torch  # noqa: E402

KEPT = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
NODES = int(sys.argv[2]) if len(sys.argv) > 2 else 0
NOISE = int(sys.argv[3]) if len(sys.argv) > 3 else 0
BUDGET_MS = int(os.environ.get("LEAKWATCH_TORCH_OWNER_MS", "1000"))
# This file counts as the user's code wherever it lives.
os.environ.setdefault("LEAKWATCH_USER_CODE", HERE + "/")
_torch._USER_CODE = _torch._user_code()


def job():
    w = torch.nn.Parameter((4,)).cuda() if hasattr(torch.nn.Parameter, "cuda") else None
    leaf = torch.randn(4, device="cuda", requires_grad=True)
    kept_list = [leaf + 1.0 for _ in range(KEPT)]  # noqa: F841 (the owner)
    total = leaf * 1.0
    for _ in range(NODES):
        total += leaf
    noise = [{"a": 1.0, "b": [2.0, 3.0]} for _ in range(NOISE)]  # noqa: F841
    blocks = [(t.data_ptr(), 512) for t in kept_list]
    sites = [{"place_to_look": {"function": "job"}}]
    times, out = [], None
    for _ in range(5):
        for s in sites:
            s.pop("owner", None)
        t0 = time.perf_counter()
        out = _torch.find_owners(torch, sites, [blocks], 32, BUDGET_MS / 1000.0)
        times.append((time.perf_counter() - t0) * 1000)
    del w
    return statistics.median(times), out, sites[0]["owner"].get("name")


ms, out, named = job()
print(f"search_ms={ms:.2f} objects={out['objects']} graph_nodes={out['graph_nodes']} "
      f"stopped={out['stopped']} named={named}")
