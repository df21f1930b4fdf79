#!/usr/bin/python3
"""Two sides of the DDP benchmark (bench/ddp_bench.sh runs both):

  /usr/bin/python3 bench/ddp_bench.py graph GRAPH.json STRATEGY STEPS OUT.json
      writes the training graph cdui's ranks run: the example's data, model, loss and optimizer,
      its TrainingLoop with strategy STRATEGY, max_steps STEPS and one thread, and nothing after the
      loop or for validation;
  /usr/bin/python3 bench/ddp_bench.py python GRAPH.json WORLD STEPS
      trains the same model (built from the graph's layers) with PyTorch's own
      DistributedDataParallel over gloo, WORLD processes of one thread each, batch 64 per process,
      and prints the samples/s of all the processes together over STEPS steps after a warm-up;
  /usr/bin/python3 bench/ddp_bench.py rate EVENTS.jsonl WORLD
      prints a cdui run's samples/s from its events: rank 0's last progress event, times WORLD.
"""
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from training_loop_bench import BATCH, LR, WEIGHT_DECAY, load_train_split  # noqa: E402

WARMUP = 10


def bench_graph(example, strategy, steps):
    keep = {"train_data", "train_loader", "model", "loss", "optimizer", "loop"}
    graph = {"nodes": [n for n in example["nodes"] if n["id"] in keep],
             "edges": [e for e in example["edges"]
                       if e["from"].split(".")[0] in keep and e["to"].split(".")[0] in keep]}
    for n in graph["nodes"]:
        if n["id"] == "loop":
            n["params"] = {"epochs": 1, "max_steps": steps, "strategy": strategy, "num_threads": 1}
    return graph


def build_model(layers):
    """The example's Model layers, in PyTorch, from a 1x28x28 sample."""
    shape = [1, 28, 28]
    modules = []
    for spec in layers:
        kind = spec["type"]
        if kind == "Conv2d":
            k, p = spec["kernel_size"], spec.get("padding", 0)
            modules.append(torch.nn.Conv2d(shape[0], spec["out_channels"], k, padding=p))
            shape = [spec["out_channels"], shape[1] + 2 * p - k + 1, shape[2] + 2 * p - k + 1]
        elif kind == "BatchNorm2d":
            modules.append(torch.nn.BatchNorm2d(shape[0]))
        elif kind == "ReLU":
            modules.append(torch.nn.ReLU())
        elif kind == "MaxPool2d":
            k = spec["kernel_size"]
            modules.append(torch.nn.MaxPool2d(k))
            shape = [shape[0], shape[1] // k, shape[2] // k]
        elif kind == "Flatten":
            modules.append(torch.nn.Flatten())
            shape = [shape[0] * shape[1] * shape[2]] if len(shape) == 3 else shape
        elif kind == "Dropout":
            modules.append(torch.nn.Dropout(spec.get("p", 0.5)))
        elif kind == "Linear":
            modules.append(torch.nn.Linear(shape[0], spec["out_features"]))
            shape = [spec["out_features"]]
        else:
            raise ValueError(f"layer {kind} is not in this benchmark's model builder")
    return torch.nn.Sequential(*modules)


def rank_main(rank, world, layers, steps, store, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    torch.manual_seed(1 + rank)
    inputs, labels = load_train_split()
    model = torch.nn.parallel.DistributedDataParallel(build_model(layers))
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
    order = torch.randperm(inputs.size(0))[rank::world]
    start = None
    for step in range(WARMUP + steps):
        if step == WARMUP:
            dist.barrier()
            start = time.perf_counter()
        idx = order[(step * BATCH) % (order.size(0) - BATCH):][:BATCH]
        loss = F.cross_entropy(model(inputs[idx]), labels[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    dist.barrier()
    if rank == 0:
        out.put(steps * BATCH * world / (time.perf_counter() - start))
    dist.destroy_process_group()


def cdui_rate(events, world):
    """Rank 0's last samples/s in a run's events.jsonl, times the ranks."""
    last = None
    for line in open(events):
        e = json.loads(line)
        if e["type"] == "progress":
            last = e["data"]["samples_per_s"]
        if e["type"] == "execution_error":
            sys.exit("the run failed: " + e["data"]["error"])
    return last * world


def main():
    mode, path = sys.argv[1], sys.argv[2]
    if mode == "rate":
        print(f"{cdui_rate(path, int(sys.argv[3])):.1f}")
        return
    with open(path) as f:
        example = json.load(f)
    if mode == "graph":
        strategy, steps, out = sys.argv[3], int(sys.argv[4]), sys.argv[5]
        with open(out, "w") as f:
            json.dump(bench_graph(example, strategy, steps), f)
        return
    world, steps = int(sys.argv[3]), int(sys.argv[4])
    layers = next(n for n in example["nodes"] if n["type"] == "Model")["params"]["layers"]
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        procs = [ctx.Process(target=rank_main, args=(r, world, layers, steps, store, out)) for r in range(world)]
        for p in procs:
            p.start()
        rate = out.get()
        for p in procs:
            p.join()
    print(f"{rate:.1f}")


if __name__ == "__main__":
    main()
