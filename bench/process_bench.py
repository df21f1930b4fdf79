#!/usr/bin/python3
"""Whole-process benchmark (issue 14; docs/benchmarks.md): what a user times, side by side.

    /usr/bin/python3 bench/process_bench.py [--cdui build/apps/cdui] [--rounds 5]
                                            [--only mlp,cnn,commands] [--python PY] [--device D]

- mlp, cnn: `cdui run examples/fashion_mnist_{mlp,cnn}.json --set loop.epochs=1 --seed 1` on the
  embedded runtime (a fresh CODEFYUI_HOME each time, so no server is found) against the same job in
  Python (bench/fashion_mnist_job.py, Debian's python3-torch), pair by pair: each round runs both,
  and the side that goes first alternates. Each child's wall time, CPU time (user + system) and
  peak resident set (ru_maxrss) come from wait4(). Prints every round and, over the rounds, the
  min / median / max of Python/cdui wall and CPU (above 1: cdui is faster) and cdui/Python peak RSS
  (below 1: cdui uses less), with the phases each side spent its time in (cdui: its Dataset nodes'
  and TrainingLoop's seconds from events.jsonl; Python: what the job prints).
- commands: `cdui --version`, `cdui validate examples/fashion_mnist_mlp.json`, and a server:
  `cdui start --foreground --port 0` on a fresh home, timed until server.json is written and
  GET /api/health answers 200 (polled every 2 ms), then SIGTERM to its pid, timed until it exits.

--python: the Python (with its torch) that runs the Python side; default $PYTHON, else Debian's
/usr/bin/python3. To compare the pip configuration (docs/gpu.md) with the same PyPI torch:
--cdui build-pip/apps/cdui --python ~/.cache/cdui/torch-2.11.0-cu130/bin/python. --device: where
both sides train (cpu, the default, or cuda:0: cdui run --device, the job's --device).
$CDUI_FASHION_MNIST: the data set's folder, for both sides, when it is not Debian's.

Builds nothing: build cdui first (ninja -C build cdui). OMP_NUM_THREADS=1 is set for both sides.
No goal is asserted; the figures are printed with the issue's goals beside them.
"""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PYTHON = os.environ.get("PYTHON", "/usr/bin/python3")


def run_child(argv, env=None):
    """Runs argv to its end, reaped with wait4: (wall s, cpu s, peak RSS MiB, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if proc.returncode != 0:
        sys.exit(f"process_bench: {' '.join(argv)} exited {proc.returncode}:\n{stdout}{stderr}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, stdout, stderr


def stats(values):
    return min(values), statistics.median(values), max(values)


def fmt3(values, digits=2):
    lo, mid, hi = stats(values)
    return f"{lo:.{digits}f} / {mid:.{digits}f} / {hi:.{digits}f}"


def cdui_phases(home):
    """Seconds of the Dataset nodes and of the TrainingLoop, from the run's events.jsonl."""
    runs = os.path.join(home, "runs")
    run = os.path.join(runs, os.listdir(runs)[0])
    load = train = 0.0
    with open(os.path.join(run, "events.jsonl")) as f:
        for line in f:
            e = json.loads(line)
            d = e.get("data", {})
            if e["type"] == "node_status" and d.get("status") == "completed":
                if d["node"].endswith("_data"):
                    load += d["seconds"]
                elif d["node"] == "loop":
                    train += d["seconds"]
    return load, train


def data_root_settings():
    """cdui's --set for a data set that is not in Debian's folder ($CDUI_FASHION_MNIST)."""
    root = os.environ.get("CDUI_FASHION_MNIST")
    return [] if not root else ["--set", f"train_data.root={root}", "--set", f"test_data.root={root}"]


def cdui_job(cdui, example, env, device):
    home = tempfile.mkdtemp(prefix="process-bench-")
    try:
        wall, cpu, rss, out, _ = run_child(
            [cdui, "run", example, "--set", "loop.epochs=1", "--seed", "1", "--device", device]
            + data_root_settings(), dict(env, CODEFYUI_HOME=home))
        load, train = cdui_phases(home)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    accuracy = next((line.split("=")[1].strip() for line in out.splitlines()
                     if line.strip().startswith("evaluate.accuracy")), "?")
    return wall, cpu, rss, load, train, accuracy


def python_job(python, example, env, device):
    wall, cpu, rss, out, err = run_child(
        [python, os.path.join(HERE, "fashion_mnist_job.py"), example, "--epochs", "1", "--seed", "1",
         "--device", device], env)
    phases = err.strip().splitlines()[-1]  # "python job: load L s, train T s, ..."
    load = float(phases.split("load ")[1].split(" s")[0])
    train = float(phases.split("train ")[1].split(" s")[0])
    accuracy = out.split("test accuracy ")[1].strip()
    return wall, cpu, rss, load, train, accuracy


