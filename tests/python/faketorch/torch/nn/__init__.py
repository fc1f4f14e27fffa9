# SPDX-License-Identifier: Apache-2.0
"""torch.nn: the modules the seeds use. Each forward allocates its output on
the input's device, and with grad, saves for backward what PyTorch's
derivatives.yaml saves: Linear its input (for the weight's gradient), ReLU
its result, Dropout its mask, cross_entropy its log-softmax."""
from .. import _tensor
from .._tensor import Tensor, _track, is_grad_enabled


class Parameter(Tensor):
    def __init__(self, shape):
        super().__init__(shape, 4, None, requires_grad=True)


class Module:
    def __init__(self):
        self.training = True

    def _modules(self):
        return [v for v in vars(self).values() if isinstance(v, Module)] + \
            [m for v in vars(self).values() if isinstance(v, list) for m in v
             if isinstance(m, Module)]

    def parameters(self):
        for v in list(vars(self).values()):
            if isinstance(v, Parameter):
                yield v
        for m in self._modules():
            yield from m.parameters()

    def _move(self, dev):
        for k, v in list(vars(self).items()):
            if isinstance(v, Parameter):
                p = Parameter(v.shape)
                p._storage = _tensor._Storage(dev, v.numel_ * v.itemsize)
                setattr(self, k, p)
        for m in self._modules():
            m._move(dev)
        return self

    def cuda(self, dev=None):
        return self._move(dev or 0)

    def to(self, dev):
        return self._move(_tensor._dev(dev))

    def train(self, mode=True):
        self.training = mode
        for m in self._modules():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)


class Linear(Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter((out_features, in_features))
        self.bias = Parameter((out_features,))

    def forward(self, x):
        out = Tensor(x.shape[:-1] + (self.out_features,), 4, device=x._storage.device)
        return _track(out, "AddmmBackward0", [x], [x, self.weight, self.bias], ["mat1"])


class ReLU(Module):
    def forward(self, x):
        out = Tensor(x.shape, 4, device=x._storage.device)
        # The result is saved (an alias of the same storage, no cycle).
        return _track(out, "ReluBackward0", [out.detach()], [x], ["result"])


class Dropout(Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        mask = Tensor(x.shape, 1, device=x._storage.device)
        out = Tensor(x.shape, 4, device=x._storage.device)
        return _track(out, "NativeDropoutBackward0", [mask], [x], ["mask"])


class Sequential(Module):
    def __init__(self, *mods):
        super().__init__()
        self.mods = list(mods)

    def forward(self, x):
        for m in self.mods:
            x = m(x)
        return x


class CrossEntropyLoss(Module):
    def forward(self, logits, target):
        log_probs = Tensor(logits.shape, 4, device=logits._storage.device)
        loss = Tensor((), 4, device=logits._storage.device, value=1.0)
        return _track(loss, "NllLossBackward0", [log_probs, target], [logits], ["self", "target"])
