"""A PyTorch 0.x script, unchanged apart from its imports: a small softmax classifier on
scikit-learn's digits, written with tensor methods, a Function subclass in PyTorch's
convention (``forward(*input)`` / ``backward(*grad_output)``, ``save_for_backward``),
a gradient hook, and ``torch.optim``.

    python examples/train_pytorch_style.py          # prints the loss every 20 steps

In PyTorch 0.x the script starts with ``import torch`` and
``from torch.autograd import Variable, Function``; here those are the two import
lines below. Everything else is PyTorch 0.x code.
"""

import polygrad as torch
from polygrad import Function, Variable


class ReLU(Function):
    """max(x, 0), PyTorch 0.x's way: arrays in, arrays out, what backward needs saved."""

    def forward(self, x):
        self.save_for_backward(x)
        return x.clamp(min=0)

    def backward(self, grad_output):
        (x,) = self.saved_tensors
        return grad_output * (x > 0)


def load(n=800):
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.from_numpy((digits.data[:n] / 16.0).astype(np.float64))
    t = torch.from_numpy(digits.target[:n].astype(np.int64))
    return x, t


def train(steps=120, lr=1.0, log=print):
    x, t = load()
    w1 = Variable(torch.linspace(0, 100, 64 * 32, dtype=torch.float64).view(64, 32).sin() * 0.3, requires_grad=True)
    w2 = Variable(torch.zeros((32, 10), dtype=torch.float64), requires_grad=True)
    norms = []
    w1.register_hook(lambda grad: norms.append(float(abs(grad).sum())))  # watch the gradient reaching w1
    optimizer = torch.optim.SGD([w1, w2], lr=lr)
    onehot = (t.view(-1, 1) == torch.arange(10).view(1, -1)).double()
    losses = []
    for step in range(steps):
        h = ReLU()(x.mm(w1))
        logits = h.mm(w2)
        logp = logits - logits.max(1)[0].unsqueeze(1)
        logp = logp - logp.exp().sum(1, keepdim=True).log()
        loss = -(onehot * logp).sum(1).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if step % 20 == 0:
            log(f"step {step:3d}  loss {losses[-1]:.4f}")
    accuracy = (logits.max(1)[1] == t).double().mean().item()
    return losses, norms, accuracy


if __name__ == "__main__":
    losses, _, accuracy = train()
    print(f"final loss {losses[-1]:.4f}, training accuracy {accuracy:.3f}")
