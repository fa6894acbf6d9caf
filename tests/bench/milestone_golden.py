#!/usr/bin/python3
"""The milestones' golden first steps, computed independently of Kiln with PyTorch.

A seeded run's first training steps must match these losses (milestone.yaml's `golden`). They are
computed here from the same recipe as the trainers in milestones/: the Wichmann-Hill generator
(AS 183) for the initialisation and the shuffle, PyTorch for the model, the loss and Adam. Run it
where Debian's python3-torch is installed; it prints the values to hold in milestone.yaml:

    /usr/bin/python3 tests/bench/milestone_golden.py   (Debian's Python, where python3-torch lives)
"""
import gzip
import math
import struct

import torch

torch.set_default_dtype(torch.float32)
torch.set_num_threads(1)


class WichmannHill:
    def __init__(self, seed):
        self.x = seed % 30268 + 1
        seed //= 30268
        self.y = seed % 30306 + 1
        seed //= 30306
        self.z = seed % 30322 + 1

    def next(self):
        self.x = 171 * self.x % 30269
        self.y = 172 * self.y % 30307
        self.z = 170 * self.z % 30323
        return math.fmod(self.x / 30269.0 + self.y / 30307.0 + self.z / 30323.0, 1.0)


def linear(generator, fan_in, fan_out):
    """Module 08's Linear: weight (in, out) drawn row-major first, then the bias, bound 1/sqrt(in)."""
    bound = 1.0 / math.sqrt(fan_in)
    w = [bound * (2.0 * generator.next() - 1.0) for _ in range(fan_in * fan_out)]
    b = [bound * (2.0 * generator.next() - 1.0) for _ in range(fan_out)]
    return (torch.tensor(w).reshape(fan_in, fan_out).requires_grad_(),
            torch.tensor(b).requires_grad_())


def conv(generator, c_in, c_out, k):
    """Module 09's Conv2d: weight (out, C, k, k) drawn row-major first, then the bias, bound 1/sqrt(C·k·k)."""
    bound = 1.0 / math.sqrt(c_in * k * k)
    w = [bound * (2.0 * generator.next() - 1.0) for _ in range(c_out * c_in * k * k)]
    b = [bound * (2.0 * generator.next() - 1.0) for _ in range(c_out)]
    return (torch.tensor(w).reshape(c_out, c_in, k, k).requires_grad_(),
            torch.tensor(b).requires_grad_())


def cnn_forward(layers, x):
    (w1, b1), (w2, b2), (w3, b3), (w4, b4) = layers
    x = torch.max_pool2d(torch.relu(torch.conv2d(x.reshape(-1, 1, 28, 28), w1, b1, padding=1)), 2)
    x = torch.max_pool2d(torch.relu(torch.conv2d(x, w2, b2, padding=1)), 2)
    x = torch.relu(x.flatten(1) @ w3 + b3)
    return x @ w4 + b4


def forward(layers, x):
    for i, (w, b) in enumerate(layers):
        x = x @ w + b
        if i + 1 < len(layers):
            x = torch.relu(x)
    return x


def first_losses(layers, batches, lr, steps=2, model=forward):
    params = [p for layer in layers for p in layer]
    optimizer = torch.optim.Adam(params, lr=lr, betas=(0.9, 0.999), eps=1e-8)
    losses = []
    for x, y in batches[:steps]:
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(layers, x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def xor():
    generator = WichmannHill(7)
    mlp = [linear(generator, 2, 8), linear(generator, 8, 2)]
    x = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = torch.tensor([0, 1, 1, 0])
    return first_losses(mlp, [(x, y), (x, y)], 0.05)


def idx(path):
    data = gzip.open(path).read()
    magic, = struct.unpack(">I", data[:4])
    dims = struct.unpack(">" + "I" * (magic & 0xFF), data[4:4 + 4 * (magic & 0xFF)])
    return dims, data[4 + 4 * len(dims):]


def fashion_batches(train_count, seed, batch, root):
    """The first two batches of module 05's shuffled loader over the first train_count images."""
    (n, rows, cols), pixels = idx(root + "/train-images-idx3-ubyte.gz")
    _, labels = idx(root + "/train-labels-idx1-ubyte.gz")
    n = min(n, train_count)
    images = torch.tensor(list(pixels[:n * rows * cols]), dtype=torch.float32).reshape(n, rows * cols) / 255.0
    mean = images.double().mean().item()
    std = math.sqrt(((images.double() - mean) ** 2).mean().item())
    images = ((images.double() - mean) / std).float()
    targets = torch.tensor(list(labels[:n]))
    shuffle = WichmannHill(seed)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(shuffle.next() * (i + 1))
        order[i], order[j] = order[j], order[i]
    batches = []
    for start in range(0, 2 * batch, batch):
        index = torch.tensor(order[start:start + batch])
        batches.append((images[index], targets[index]))
    return batches


def cnn_fashion(train_count, seed=1, batch=64, root="/usr/share/datasets/fashion-mnist"):
    generator = WichmannHill(seed)
    layers = [conv(generator, 1, 16, 3), conv(generator, 16, 32, 3), linear(generator, 1568, 64), linear(generator, 64, 10)]
    # The cosine schedule starts at the base rate: the first step's update uses 0.002 exactly.
    return first_losses(layers, fashion_batches(train_count, seed, batch, root), 2e-3, model=cnn_forward)


def mlp_digits(seed=4, batch=32, path="/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"):
    rows = [[float(v) for v in line.split(",")] for line in gzip.open(path, "rt").read().strip().split("\n")]
    train = [r for i, r in enumerate(rows) if i % 5 != 4]
    images = torch.tensor([r[:64] for r in train], dtype=torch.float32) / 16.0
    mean = images.double().mean().item()
    std = math.sqrt(((images.double() - mean) ** 2).mean().item())
    images = ((images.double() - mean) / std).float()
    targets = torch.tensor([int(r[64]) for r in train])
    generator = WichmannHill(seed)
    layers = [linear(generator, 64, 256), linear(generator, 256, 128), linear(generator, 128, 10)]
    shuffle = WichmannHill(seed)
    order = list(range(len(train)))
    for i in range(len(order) - 1, 0, -1):
        j = int(shuffle.next() * (i + 1))
        order[i], order[j] = order[j], order[i]
    batches = [(images[torch.tensor(order[s:s + batch])], targets[torch.tensor(order[s:s + batch])])
               for s in (0, batch)]
    return first_losses(layers, batches, 2e-3)


def mlp_fashion(train_count, seed=1, batch=64, root="/usr/share/datasets/fashion-mnist"):
    generator = WichmannHill(seed)
    layers = [linear(generator, 784, 256), linear(generator, 256, 128), linear(generator, 128, 10)]
    return first_losses(layers, fashion_batches(train_count, seed, batch, root), 1e-3)


if __name__ == "__main__":
    print("01_xor (both runs):", ", ".join(f"{v:.7f}" for v in xor()))
    print("02_mlp_fashion quick (6,000 images):", ", ".join(f"{v:.7f}" for v in mlp_fashion(6000)))
    print("02_mlp_fashion full (60,000 images):", ", ".join(f"{v:.7f}" for v in mlp_fashion(60000)))
    print("04_mlp_digits (both runs):", ", ".join(f"{v:.7f}" for v in mlp_digits()))
    print("03_cnn_fashion quick (4,000 images):", ", ".join(f"{v:.7f}" for v in cnn_fashion(4000)))
    print("03_cnn_fashion full (60,000 images):", ", ".join(f"{v:.7f}" for v in cnn_fashion(60000)))
