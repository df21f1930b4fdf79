#!/usr/bin/python3
"""Sim cards and intra-op threads (issue 32; docs/benchmarks.md): what a run costs on a sim card
against the CPU device, and what its thread count costs alone and beside another run.

    /usr/bin/python3 bench/threads_bench.py [--cdui build/apps/cdui] [--rounds 5] [--only sim,threads]

- sim: `cdui run examples/moons_mlp.json --set loop.epochs=100 --set loop.num_threads=1` on
  `--device cpu` and on `--device sim:0` (one sim card of 1 GiB), pair by pair, the side that goes
  first alternating; prints each side's median wall time and the median of the per-round ratios
  sim:0 / cpu (goal: at most 1.1).
- threads: moons (60 epochs) and the Fashion-MNIST CNN (300 steps) on a sim card (whose runs get
  every core by default), with TrainingLoop's num_threads 1, 2 and 0 (the default), alone and beside
  a second run of the same job at its default, started first and stopped by its pid once the timed
  run ends. Prints the median wall time of each cell (goal: no default slower than one thread).

Each run has a fresh CODEFYUI_HOME (the embedded runtime). The environment is this process's: cdui
sets OMP_WAIT_POLICY=passive for its runtime unless it is set (docs/graph-format.md, num_threads).
Builds nothing: build cdui first (ninja -C build cdui).
"""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

from process_bench import ROOT, run_child

MOONS = os.path.join(ROOT, "examples", "moons_mlp.json")
CNN = os.path.join(ROOT, "examples", "fashion_mnist_cnn.json")
JOBS = {"moons": (MOONS, ["--set", "loop.epochs=60"]),
        "cnn": (CNN, ["--set", "loop.epochs=1", "--set", "loop.max_steps=300"])}


def cdui_argv(cdui, example, device, settings):
    return [cdui, "run", example, "--seed", "1", "--device", device, "--sim-devices", "1x4GiB"] + settings


def timed(argv):
    """Wall seconds of one run on a fresh home."""
    home = tempfile.mkdtemp(prefix="threads-bench-")
    try:
        return run_child(argv, dict(os.environ, CODEFYUI_HOME=home))[0]
    finally:
        shutil.rmtree(home, ignore_errors=True)


def sim_ratio(cdui, rounds):
    settings = ["--set", "loop.epochs=100", "--set", "loop.num_threads=1"]
    print("== sim: moons, 100 epochs, one intra-op thread, cpu against sim:0")
    walls = {"cpu": [], "sim:0": []}
    ratios = []
    for r in range(rounds):
        order = ["cpu", "sim:0"] if r % 2 == 0 else ["sim:0", "cpu"]
        got = {d: timed(cdui_argv(cdui, MOONS, d, settings)) for d in order}
        for d in got:
            walls[d].append(got[d])
        ratios.append(got["sim:0"] / got["cpu"])
        print(f"  round {r + 1}: cpu {got['cpu']:.2f} s, sim:0 {got['sim:0']:.2f} s, ratio {ratios[-1]:.3f}")
    print(f"  median: cpu {statistics.median(walls['cpu']):.2f} s, sim:0 {statistics.median(walls['sim:0']):.2f} s, "
          f"sim:0 / cpu {statistics.median(ratios):.3f} (goal <= 1.1)\n")


def threads(cdui, rounds):
    print("== threads: wall seconds (median), on sim:0; beside = a second run of the same job at its default")
    print(f"| {'job':<6} | {'num_threads':<11} | {'alone':>6} | {'beside':>6} |")
    print(f"|{'-' * 8}|{'-' * 13}|{'-' * 8}|{'-' * 8}|")
    for name, (example, settings) in JOBS.items():
        cells = {}
        for load in ("alone", "beside"):
            for n in (1, 2, 0):
                walls = []
                for _ in range(rounds):
                    other, home = None, None
                    if load == "beside":
                        home = tempfile.mkdtemp(prefix="threads-bench-")
                        other = subprocess.Popen(
                            cdui_argv(cdui, example, "sim:0", ["--set", "loop.epochs=1000", "--set", "loop.max_steps=0"]),
                            env=dict(os.environ, CODEFYUI_HOME=home), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
                    try:
                        walls.append(timed(cdui_argv(cdui, example, "sim:0",
                                                     settings + ["--set", f"loop.num_threads={n}"])))
                    finally:
                        if other:
                            os.kill(other.pid, signal.SIGTERM)
                            other.wait()
                            shutil.rmtree(home, ignore_errors=True)
                cells[(n, load)] = statistics.median(walls)
        for n in (1, 2, 0):
            label = "0 (default)" if n == 0 else str(n)
            print(f"| {name:<6} | {label:<11} | {cells[(n, 'alone')]:6.2f} | {cells[(n, 'beside')]:6.2f} |")
        for load in ("alone", "beside"):
            verdict = "ok" if cells[(0, load)] <= cells[(1, load)] * 1.1 else "SLOWER than one thread"
            print(f"  {name} {load}: default / one thread = {cells[(0, load)] / cells[(1, load)]:.2f} ({verdict})")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cdui", default=os.path.join(ROOT, "build", "apps", "cdui"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="sim,threads")
    args = ap.parse_args()
    if not os.access(args.cdui, os.X_OK):
        sys.exit(f"threads_bench: no cdui at {args.cdui}: build it first (ninja -C build cdui)")
    parts = args.only.split(",")
    if "sim" in parts:
        sim_ratio(args.cdui, args.rounds)
    if "threads" in parts:
        threads(args.cdui, max(1, args.rounds // 2 + 1))


if __name__ == "__main__":
    main()
