#!/usr/bin/python3
"""Training speed of the milestones' models: Kiln's reference library against PyTorch.

Both run single-threaded on this machine, one after the other: the reference solutions' trainer
(built by `bin/grader milestone --solution --quick`) and the same model written in PyTorch
(Debian's python3-torch). The image models train one epoch on the same 60,000 Fashion-MNIST images
in batches of 64 with Adam; the GPT of gpt_fortunes trains 100 steps on batches of 16 windows of
64 characters. A benchmark, not a test: it prints images or tokens per second and the ratio.

    bin/grader milestone mlp_fashion cnn_fashion cnn_im2col_fashion gpt_fortunes --solution --quick   # builds the trainers
    /usr/bin/python3 tests/bench/milestone_vs_pytorch.py [--train N] [--steps N] [--models gpt_fortunes]
"""
import argparse
import gzip
import os
import re
import struct
import subprocess
import sys
import time

import torch

ROOT = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "..", ".grader", "build", "milestone")


def idx(path):
    data = gzip.open(path).read()
    magic, = struct.unpack(">I", data[:4])
    dims = struct.unpack(">" + "I" * (magic & 0xFF), data[4:4 + 4 * (magic & 0xFF)])
    return dims, data[4 + 4 * len(dims):]


def kiln_epoch(name, train):
    """Seconds of the trainer's first epoch, as it reports them."""
    binary = os.path.join(BUILD, f"milestone_{name}__solution")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is not built: run bin/grader milestone {name} --solution --quick first")
    out = subprocess.run([binary, "--epochs", "1", "--train", str(train), "--test", "100", "--data", ROOT,
                          "--out", "/tmp"], env={**os.environ, "OMP_NUM_THREADS": "1"},
                         capture_output=True, text=True, check=True).stderr
    return float(re.search(r"epoch 1 done: mean loss \S+ in (\S+) s", out).group(1))


def kiln_gpt(steps):
    """Tokens a second of the GPT trainer's first epoch of `steps` steps, as it reports them."""
    binary = os.path.join(BUILD, "milestone_gpt_fortunes__solution")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is not built: run bin/grader milestone gpt_fortunes --solution --quick first")
    out = subprocess.run([binary, "--epochs", "1", "--steps", str(steps), "--test", "64", "--data",
                          "/usr/share/games/fortunes", "--out", "/tmp"], env={**os.environ, "OMP_NUM_THREADS": "1"},
                         capture_output=True, text=True, check=True).stderr
    return steps * 16 * 64 / float(re.search(r"epoch 1 done: mean loss \S+ in (\S+) s", out).group(1))


class Block(torch.nn.Module):
    """module 13's pre-norm block: x + attention(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d))

    def forward(self, x):
        b, t, d = x.shape
        h = self.ln1(x)
        split = lambda y: y.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        att = torch.softmax(scores.masked_fill(causal, float("-inf")), dim=-1) @ v
        x = x + self.o(att.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self, vocab=98, context=64, d=96, heads=4, layers=2):
        super().__init__()
        self.tokens, self.positions = torch.nn.Embedding(vocab, d), torch.nn.Embedding(context, d)
        self.blocks = torch.nn.Sequential(*(Block(d, heads) for _ in range(layers)))
        self.ln, self.head = torch.nn.LayerNorm(d), torch.nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        return self.head(self.ln(self.blocks(x)))


def torch_gpt(steps):
    torch.manual_seed(1)
    model = GPT()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    ids = torch.randint(0, 98, (steps, 16, 65))
    started = time.perf_counter()
    for s in range(steps):
        optimizer.zero_grad()
        logits = model(ids[s, :, :64])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 98), ids[s, :, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
    return steps * 16 * 64 / (time.perf_counter() - started)


def torch_epoch(model, images, labels):
    torch.manual_seed(1)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    order = torch.randperm(len(labels))
    started = time.perf_counter()
    for start in range(0, len(labels), 64):
        index = order[start:start + 64]
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(images[index]), labels[index])
        loss.backward()
        optimizer.step()
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=60000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--models", default="mlp_fashion,cnn_fashion,cnn_im2col_fashion,gpt_fortunes",
                        help="which of mlp_fashion, cnn_fashion, cnn_im2col_fashion, gpt_fortunes to time "
                             "(comma-separated)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    (n, rows, cols), pixels = idx(ROOT + "/train-images-idx3-ubyte.gz")
    _, label_bytes = idx(ROOT + "/train-labels-idx1-ubyte.gz")
    n = min(n, args.train)
    images = torch.tensor(list(pixels[:n * rows * cols]), dtype=torch.float32).reshape(n, rows * cols) / 255.0
    images = (images - images.mean()) / images.std()
    labels = torch.tensor(list(label_bytes[:n]))

    mlp = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(), torch.nn.Linear(256, 128), torch.nn.ReLU(),
                              torch.nn.Linear(128, 10))
    # cnn_fashion's network (milestones/03_cnn_fashion), which cnn_im2col_fashion computes with im2col.
    cnn = torch.nn.Sequential(torch.nn.Unflatten(1, (1, 28, 28)), torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
                              torch.nn.MaxPool2d(2), torch.nn.Flatten(), torch.nn.Linear(1568, 64), torch.nn.ReLU(),
                              torch.nn.Linear(64, 10))
    print(f"One epoch over {n} Fashion-MNIST images, batches of 64, Adam, one thread "
          f"(PyTorch {torch.__version__}):")
    print(f"  {'model':<18} {'Kiln (reference)':>18} {'PyTorch':>14} {'Kiln / PyTorch':>16}")
    timed = {}  # PyTorch's epoch of a network, timed once for the milestones that share it
    for name, model in (("mlp_fashion", mlp), ("cnn_fashion", cnn), ("cnn_im2col_fashion", cnn)):
        if name not in args.models.split(","):
            continue
        kiln = kiln_epoch(name, n)
        if id(model) not in timed:
            timed[id(model)] = torch_epoch(model, images, labels)
        ours = timed[id(model)]
        print(f"  {name:<18} {n / kiln:>12.0f} img/s {n / ours:>8.0f} img/s {ours / kiln:>15.2f}×")
    if "gpt_fortunes" not in args.models.split(","):
        return
    print(f"GPT of gpt_fortunes (V 98, D 96, 4 heads, 2 blocks, context 64), {args.steps} steps of 16 windows, Adam:")
    kiln, ours = kiln_gpt(args.steps), torch_gpt(args.steps)
    print(f"  {'gpt_fortunes':<12} {kiln:>10.0f} tok/s {ours:>8.0f} tok/s {kiln / ours:>15.2f}×")


if __name__ == "__main__":
    main()
