#!/usr/bin/python3
"""The Python side of bench/process_bench.sh: the whole job of `cdui run` on a Fashion-MNIST example.

    /usr/bin/python3 bench/fashion_mnist_job.py GRAPH.json [--epochs E] [--seed S] [--out DIR]
                                                [--device D]

Does what the example's graph does, node by node, in Debian's python3-torch with one intra-op
thread: loads the train and test splits (gzip + numpy, normalised as cdui's Dataset node does),
builds the Model's layers, trains E epochs with the graph's optimizer and LR scheduler (if any) over
batches of the train loader's size, in a new order every epoch when it shuffles, reading each
batch's loss (the TrainingLoop records it), validates on the test loader after every epoch (the
loop's val_dataloader), evaluates on it once more (EvaluateModel), and saves what the graph's saver
saves: the model's weights (ModelSaver) or the model and optimizer states (CheckpointSaver).
Prints the test accuracy, and on stderr the seconds of loading, training and the rest. With
--device cuda:0 the splits and the model live on that card, as cdui's TrainingLoop puts them there.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ddp_bench import build_model  # noqa: E402
from training_loop_bench import load_split  # noqa: E402


def node(graph, kind, node_id=None):
    """The graph's first node of this type (and id, when given), or None."""
    return next((n for n in graph["nodes"] if n["type"] == kind and (node_id is None or n["id"] == node_id)),
                None)


def feeding(graph, port):
    """The node whose output feeds `port` ("loop.dataloader")."""
    source = next(e["from"] for e in graph["edges"] if e["to"] == port).split(".")[0]
    return next(n for n in graph["nodes"] if n["id"] == source)


def make_optimizer(spec, params):
    p = spec["params"]
    name, lr, wd = p["name"], p.get("lr", 1e-3), p.get("weight_decay", 0.0)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=p.get("momentum", 0.0), weight_decay=wd)
    raise ValueError(f"optimizer {name} is not in this benchmark")


def evaluate(model, inputs, targets, batch):
    """Mean loss and accuracy over the split, in batches, without gradients (eval mode)."""
    model.eval()
    loss_sum, correct = 0.0, 0
    with torch.no_grad():
        for start in range(0, inputs.size(0), batch):
            out = model(inputs[start:start + batch])
            y = targets[start:start + batch]
            loss_sum += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
    model.train()
    return loss_sum / inputs.size(0), correct / inputs.size(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph")
    ap.add_argument("--epochs", type=int, default=None, help="default: the TrainingLoop's")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None, help="where the saver writes (default: a temp folder)")
    ap.add_argument("--device", default="cpu", help="cpu (default) or cuda:N")
    args = ap.parse_args()
    with open(args.graph) as f:
        graph = json.load(f)
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()

    device = torch.device(args.device)
    train_x, train_y = (t.to(device) for t in load_split("train"))
    test_x, test_y = (t.to(device) for t in load_split("t10k"))
    t_loaded = time.perf_counter()

    loop = node(graph, "TrainingLoop")
    epochs = args.epochs or loop["params"].get("epochs", 1)
    train_loader = feeding(graph, f"{loop['id']}.dataloader")["params"]
    batch, shuffle = train_loader.get("batch_size", 32), train_loader.get("shuffle", True)
    val_batch = feeding(graph, f"{loop['id']}.val_dataloader")["params"].get("batch_size", 32)
    model = build_model(node(graph, "Model")["params"]["layers"]).to(device)
    optimizer = make_optimizer(node(graph, "Optimizer"), model.parameters())
    schedule = node(graph, "LRScheduler")
    scheduler = None
    if schedule is not None:
        p = schedule["params"]
        if p.get("kind") != "step":
            raise ValueError(f"scheduler {p.get('kind')} is not in this benchmark")
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, p["step_size"], p.get("gamma", 0.1))

    model.train()
    n = train_x.size(0)
    for _ in range(epochs):
        order = (torch.randperm(n) if shuffle else torch.arange(n)).to(device)
        for start in range(0, n, batch):
            idx = order[start:start + batch]
            loss = F.cross_entropy(model(train_x.index_select(0, idx)), train_y.index_select(0, idx))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            loss.item()
        if scheduler is not None:
            scheduler.step()
        evaluate(model, test_x, test_y, val_batch)
    t_trained = time.perf_counter()

    _, accuracy = evaluate(model, test_x, test_y, val_batch)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or tmp
        if node(graph, "CheckpointSaver") is not None:
            torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()},
                       os.path.join(out, "checkpoint.pt"))
        else:
            torch.save(model.state_dict(), os.path.join(out, "model.pt"))
    t_end = time.perf_counter()
    print(f"test accuracy {accuracy:.4f}")
    print(f"python job: load {t_loaded - t0:.3f} s, train {t_trained - t_loaded:.3f} s, "
          f"evaluate and save {t_end - t_trained:.3f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
