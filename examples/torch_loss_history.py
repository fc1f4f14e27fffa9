# SPDX-License-Identifier: Apache-2.0
"""Training loop that keeps the loss tensor (seed 000, BUG 1):

    total_loss += loss          # a tensor: the sum joins every step's graph
    loss_history.append(loss)   # keeps each step's loss tensor alive

Each step's loss is a float32 scalar on the GPU; the list keeps one per
step, so the GPU floor grows by one small tensor per step. (backward() has
already freed the saved activations; what the chain of graph nodes holds
beyond that is CPU memory, which leakwatch does not track.)
The memory leakwatch blames is allocated inside `criterion(...)` (the loss
scalar), not by `append`, which allocates nothing.

    python examples/torch_loss_history.py [--fixed] [--steps N]

--fixed: `loss.item()`, a Python float, as the article recommends."""
from torch import nn, optim

from torch_common import StepTimer, classifier, parse_args, synthetic_batches


def train(model, batches, optimizer, criterion, steps, fixed, timer):
    model.train()
    total_loss = 0.0
    loss_history = []
    for step in range(steps):
        inputs, targets = batches[step % len(batches)]
        inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = criterion(outputs, targets)  # leak-line: allocates the kept loss tensor
        loss.backward()
        optimizer.step()  # leakwatch marks a step here (optimizer post-hook)
        if fixed:
            loss_scalar = loss.item()
            total_loss += loss_scalar
            loss_history.append(loss_scalar)
        else:
            total_loss += loss
            loss_history.append(loss)
        timer.step()
    return total_loss, loss_history


def main():
    args = parse_args(__doc__)
    model = classifier()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    timer = StepTimer()
    total, history = train(
        model, synthetic_batches(16), optimizer, nn.CrossEntropyLoss(), args.steps, args.fixed, timer
    )
    timer.report(f"mean_loss={float(total) / len(history):.4f}")


if __name__ == "__main__":
    main()
