# SPDX-License-Identifier: Apache-2.0
"""Jobs that never call optimizer.step() (issue 37), as plain PyTorch: no
line here calls leakwatch.

    torch_server.py JOB [fixed]

JOB:
  kv        an inference server: each request of a session computes its
            key/value tensors under torch.no_grad() and keeps them in a dict
            of sessions that is never evicted (KV_BYTES per request, 80 KiB
            by default: about 80 MiB/s at a millisecond a request); fixed:
            the cache is bounded (the oldest entries of a session evicted)
  generate  a generate-style loop: one model call per token, the logits of
            every token kept on the GPU in a growing list (as
            output_scores); fixed: their maximum as a Python float
  eval      an evaluation loop under torch.no_grad() keeping every batch's
            outputs on the GPU; fixed: .cpu()
  tensors   no nn.Module, no optimizer: tensor operations alone, every
            result kept in a list (steps are time intervals), one request
            arriving per PACE_MS (default 2) of wall time; fixed: a Python
            float

Environment: REQUESTS (default 600), KV_BYTES (bytes kept per request, k
and v half each; default 81920), SESSIONS (default 8)."""
import os
import sys
import time

import torch
from torch import nn

JOB = sys.argv[1]
FIXED = "fixed" in sys.argv[2:]
REQUESTS = int(os.environ.get("REQUESTS", "600"))
KV_BYTES = int(os.environ.get("KV_BYTES", str(80 * 1024)))
SESSIONS = int(os.environ.get("SESSIONS", "8"))
DIM = 64


class TinyAttention(nn.Module):
    def __init__(self, kv_floats):
        super().__init__()
        self.kv_floats = kv_floats
        self.q = nn.Linear(DIM, DIM)
        self.k = nn.Linear(DIM, kv_floats)
        self.v = nn.Linear(DIM, kv_floats)
        self.o = nn.Linear(DIM, DIM)

    def forward(self, x, past):
        q = self.q(x)
        k = self.k(x)  # KEPT-K
        v = self.v(x)  # KEPT-V
        keys = [k] + [pk for pk, _ in past[-4:]]
        values = [v] + [pv for _, pv in past[-4:]]
        att = torch.stack([kk[:, :DIM] for kk in keys]).mean(0) * q
        mixed = torch.stack([vv[:, :DIM] for vv in values]).mean(0)
        return self.o(att * mixed), k, v  # OUTPUT-PROJECTION


cache = {}  # session -> [(k, v), ...]


def serve(model, session, x):
    with torch.no_grad():
        past = cache.setdefault(session, [])
        out, k, v = model(x, past)
        past.append((k, v))  # KV-APPEND
        if FIXED:
            del past[:-4]  # bounded: only the newest entries are ever read
        return out.sum().item()


def kv_server():
    # k and v: KV_BYTES / 2 each, one row of float32.
    model = TinyAttention(max(KV_BYTES // 8, DIM)).cuda()
    total = 0.0
    for i in range(REQUESTS):
        x = torch.randn(1, DIM, device="cuda")
        total += serve(model, i % SESSIONS, x)
    return total


class TinyLM(nn.Module):
    def __init__(self, vocab=512):
        super().__init__()
        self.emb = nn.Embedding(vocab, DIM)
        self.head = nn.Linear(DIM, vocab)

    def forward(self, ids):
        return self.head(self.emb(ids[:, -1]))


def generate():
    model = TinyLM().cuda().eval()
    ids = torch.zeros(1, 1, dtype=torch.long, device="cuda")
    scores = []
    with torch.no_grad():
        for _ in range(REQUESTS):
            logits = model(ids)
            scores.append(logits.max().item() if FIXED else logits)  # SCORES-APPEND
            ids = logits.argmax(-1, keepdim=True)
    return len(scores)


def evaluate():
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 64)).cuda().eval()
    predictions = []
    with torch.no_grad():
        for _ in range(REQUESTS):
            batch = torch.randn(32, 128, device="cuda")
            out = model(batch)
            predictions.append(out.cpu() if FIXED else out)  # PREDICTIONS-APPEND
    return len(predictions)


def tensors():
    pace = float(os.environ.get("PACE_MS", "2")) / 1000
    w = torch.randn(DIM, DIM, device="cuda")
    results = []
    # Requests arrive one per PACE_MS of wall time, as a server's clients
    # send them (an open loop): each pass serves those that have arrived, so
    # memory grows with time at one rate however fast or loaded the machine
    # is. (Paced by sleeps alone, a machine whose load rose during the run
    # served fewer requests per interval: growth that decelerates.)
    start = time.monotonic()
    while len(results) < REQUESTS:
        arrived = min(REQUESTS, int((time.monotonic() - start) / pace) + 1)
        while len(results) < arrived:
            x = torch.randn(1, DIM, device="cuda")
            y = torch.tanh(x @ w)  # TENSORS-KEPT
            results.append(y.sum().item() if FIXED else y)  # TENSORS-APPEND
        time.sleep(pace)  # the job's other work (I/O, the CPU), not synchronisation
    return len(results)


def main():
    fn = {"kv": kv_server, "generate": generate, "eval": evaluate, "tensors": tensors}[JOB]
    before = torch.cuda.memory_allocated()
    fn()
    grown = torch.cuda.memory_allocated() - before
    print(f"served {REQUESTS} requests; allocated per request: {grown / REQUESTS:.1f}")


if __name__ == "__main__":
    main()
