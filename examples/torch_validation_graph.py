# SPDX-License-Identifier: Apache-2.0
"""Validation without torch.no_grad() and without model.eval() (seed 000,
BUG 2), whose result is kept:

    val_loss += loss              # no backward: every batch's graph stays,
    ...                           # with the activations it saved
    val_history.append(val_loss)  # ... and the epoch's graph with it

Each epoch trains for --train-steps optimizer steps, then validates. The
kept val_loss holds the autograd graph of the whole validation pass,
including the activations each layer saved for a backward that never comes:
per batch the ReLU output (batch x hidden floats, 2 MiB here), the input
Dropout's output and mask, the log-softmax output and the targets. The
biggest, the ReLU output, is allocated inside `model(inputs)`.

    python examples/torch_validation_graph.py [--fixed] [--steps N]

--fixed: @torch.no_grad(), model.eval(), loss.item()."""
import torch
from torch import nn, optim

from torch_common import StepTimer, classifier, parse_args, synthetic_batches


def validate_bad(model, batches, criterion):
    val_loss = 0.0
    for inputs, targets in batches:
        inputs, targets = inputs.cuda(), targets.cuda()
        outputs = model(inputs)  # leak-line: allocates the saved activations
        loss = criterion(outputs, targets)
        val_loss += loss
    return val_loss / len(batches)


@torch.no_grad()
def validate_good(model, batches, criterion):
    model.eval()
    val_loss = 0.0
    for inputs, targets in batches:
        inputs, targets = inputs.cuda(), targets.cuda()
        outputs = model(inputs)
        loss = criterion(outputs, targets)
        val_loss += loss.item()
    model.train()
    return val_loss / len(batches)


def main():
    args = parse_args(__doc__)
    model = classifier()
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    train_batches, val_batches = synthetic_batches(16, seed=0), synthetic_batches(5, seed=1)
    train_steps = 10  # optimizer steps per epoch
    validate = validate_good if args.fixed else validate_bad
    val_history = []
    timer = StepTimer()
    model.train()
    for step in range(args.steps):
        inputs, targets = train_batches[step % len(train_batches)]
        inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        optimizer.step()
        timer.step()
        if (step + 1) % train_steps == 0:
            val_history.append(validate(model, val_batches, criterion))
    timer.report(f"epochs={len(val_history)} last_val_loss={float(val_history[-1]):.4f}")


if __name__ == "__main__":
    main()
