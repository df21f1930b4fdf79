#!/usr/bin/python3
"""Plots cluster_sim's JSON (bench/cluster_sim.cpp) for docs/benchmarks.md.

    /usr/bin/python3 bench/plot_cluster_sim.py --compare small.json mix.json bursts.json \
        --scaling scaling.json --out docs/images

--compare: one file per trace (cluster_sim --json FILE), each a row of panels: the median and
p99 wait per policy (log scale), and the memory used and cards busy per policy.
--scaling: cluster_sim --scaling --json FILE: the cost of a decision against the queue's length,
through the simulator's index and as the run queue's place_floating is written.
Needs Debian's python3-matplotlib.
"""
import argparse
import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def hours(seconds):
    # A wait of 0 s is drawn at the axis' floor (1 s), which log scales cannot show.
    return max(seconds, 1) / 3600


def compare(files, out):
    fig, axes = plt.subplots(len(files), 2, figsize=(11, 3.3 * len(files)), squeeze=False)
    for row, name in enumerate(files):
        with open(name) as f:
            data = json.load(f)
        policies = [p["policy"] for p in data["policies"]]
        x = range(len(policies))
        title = f'{data["trace"]} trace, {data["jobs"]:,} jobs, load {data["load"]:g}, {data["cluster"]}'
        ax = axes[row][0]
        ax.bar([i - 0.2 for i in x], [hours(p["wait_p50"]) for p in data["policies"]], 0.4, label="median wait")
        ax.bar([i + 0.2 for i in x], [hours(p["wait_p99"]) for p in data["policies"]], 0.4, label="p99 wait")
        ax.set_yscale("log")
        ax.set_ylim(bottom=1 / 3600)
        ax.set_ylabel("hours (log; 0 s drawn at 1 s)")
        ax.set_xticks(list(x), policies)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
        ax = axes[row][1]
        ax.bar([i - 0.2 for i in x], [100 * p["memory_used"] for p in data["policies"]], 0.4, label="card memory used")
        ax.bar([i + 0.2 for i in x], [100 * p["cards_busy"] for p in data["policies"]], 0.4, label="cards busy")
        ax.set_ylabel("% (time average while submitting)")
        ax.set_xticks(list(x), policies)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cluster_sim_policies.png"), dpi=110)


def scaling(name, out):
    with open(name) as f:
        rows = json.load(f)
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    for policy in sorted({r["policy"] for r in rows}):
        for cards in sorted({r["cards"] for r in rows}):
            pts = sorted((r for r in rows if r["policy"] == policy and r["cards"] == cards), key=lambda r: r["queued"])
            if not pts:
                continue
            queued = [r["queued"] for r in pts]
            label = f"{policy}, {cards:,} cards"
            axes[0].plot(queued, [r["us_per_decision"] for r in pts], marker="o", label=label)
            axes[1].plot(queued, [r["literal_pump_seconds"] for r in pts], marker="o", label=label)
    axes[0].set_title("through the simulator's index: µs per decision", fontsize=9)
    axes[0].set_ylim(bottom=0)
    axes[0].set_ylabel("µs")
    axes[1].set_title("the run queue's place_floating as written: one pump", fontsize=9)
    axes[1].set_ylabel("seconds (log)")
    axes[1].set_yscale("log")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("runs queued")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "cluster_sim_scaling.png"), dpi=110)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--compare", nargs="*", default=[])
    parser.add_argument("--scaling")
    parser.add_argument("--out", default="docs/images")
    args = parser.parse_args()
    if args.compare:
        compare(args.compare, args.out)
    if args.scaling:
        scaling(args.scaling, args.out)


if __name__ == "__main__":
    main()
