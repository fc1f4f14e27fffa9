# SPDX-License-Identifier: Apache-2.0
"""Loops for the explanations around a verdict (issue 38), in plain PyTorch
that never calls leakwatch:

    torch_explain.py CASE

  batch      a 2 MiB batch per step and history.append(loss) (512 B/step);
             prints "alloc STEP BYTES" (torch.cuda.memory_allocated())
             after each step
  hookattr   a forward hook appends each output to a module attribute
             (model.layers[2].hidden_states, filled by the hook)
  accum      gradient accumulation: loss.backward(retain_graph=True),
             loss_sum = loss_sum + loss, the sum kept per update
  helper     a helper function appends to a list passed to it
  two        metrics[...] keeps logits (1.5 KiB/step) and y (0.5 KiB/step),
             y allocated on the same line as the step's input x
  fillstop   a cache that fills for FILL steps and then stops
  epochs     lists released at each epoch's end (EPOCH steps each)
  late       clean for ONSET steps, then history.append(loss)
  branch     a fixed branch (history.append(loss.item())) written before the
             leaking one (history.append(loss.detach()))
  clean      no leak

Environment: STEPS (default 400), FILL (200), EPOCH (100), ONSET (500),
STEP_MS (0: a pause per step of fillstop and late)."""
import os
import sys

import torch
from torch import nn, optim

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from test_clock_pause import pause  # noqa: E402

CASE = sys.argv[1]
STEPS = int(os.environ.get("STEPS", "400"))
FILL = int(os.environ.get("FILL", "200"))
EPOCH = int(os.environ.get("EPOCH", "100"))
ONSET = int(os.environ.get("ONSET", "500"))
# STEP_MS: a pause per step of fillstop and late (on leakwatch's test clock,
# LEAKWATCH_TEST_CLOCK=1, it moves leakwatch's time and waits for its
# sampler: every step's counters read and taken in, the same run on any
# machine); 0: none.
STEP_S = float(os.environ.get("STEP_MS", "0")) / 1000

torch.manual_seed(0)


def batch_loop():
    model = nn.Linear(1024, 16).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    history = []
    for step in range(STEPS):
        x = torch.randn(512, 1024).cuda()  # 2 MiB
        loss = model(x).square().mean()  # LEAK-BATCH
        loss.backward()
        opt.step()
        opt.zero_grad()
        history.append(loss)  # OWNER-BATCH
        print("alloc", step, torch.cuda.memory_allocated(), flush=True)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 64),
                                     nn.ReLU(), nn.Linear(64, 10)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def keep_hidden(module, args, out):
    module.hidden_states.append(out)  # OWNER-HOOK


def hookattr_loop():
    model = Net().cuda()
    model.layers[2].hidden_states = []
    model.layers[2].register_forward_hook(keep_hidden)
    opt = optim.SGD(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x = torch.randn(64, 128).cuda()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


def accum_loop():
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 10)).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    kept = []
    for _ in range(STEPS):
        loss_sum = 0
        for _ in range(2):
            x = torch.randn(64, 128).cuda()
            loss = model(x).square().mean()
            loss.backward(retain_graph=True)
            loss_sum = loss_sum + loss
        opt.step()
        opt.zero_grad()
        kept.append(loss_sum)  # OWNER-ACCUM


def record(store, value):
    store.append(value)  # OWNER-HELPER


def helper_loop():
    model = nn.Linear(128, 10).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    losses = []
    for _ in range(STEPS):
        x = torch.randn(64, 128).cuda()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        record(losses, loss)


metrics = {"logits": [], "targets": []}


def keep_metrics(logits, y):
    metrics["logits"].append(logits.detach())  # LEAK-LOGITS
    metrics["targets"].append(y)  # LEAK-TARGETS


def two_loop():
    model = nn.Linear(256, 3).cuda()  # 128 x 3 fp32 logits: 1.5 KiB
    opt = optim.SGD(model.parameters(), lr=0.01)
    for _ in range(STEPS):
        x, y = torch.randn(128, 256).cuda(), torch.randn(128).cuda()  # LINE-XY
        logits = model(x)  # MAKE-LOGITS
        loss = (logits.sum(1) - y).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        keep_metrics(logits, y)


def fillstop_loop():
    model = nn.Linear(128, 10).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    cache = {}
    for step in range(STEPS):
        x = torch.randn(64, 128).cuda()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step < FILL:
            cache[step] = loss.detach()  # FILL-CACHE
        if STEP_S:
            pause(STEP_S)


def epochs_loop():
    model = nn.Linear(128, 10).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    done = 0
    while done < STEPS:
        kept = []
        for _ in range(min(EPOCH, STEPS - done)):
            x = torch.randn(64, 128).cuda()
            loss = model(x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            kept.append(loss.detach())  # EPOCH-KEPT
            done += 1
        del kept


def late_loop():
    model = nn.Linear(128, 10).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    history = []
    for step in range(STEPS):
        x = torch.randn(64, 128).cuda()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step < ONSET:
            history.append(loss.item())  # FIXED-LATE
        else:
            history.append(loss.detach())  # OWNER-LATE
        if STEP_S:
            pause(STEP_S)


def branch_loop():
    model = nn.Linear(128, 10).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    history = []
    for step in range(STEPS):
        x = torch.randn(64, 128).cuda()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        if step % 4 == 3:
            history.append(loss.item())  # FIXED-BRANCH
        else:
            history.append(loss.detach())  # OWNER-BRANCH


def clean_loop():
    model = nn.Linear(128, 10).cuda()
    opt = optim.SGD(model.parameters(), lr=0.01)
    history = []
    for _ in range(STEPS):
        x = torch.randn(64, 128).cuda()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        history.append(loss.item())


{"batch": batch_loop, "hookattr": hookattr_loop, "accum": accum_loop, "helper": helper_loop,
 "two": two_loop, "fillstop": fillstop_loop, "epochs": epochs_loop, "late": late_loop,
 "branch": branch_loop, "clean": clean_loop}[CASE]()
