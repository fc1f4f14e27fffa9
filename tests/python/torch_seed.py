# SPDX-License-Identifier: Apache-2.0
"""The leaks of the seed articles (shared/seeds), written as plain PyTorch
and run on the CPU stand-in torch (tests/python/faketorch): no line here
calls leakwatch.

    torch_seed.py LEAK [fixed]

LEAK:
  loss         train_bad: total_loss += loss; loss_history.append(loss)
               (the loss tensor kept, with its graph)
  validation   validate_bad: no torch.no_grad(), val_loss += loss, the
               result kept per epoch (every batch's graph and saved
               activations kept)
  predictions  outputs kept on the GPU for a final metric, no
               .detach().cpu()
  gradients    a hook on the outputs keeps each step's gradient (allocated
               in backward, on autograd's thread)
  epoch        train_epoch: loss_history local to each epoch's function
               (released at the epoch's end): memory grows within each
               epoch of EPOCH_STEPS steps and falls back at its end
  validation-only
               a few training steps, then validate_bad alone over STEPS
               batches: a long phase with no optimizer step (no step mark)
  validation-alone
               validate_bad alone over STEPS batches, no training at all
               (no optimizer step, no backward: an evaluation job)
fixed: the article's fix (loss.item(), @torch.no_grad() + model.eval(),
.detach().cpu(); for gradients, a norm as a Python float).

Environment: JOB_ALLOC_CONF (set as PYTORCH_CUDA_ALLOC_CONF before the
import, as some jobs do), STEPS (default 160 training steps), OPTIMIZERS (2: a second
optimizer stepping every iteration, as a GAN's), ACCUM (optimizer.step()
every ACCUM batches), SCALER=1 (steps through torch.amp.GradScaler),
SLEEP_MS (a pause per batch: slow steps; under leakwatch's test clock,
LEAKWATCH_TEST_CLOCK=1, it moves leakwatch's time instead of sleeping), LOADER=fork|spawn (batches from a
torch.utils.data.DataLoader with two worker processes started that way; real
PyTorch only). The last line gives torch.cuda.memory_allocated()'s growth
per step over the leaking loop ("allocated per step: N")."""
import os
import sys
import time

# A job that sets its own allocator configuration before importing torch
# (JOB_ALLOC_CONF): PyTorch reads it then, whatever leakwatch prepared.
if os.environ.get("JOB_ALLOC_CONF"):
    os.environ["PYTORCH_CUDA_ALLOC_CONF"] = os.environ["JOB_ALLOC_CONF"]

import torch  # noqa: E402
from test_clock_pause import pause  # noqa: E402
from torch import nn, optim  # noqa: E402

LEAK = sys.argv[1]
FIXED = "fixed" in sys.argv[2:]
STEPS = int(os.environ.get("STEPS", "160"))
OPTIMIZERS = int(os.environ.get("OPTIMIZERS", "1"))
ACCUM = int(os.environ.get("ACCUM", "1"))
SCALER = os.environ.get("SCALER") == "1"
SLEEP = float(os.environ.get("SLEEP_MS", "0")) / 1000
LOADER = os.environ.get("LOADER")


_seen = {}


def note(i):
    """Samples torch.cuda.memory_allocated() at batch 10 (past the first
    steps' optimizer state and caches) and at the last batch of the leaking
    loop, for the closing "allocated per step" line."""
    if i == 10 or "first" not in _seen:
        _seen["first"] = (i, torch.cuda.memory_allocated())
    _seen["last"] = (i, torch.cuda.memory_allocated())


def batches(n):
    if LOADER:
        from torch.utils.data import DataLoader, TensorDataset
        data = TensorDataset(torch.randn(64 * n, 128), torch.randint(10, (64 * n,)))
        yield from DataLoader(data, batch_size=64, num_workers=2,
                              multiprocessing_context=LOADER)
        return
    for _ in range(n):
        if SLEEP:
            pause(SLEEP)
        yield torch.randn(64, 128), torch.randint(10, (64,))