def jobs(cdui, python, device, name, rounds, env):
    example = os.path.join(ROOT, "examples", f"fashion_mnist_{name}.json")
    print(f"== {name}: cdui run {os.path.relpath(example, ROOT)} --set loop.epochs=1 --seed 1 --device {device}"
          f" vs {python} bench/fashion_mnist_job.py, {rounds} rounds, alternating")
    print(f"{'round':>5} {'first':>6} | {'cdui wall':>9} {'cpu':>6} {'RSS MiB':>8} {'load':>6} {'train':>6} |"
          f" {'py wall':>8} {'cpu':>6} {'RSS MiB':>8} {'load':>6} {'train':>6} | {'wall py/c':>9} {'rss c/py':>8}")
    rows = []
    for r in range(rounds):
        cdui_first = r % 2 == 0
        if cdui_first:
            c = cdui_job(cdui, example, env, device)
            p = python_job(python, example, env, device)
        else:
            p = python_job(python, example, env, device)
            c = cdui_job(cdui, example, env, device)
        rows.append((c, p))
        print(f"{r + 1:>5} {'cdui' if cdui_first else 'python':>6} | {c[0]:9.2f} {c[1]:6.2f} {c[2]:8.0f} {c[3]:6.2f}"
              f" {c[4]:6.2f} | {p[0]:8.2f} {p[1]:6.2f} {p[2]:8.0f} {p[3]:6.2f} {p[4]:6.2f} |"
              f" {p[0] / c[0]:9.2f} {c[2] / p[2]:8.2f}", flush=True)
    col = lambda side, i: [row[side][i] for row in rows]  # noqa: E731
    print(f"   min / median / max over {rounds} rounds")
    print(f"   cdui   wall {fmt3(col(0, 0))} s, CPU {fmt3(col(0, 1))} s, peak RSS {fmt3(col(0, 2), 0)} MiB,"
          f" Dataset nodes {fmt3(col(0, 3))} s, TrainingLoop {fmt3(col(0, 4))} s")
    print(f"   python wall {fmt3(col(1, 0))} s, CPU {fmt3(col(1, 1))} s, peak RSS {fmt3(col(1, 2), 0)} MiB,"
          f" loading {fmt3(col(1, 3))} s, training {fmt3(col(1, 4))} s")
    print(f"   Python/cdui wall {fmt3([p[0] / c[0] for c, p in rows])} (goal >= 1.5)")
    print(f"   Python/cdui CPU  {fmt3([p[1] / c[1] for c, p in rows])}")
    print(f"   cdui/Python peak RSS {fmt3([c[2] / p[2] for c, p in rows])} (goal <= 1)")
    print(f"   Python/cdui loading {fmt3([p[3] / c[3] for c, p in rows])} (goal >= 1)")
    print(f"   test accuracy (last round): cdui {rows[-1][0][5]}, python {rows[-1][1][5]}", flush=True)


def health(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/health", timeout=1) as res:
            return res.status == 200
    except OSError:
        return False


def server_start_stop(cdui, env):
    """(seconds to ready, seconds to exit after SIGTERM, peak RSS MiB) of one server on a fresh home."""
    home = tempfile.mkdtemp(prefix="process-bench-")
    server_json = os.path.join(home, "server.json")
    proc = None
    try:
        start = time.perf_counter()
        proc = subprocess.Popen([cdui, "start", "--foreground", "--port", "0"], env=dict(env, CODEFYUI_HOME=home),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            if proc.poll() is not None:
                sys.exit(f"process_bench: cdui start exited {proc.returncode} (see {home}/server.log)")
            port = None
            try:
                with open(server_json) as f:
                    port = json.load(f)["port"]
            except (OSError, ValueError, KeyError):
                pass
            if port and health(port):
                break
            time.sleep(0.002)
        ready = time.perf_counter() - start
        stopping = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        _, _, usage = os.wait4(proc.pid, 0)
        stopped = time.perf_counter() - stopping
        proc.returncode = 0
        return ready, stopped, usage.ru_maxrss / 1024
    finally:
        if proc is not None and proc.returncode is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(home, ignore_errors=True)


def commands(cdui, rounds, env):
    example = os.path.join(ROOT, "examples", "fashion_mnist_mlp.json")
    print(f"== commands, {rounds} rounds: min / median / max")
    for label, argv in (("cdui --version", [cdui, "--version"]),
                        ("cdui validate examples/fashion_mnist_mlp.json", [cdui, "validate", example])):
        walls, rss = [], []
        for _ in range(rounds):
            wall, _, peak, _, _ = run_child(argv, env)
            walls.append(wall * 1000)
            rss.append(peak)
        print(f"   {label}: {fmt3(walls, 0)} ms, peak RSS {fmt3(rss, 0)} MiB (goal < 100 ms)", flush=True)
    ready, stop, rss = [], [], []
    for _ in range(rounds):
        a, b, c = server_start_stop(cdui, env)
        ready.append(a * 1000)
        stop.append(b * 1000)
        rss.append(c)
    print(f"   cdui start --foreground --port 0 until server.json and /api/health 200: {fmt3(ready, 0)} ms"
          f" (goal < 1000 ms)")
    print(f"   SIGTERM until the server exits: {fmt3(stop, 0)} ms; the idle server's peak RSS {fmt3(rss, 0)} MiB",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cdui", default=os.path.join(ROOT, "build", "apps", "cdui"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--only", default="mlp,cnn,commands", help="a comma list of mlp, cnn, commands")
    ap.add_argument("--python", default=PYTHON, help="the Python that runs the Python side (its torch)")
    ap.add_argument("--device", default="cpu", help="where both sides train: cpu or cuda:N")
    args = ap.parse_args()
    if not os.access(args.cdui, os.X_OK):
        sys.exit(f"process_bench: {args.cdui} is not built (ninja -C build cdui)")
    cdui = os.path.abspath(args.cdui)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("CODEFYUI_HOME", None)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"== {os.cpu_count()} cores, load average {load}; {cdui}")
    for part in args.only.split(","):
        if part in ("mlp", "cnn"):
            jobs(cdui, args.python, args.device, part, args.rounds, env)
        elif part == "commands":
            commands(cdui, args.rounds, env)
        else:
            sys.exit(f"process_bench: --only takes mlp, cnn, commands, not {part}")


if __name__ == "__main__":
    main()
