#!/usr/bin/python3
"""The bare loop of bench_training_loop, in Python, for Debian's python3-torch.

Run it with /usr/bin/python3 (a `python3` earlier on PATH may lack torch):

    /usr/bin/python3 bench/training_loop_bench.py [--rounds R] [--steps N] [--warmup W] [--seed S]

Same data (Fashion-MNIST train split, normalised as cdui's Dataset node does), same model (Flatten,
Linear 784->256, ReLU, Linear 256->10) initialised the same way from a generator seeded like cdui's
run generator, AdamW lr 1e-3 weight decay 0.01, batch 64, a new permutation every epoch drawn from
that generator, one intra-op thread. The timer covers building the optimizer and the loop, as on
the C++ bare side; like it, each round trains on the data loaded afresh just before (untimed), unless
--reuse-data. The first-batch and first-epoch losses are printed so they can be compared with the
C++ figures (same libtorch underneath: they agree to the last digit).

Minor page faults per step are printed too: with glibc's default malloc thresholds this process
maps its ~1 MB of per-step temporaries afresh every step, which dominates its time on a VM where a
fault is expensive. GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456
removes that (see docs/benchmarks.md).
"""
import argparse
import gzip
import math
import os
import resource
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

# Debian's dataset-fashion-mnist; CDUI_FASHION_MNIST names a copy elsewhere (the GPU check carries one).
DATA_ROOT = os.environ.get("CDUI_FASHION_MNIST", "/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530
BATCH = 64
LR = 1e-3
WEIGHT_DECAY = 0.01


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise ValueError(f"{path} is not an IDX file of unsigned bytes")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    return torch.from_numpy(np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(dims).copy())


def load_split(prefix):
    """A Fashion-MNIST split ("train" or "t10k") as cdui's Dataset node holds it: N x 1 x 28 x 28
    float32 images normalised with the train split's mean and deviation, int64 labels."""
    images = read_idx(f"{DATA_ROOT}/{prefix}-images-idx3-ubyte.gz")
    labels = read_idx(f"{DATA_ROOT}/{prefix}-labels-idx1-ubyte.gz")
    inputs = ((images.to(torch.float32) / 255.0 - MEAN) / STD).unsqueeze(1).contiguous()
    return inputs, labels.to(torch.int64)


def load_train_split():
    return load_split("train")


def make_model(gen):
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 256), torch.nn.ReLU(),
                              torch.nn.Linear(256, 10))
    with torch.no_grad():
        for m in net:
            if isinstance(m, torch.nn.Linear):
                bound = 1.0 / math.sqrt(m.in_features)
                for p in m.parameters(recurse=False):  # weight, then bias
                    p.uniform_(-bound, bound, generator=gen)
    net.train()
    return net


def run(inputs, targets, max_steps, seed):
    """Returns (seconds, cpu_seconds, steps, first_batch_loss, first_epoch_loss, minor page faults)."""
    gen = torch.Generator().manual_seed(seed)
    net = make_model(gen)  # not timed: in cdui this is the Model node's work
    n = inputs.size(0)
    batches = (n + BATCH - 1) // BATCH
    steps = 0
    first_batch = first_epoch = float("nan")
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    cpu = time.thread_time()
    start = time.perf_counter()
    optimizer = torch.optim.AdamW(net.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    epoch = 0
    while steps < max_steps:
        epoch += 1
        order = torch.randperm(n, generator=gen)
        loss_sum, samples = 0.0, 0
        for b in range(batches):
            idx = order[b * BATCH:(b + 1) * BATCH]
            x = inputs.index_select(0, idx)
            y = targets.index_select(0, idx)
            optimizer.zero_grad()
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            optimizer.step()
            value = loss.item()
            if steps == 0:
                first_batch = value
            loss_sum += value * x.size(0)
            samples += x.size(0)
            steps += 1
            if steps >= max_steps:
                break
        if epoch == 1 and samples == n:
            first_epoch = loss_sum / samples
    seconds = time.perf_counter() - start
    cpu = time.thread_time() - cpu
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    return seconds, cpu, steps, first_batch, first_epoch, faults


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--seed", type=int, default=42)
    # Accepted so that bench/run.sh can pass the same arguments to both; meaningless here.
    ap.add_argument("--progress-ms", type=int, default=100, help="C++ only; ignored")
    ap.add_argument("--bare-node", action="store_true", help="C++ only; ignored")
    ap.add_argument("--reuse-data", action="store_true", help="load the data once, not before each round")
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"Python bare loop: torch {torch.__version__}, {torch.get_num_threads()} intra-op thread(s),"
          f" {args.rounds} rounds x {args.steps} steps; warm-up {args.warmup} steps", flush=True)
    inputs, targets = load_train_split()
    if args.warmup > 0:
        run(inputs, targets, args.warmup, args.seed)
    rates, cpu_rates = [], []
    for r in range(1, args.rounds + 1):
        if not args.reuse_data:
            inputs = targets = None
            inputs, targets = load_train_split()
        seconds, cpu, steps, first_batch, first_epoch, faults = run(inputs, targets, args.steps, args.seed)
        rates.append(steps / seconds)
        cpu_rates.append(steps / cpu)
        print(f"round {r}: python {rates[-1]:.0f} steps/s; per CPU-second {cpu_rates[-1]:.0f}", flush=True)
    print(f"minor page faults per step (last round): {faults / steps:.2f}")
    print(f"first-batch loss {first_batch:.9f}, first-epoch mean loss {first_epoch:.9f}")
    print(f"per CPU-second of the training thread: python {statistics.median(cpu_rates):.0f}")
    print(f"python: {statistics.median(rates):.0f} steps/s (median of {args.rounds})")


if __name__ == "__main__":
    main()