def make_model():
    return nn.Sequential(nn.Dropout(0.1), nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()


model = make_model()
other = make_model() if OPTIMIZERS > 1 else None
optimizers = [optim.SGD(model.parameters(), lr=0.01, momentum=0.9)]
if other is not None:
    optimizers.append(optim.Adam(other.parameters()))
criterion = nn.CrossEntropyLoss()
scaler = torch.amp.GradScaler() if SCALER else None


def step_all():
    for opt in optimizers:
        if scaler is not None:
            scaler.step(opt)
        else:
            opt.step()
    if scaler is not None:
        scaler.update()


def scaled(loss):
    """The loss to call backward() on: through the GradScaler when there is
    one (real PyTorch refuses scaler.step() without scaler.scale(loss))."""
    return scaler.scale(loss) if scaler is not None else loss


def zero_all():
    for opt in optimizers:
        opt.zero_grad()


def train_bad(dataloader):
    model.train()
    total_loss = 0.0
    loss_history = []
    for i, (inputs, targets) in enumerate(dataloader):
        inputs, targets = inputs.cuda(), targets.cuda()
        outputs = model(inputs)
        loss = criterion(outputs, targets)  # LEAK-LOSS
        scaled(loss).backward()
        if other is not None:
            scaled(criterion(other(inputs), targets)).backward()
        if (i + 1) % ACCUM == 0:
            step_all()
            zero_all()
        if FIXED:
            loss_scalar = loss.item()
            total_loss += loss_scalar
            loss_history.append(loss_scalar)
        else:
            total_loss += loss
            loss_history.append(loss)
        note(i)
    return total_loss, loss_history


def validate_bad(dataloader):
    val_loss = 0.0
    for i, (inputs, targets) in enumerate(dataloader):
        inputs, targets = inputs.cuda(), targets.cuda()
        outputs = model(inputs)  # LEAK-VALIDATION
        loss = criterion(outputs, targets)
        val_loss += loss
        note(i)
    return val_loss


@torch.no_grad()
def validate_good(dataloader):
    model.eval()
    val_loss = 0.0
    for inputs, targets in dataloader:
        inputs, targets = inputs.cuda(), targets.cuda()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        val_loss += loss.item()
    model.train()
    return val_loss


def train_epoch(dataloader):
    """One epoch; its list of losses (with their graphs) lives until the
    epoch ends."""
    loss_history = []
    for i, (inputs, targets) in enumerate(dataloader):
        outputs, targets = train_plain(inputs, targets)
        loss = criterion(outputs, targets)  # LEAK-EPOCH
        loss_history.append(loss.item() if FIXED else loss)
        if epoch_count[0] == 1:
            note(i)
    epoch_count[0] += 1
    return len(loss_history)


epoch_count = [0]


grad_history = []


def keep_gradient(grad):
    grad_history.append(grad.norm().item() if FIXED else grad)


def train_plain(inputs, targets, watch=False):
    inputs, targets = inputs.cuda(), targets.cuda()
    outputs = model(inputs)  # LEAK-PREDICTIONS
    loss = criterion(outputs, targets)
    if watch:
        outputs.register_hook(keep_gradient)
    scaled(loss).backward()  # LEAK-BACKWARD
    step_all()
    zero_all()
    return outputs, targets


def main():
    if LEAK == "loss":
        kept = train_bad(batches(STEPS))  # noqa: F841 (held to the end, as a job would)
    elif LEAK == "validation":
        val_history = []
        for epoch in range(STEPS // 10):
            for inputs, targets in batches(10):
                train_plain(inputs, targets)
            val_history.append(validate_good(batches(5)) if FIXED else validate_bad(batches(5)))
    elif LEAK == "epoch":
        per_epoch = int(os.environ.get("EPOCH_STEPS", "100"))
        for epoch in range(max(STEPS // per_epoch, 1)):
            train_epoch(batches(per_epoch))
    elif LEAK == "validation-only":
        for inputs, targets in batches(20):
            train_plain(inputs, targets)
        _seen.clear()
        kept = validate_good(batches(STEPS)) if FIXED else validate_bad(batches(STEPS))  # noqa: F841
    elif LEAK == "validation-alone":
        kept = validate_good(batches(STEPS)) if FIXED else validate_bad(batches(STEPS))  # noqa: F841
    elif LEAK == "predictions":
        all_preds = []
        for i, (inputs, targets) in enumerate(batches(STEPS)):
            outputs, targets = train_plain(inputs, targets)
            all_preds.append(outputs.detach().cpu() if FIXED else outputs)
            note(i)
    elif LEAK == "gradients":
        for i, (inputs, targets) in enumerate(batches(STEPS)):
            train_plain(inputs, targets, watch=True)
            note(i)
    print(f"trained {STEPS} steps")
    if "last" in _seen and _seen["last"][0] > _seen["first"][0]:
        (i0, a0), (i1, a1) = _seen["first"], _seen["last"]
        print(f"allocated per step: {(a1 - a0) / (i1 - i0):.1f}")


if __name__ == "__main__":
    main()
