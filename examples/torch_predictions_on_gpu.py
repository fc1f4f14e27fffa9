# SPDX-License-Identifier: Apache-2.0
"""Predictions kept on the GPU for a metric computed at the end (seed 000's
checklist: no `.detach().cpu()` before appending):

    all_outputs.append(outputs)   # batch x classes logits, on the GPU
    all_targets.append(targets)

backward() has freed what the graph saved, but each step's output tensor
(256 x 100 float32 = 100 KiB) and its targets stay allocated until the final
metric. The logits are allocated inside `model(inputs)` (the last Linear);
the targets by `targets.cuda()`.

    python examples/torch_predictions_on_gpu.py [--fixed] [--steps N]

--fixed: `outputs.detach().cpu()` and `targets.cpu()` before appending."""
import torch
from torch import nn, optim

from torch_common import StepTimer, classifier, parse_args, synthetic_batches

CLASSES = 100


def main():
    args = parse_args(__doc__)
    model = classifier(classes=CLASSES)
    optimizer = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    batches = synthetic_batches(16, classes=CLASSES)
    all_outputs, all_targets = [], []
    timer = StepTimer()
    model.train()
    for step in range(args.steps):
        inputs, targets = batches[step % len(batches)]
        inputs, targets = inputs.cuda(), targets.cuda()
        optimizer.zero_grad()
        outputs = model(inputs)  # leak-line: allocates the kept logits
        loss = criterion(outputs, targets)
        loss.backward()
        optimizer.step()
        if args.fixed:
            all_outputs.append(outputs.detach().cpu())
            all_targets.append(targets.cpu())
        else:
            all_outputs.append(outputs)
            all_targets.append(targets)
        timer.step()
    predictions = torch.cat([o.argmax(1).cpu() for o in all_outputs])
    accuracy = (predictions == torch.cat([t.cpu() for t in all_targets])).float().mean()
    timer.report(f"accuracy={accuracy.item():.4f}")


if __name__ == "__main__":
    main()
