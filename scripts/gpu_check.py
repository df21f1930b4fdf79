#!/usr/bin/env python3
"""The GPU check's steps (docs/gpu.md), run on a GPU host by scripts/gpu-check.sh run.

    python3 scripts/gpu_check.py --bundle gpu-check --binaries DIR --report DIR [--deadline-s 510]
                                 [--device cuda:0] [--only STEPS]

Runs the packed cdui (gpu-check/bin) against the host's card, one step after another, each
recorded as PASS, FAIL or SKIP with its figures, in DIR/gpu-check.md and DIR/gpu-check.json:
  env        the host: glibc, the driver (nvidia-smi), the host's torch, cdui --version
  devices    cdui devices lists the card with its name, UUID and memory
  cnn-P      the Fashion-MNIST CNN example on the card in fp32, bf16 and fp16 (with the loss
             scaler): test accuracy >= 0.88, its peak per card
  oom        a run whose typed budget is below its need fails with the NodeOOMError that names the
             budget and its source (the memory-fraction cap at work)
  shared     a server and an agent offering the card, set shared by memory: two budgeted runs train
             at once, a third waits with the ledger's sentence and starts when one ends; the
             card's ledger then counts the CUDA context the runs measured
  holder     a Python process holding 20 GiB on the card: the free figure shows it, and a run whose
             budget no longer fits waits (and starts once the memory is given back)
  estimate   cdui estimate against the measured CUDA peak on 6 graphs, each within +-10%
  ddp        DDP with two ranks on the one card (Gloo; NCCL refuses two ranks on one GPU)
  python     the same Fashion-MNIST job in the host's Python torch, timed beside cdui
Uses the standard library and the host's torch (the holder, the Python job) only. A step that
would pass the deadline is skipped and says so. Exits 0 when every step passed.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GIB = 1 << 30
MIB = 1 << 20
CNN = os.path.join(ROOT, "examples", "fashion_mnist_cnn.json")
MLP = os.path.join(ROOT, "examples", "fashion_mnist_mlp.json")


class Step(Exception):
    """A step's failure, with the sentence that says why."""


class Skip(Exception):
    """A step that cannot run here, with the sentence that says why."""


class Check:
    def __init__(self, args):
        self.bundle = os.path.abspath(args.bundle)
        self.report_dir = os.path.abspath(args.report)
        self.device = args.device
        self.deadline = time.monotonic() + args.deadline_s
        self.results = []
        self.data = os.path.join(self.bundle, "data", "fashion-mnist")
        self.binaries = os.path.abspath(args.binaries or os.path.join(self.bundle, "bin"))
        self.cdui = os.path.join(self.binaries, "cdui")
        self.python = args.python
        self.env = dict(os.environ)
        self.env["PATH"] = self.binaries + os.pathsep + self.env.get("PATH", "")
        self.env["CODEFYUI_DATA_ROOTS"] = self.data
        self.env["CDUI_FASHION_MNIST"] = self.data
        self.env.pop("CODEFYUI_HOME", None)
        self.homes = []
        self.children = []

    # --- helpers --------------------------------------------------------------------------------

    def left(self):
        return self.deadline - time.monotonic()

    def home(self):
        home = tempfile.mkdtemp(prefix="cdui-gpu-check-")
        os.chmod(home, 0o700)
        self.homes.append(home)
        return home

    def sh(self, argv, home=None, timeout=120, check=True, env=None):
        """Runs argv (with the bundle's cdui first on PATH): (exit code, stdout, stderr, seconds)."""
        e = dict(self.env if env is None else env)
        if home:
            e["CODEFYUI_HOME"] = home
        started = time.monotonic()
        try:
            p = subprocess.run(argv, env=e, capture_output=True, text=True,
                               timeout=max(1.0, min(timeout, self.left())))
        except subprocess.TimeoutExpired:
            raise Step(f"{' '.join(argv)} did not end in {timeout:.0f} s")
        took = time.monotonic() - started
        if check and p.returncode != 0:
            raise Step(f"{' '.join(argv)} exited {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}")
        return p.returncode, p.stdout, p.stderr, took

    def data_settings(self):
        return ["--set", f"train_data.root={self.data}", "--set", f"test_data.root={self.data}"]

    def show(self, home, run):
        _, out, _, _ = self.sh([self.cdui, "show", run, "--json"], home)
        return json.loads(out)

    def loop_seconds(self, home, run_id):
        """The TrainingLoop's seconds, from the run's events.jsonl."""
        path = os.path.join(home, "runs", run_id, "events.jsonl")
        with open(path) as f:
            for line in f:
                e = json.loads(line)
                d = e.get("data", {})
                if e.get("type") == "node_status" and d.get("status") == "completed" and d.get("node") == "loop":
                    return float(d["seconds"])
        return float("nan")

    def graph_variant(self, source, changes, name):
        """A copy of `source` with node params changed ({"node": {"param": value}})."""
        with open(source) as f:
            graph = json.load(f)
        for node in graph["nodes"]:
            for key, value in changes.get(node["id"], {}).items():
                node.setdefault("params", {})[key] = value
        path = os.path.join(self.report_dir, "graphs", name + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump(graph, f, indent=1)
        return path

    def card_memory(self):
        """(total, used) bytes of the card, as nvidia-smi says."""
        index = self.device.split(":")[1] if ":" in self.device else "0"
        out = subprocess.run(["nvidia-smi", "-i", index, "--query-gpu=memory.total,memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=30).stdout
        total, used = (int(x.strip()) * MIB for x in out.strip().split(","))
        return total, used

    def record(self, name, status, lines, figures=None):
        self.results.append({"step": name, "status": status, "lines": lines, "figures": figures or {}})
        print(f"[{status}] {name}: {lines[0] if lines else ''}", flush=True)

    def step(self, name, need_s, fn):
        if self.left() < need_s:
            self.record(name, "SKIP", [f"skipped: {self.left():.0f} s left of the check, the step needs about {need_s} s"])
            return None
        started = time.monotonic()
        try:
            lines, figures, ok = fn()
            figures["seconds"] = round(time.monotonic() - started, 1)
            self.record(name, "PASS" if ok else "FAIL", lines, figures)
            return figures
        except Skip as e:
            self.record(name, "SKIP", [str(e)])
        except Step as e:
            self.record(name, "FAIL", [str(e)], {"seconds": round(time.monotonic() - started, 1)})
        except Exception as e:  # a step's own fault is that step's failure, not the check's end
            self.record(name, "FAIL", [f"{type(e).__name__}: {e}"], {"seconds": round(time.monotonic() - started, 1)})
        return None

    # --- steps ----------------------------------------------------------------------------------

    def env_step(self):
        lines = []
        for argv in (["ldd", "--version"], ["nvidia-smi", "--query-gpu=name,uuid,driver_version,memory.total,memory.used",
                                              "--format=csv,noheader"],
                     [self.python, "-c", "import torch; print('torch', torch.__version__, 'CUDA', torch.version.cuda,"
                                         " 'cudnn', torch.backends.cudnn.version())"],
                     [self.cdui, "--version"]):
            try:
                code, out, err, _ = self.sh(argv, check=False, timeout=60)
                lines.append(f"`{' '.join(argv[:2])}`: {(out or err).strip().splitlines()[0] if (out or err).strip() else code}")
            except Step as e:
                lines.append(str(e))
        return lines, {}, True

    def devices_step(self):
        _, out, _, _ = self.sh([self.cdui, "devices"], self.home(), timeout=120)
        lines = ["```", *out.rstrip().splitlines(), "```"]
        row = next((l for l in out.splitlines() if re.search(r"\(GPU-[0-9a-f]{8}, [\d.]+ GiB", l)), None)
        return lines, {"row": row}, row is not None

    def cnn_step(self, precision):
        home = self.home()
        name = f"cnn-{precision}"
        _, _, _, wall = self.sh([self.cdui, "run", CNN, "--device", self.device, "--seed", "1", "--name", name,
                                 "--set", f"loop.precision={precision}", *self.data_settings()], home, timeout=300)
        run = self.show(home, name)
        metrics = run.get("final_metrics", {})
        loop = metrics.get("loop", {})
        accuracy = metrics.get("evaluate", {}).get("accuracy")
        peak = loop.get("peak_memory_bytes", {}).get(self.device.split(":")[0] + ":0") \
            or next(iter(loop.get("peak_memory_bytes", {}).values()), None)
        allocated = next(iter(loop.get("peak_allocated_bytes", {}).values()), None)
        context = next(iter(loop.get("cuda_context_bytes", {}).values()), None)
        created = next(iter(loop.get("cuda_context_created_bytes", {}).values()), None)
        seconds = self.loop_seconds(home, run["run_id"])
        steps = loop.get("total_steps", 0)
        figures = {"accuracy": accuracy, "precision": loop.get("precision"), "peak_bytes": peak,
                   "peak_allocated_bytes": allocated, "cuda_context_bytes": context,
                   "cuda_context_created_bytes": created, "loop_s": seconds, "steps": steps,
                   "steps_per_s": steps / seconds if seconds else None, "wall_s": wall,
                   "loss_scale": loop.get("loss_scale"), "skipped_steps": loop.get("skipped_steps")}
        ok = accuracy is not None and accuracy >= 0.88 and loop.get("precision") == precision and (peak or 0) > 0
        lines = [f"accuracy {accuracy}, precision {loop.get('precision')}, peak {peak} B (allocated {allocated} B), "
                 f"CUDA context {context} B (created {created} B), "
                 f"{steps} steps in {seconds:.2f} s ({figures['steps_per_s'] or 0:.0f} steps/s), process {wall:.1f} s"
                 + (f", loss scale {figures['loss_scale']}, {figures['skipped_steps']} skipped" if precision == "fp16" else "")]
        return lines, figures, ok

    def oom_step(self, fp32_peak):
        home = self.home()
        budget_mib = max(2, int((fp32_peak or 256 * MIB) / 4 / MIB))
        code, out, err, _ = self.sh([self.cdui, "run", CNN, "--device", self.device, "--seed", "1", "--name", "tiny",
                                     "--memory", f"{budget_mib}MiB", "--set", "loop.epochs=1", *self.data_settings()],
                                    home, timeout=180, check=False)
        run = self.show(home, "tiny")
        error = run.get("error") or ""
        wanted = f"memory budget of {budget_mib}.0 MiB" if budget_mib < 1024 else "memory budget of"
        ok = code != 0 and run.get("status") == "failed" and "ran out of memory" in error and wanted in error \
            and "typed" in error
        return [f"budget {budget_mib} MiB (a quarter of the fp32 peak): exit {code}, status {run.get('status')}",
                "```", *error.splitlines()[:8], "```"], {"budget_mib": budget_mib}, ok

    # A server and an agent on the card: the card shared by memory.
    def server_with_agent(self):
        home = self.home()
        env = dict(self.env, CODEFYUI_WORKER_HEARTBEAT_S="1")
        self.sh([self.cdui, "start", "--port", "0"], home, timeout=60, env=env)
        # On a machine without a GPU the check's own test runs it on a sim card (docs/gpu.md).
        sim = ["--sim-devices", "1x80GiB"] if self.device.startswith("sim:") else []
        self.sh([self.cdui, "agent", "start", "--name", "gpu", "--devices", self.device, *sim], home, timeout=90,
                env=env)
        with open(os.path.join(home, "server.json")) as f:
            server = json.load(f)
        base = server.get("http") or f"http://127.0.0.1:{server['port']}"
        return home, base

    def stop_server(self, home):
        self.sh([self.cdui, "agent", "stop", "gpu"], home, timeout=60, check=False)
        self.sh([self.cdui, "stop"], home, timeout=60, check=False)

    def get(self, base, path):
        with urllib.request.urlopen(base + path, timeout=10) as r:
            return json.loads(r.read())

    def card_offer(self, base):
        for w in self.get(base, "/api/workers").get("workers", []):
            if w.get("name") == "gpu":
                for d in w.get("devices", []):
                    if d.get("name") == self.device:
                        return d
        return None

    def wait_for(self, what, test, timeout):
        end = time.monotonic() + min(timeout, self.left())
        while time.monotonic() < end:
            value = test()
            if value:
                return value
            time.sleep(0.25)
        raise Step(f"{what}: not within {timeout:.0f} s")

    def runs(self, base):
        return {r["name"]: r for r in self.get(base, "/api/runs?limit=100")["runs"]}

    def submit(self, home, base, name, budget_bytes, epochs):
        """Queues the MLP example on the agent's card with a budget, over HTTP: target.wait true, so a
        run that does not fit now waits in the queue (saying why) instead of being refused."""
        path = self.graph_variant(MLP, {"loop": {"epochs": epochs}, "train_data": {"root": self.data},
                                        "test_data": {"root": self.data}}, name)
        with open(path) as f:
            graph = json.load(f)
        with open(os.path.join(home, "session.token")) as f:
            token = f.read().strip()
        body = {"graph": graph, "name": name, "options": {
            "device": self.device, "seed": 1,
            "target": {"worker": "gpu", "memory_gib": budget_bytes / GIB, "wait": True}}}
        request = urllib.request.Request(base + "/api/runs", data=json.dumps(body).encode(), method="POST",
                                         headers={"Content-Type": "application/json", "X-CodefyUI-Token": token})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return json.loads(r.read())["run_id"]
        except urllib.error.HTTPError as e:
            raise Step(f"POST /api/runs for {name}: {e.code} {e.read().decode(errors='replace')[:400]}")

    def shared_step(self):
        home, base = self.server_with_agent()
        try:
            offer = self.wait_for("the agent's card with its memory", lambda: (o := self.card_offer(base)) and
                                  o.get("total_bytes", 0) > 0 and o, 60)
            self.sh([self.cdui, "workers", "share", "gpu", self.device], home)
            total = offer["total_bytes"]
            budget = int(total * 0.4)  # two fit with their context allowances, three do not
            for i in range(3):
                self.submit(home, base, f"shared-{i}", budget, 3)

            def two_running_one_waiting():
                runs = self.runs(base).values()
                waiting = [r.get("waiting_reason") or "" for r in runs if r["status"] == "queued"]
                return sum(r["status"] == "running" for r in runs) == 2 and len(waiting) == 1 and \
                    waiting[0].startswith("waits for memory") and waiting[0]
            reason = self.wait_for("two runs training at once while the third waits for memory",
                                   two_running_one_waiting, 120)
            both = True
            self.wait_for("the third run starting once one ends", lambda: self.runs(base)["shared-2"]["status"]
                          in ("running", "succeeded"), 300)
            ended = self.wait_for("all three succeeded", lambda: all(
                r["status"] in ("succeeded", "failed") for r in self.runs(base).values()) and self.runs(base), 300)
            statuses = {n: r["status"] for n, r in ended.items()}
            ok = both and reason is not None and reason.startswith("waits for memory") and \
                all(s == "succeeded" for s in statuses.values())
            lines = [f"card {offer.get('uuid')} total {total / GIB:.1f} GiB, budgets of {budget / GIB:.1f} GiB each",
                     f"the third waited: {reason}", f"ends: {statuses}"]
            figures = {"reason": reason}
            if self.device.startswith("cuda"):
                # Each run measured the CUDA context; the card's ledger counts the largest whole
                # figure, else the 768 MiB allowance (docs/gpu.md, "The CUDA context").
                def figures_of(name):
                    return [v for r in ended.values()
                            for v in r.get("final_metrics", {}).get("loop", {}).get(name, {}).values()]
                held, created = figures_of("cuda_context_bytes"), figures_of("cuda_context_created_bytes")
                expected = max(held) if held else 768 * MIB
                try:
                    ledger = self.wait_for("the ledger counting the measured context", lambda: (
                        m := (self.card_offer(base) or {}).get("memory") or {}) and
                        m.get("context_bytes") == expected and m, 15)
                except Step:
                    ledger = (self.card_offer(base) or {}).get("memory") or {}
                ok = ok and ledger.get("context_bytes") == expected and bool(held or created)
                lines.append(f"contexts the runs measured: held {held}, created {created}; the ledger counts "
                             f"{ledger.get('context_bytes')} B ({ledger.get('context')}), expected {expected}")
                figures.update(context_held=held, context_created=created, ledger_context=ledger.get("context_bytes"))
            return lines, figures, ok
        finally:
            self.stop_server(home)

    def holder_step(self):
        if not self.device.startswith("cuda"):
            raise Skip("the holder takes memory on a CUDA card")
        home, base = self.server_with_agent()
        holder = None
        try:
            offer = self.wait_for("the agent's card with its memory", lambda: (o := self.card_offer(base)) and
                                  o.get("free_bytes", 0) > 0 and o, 60)
            self.sh([self.cdui, "workers", "share", "gpu", self.device], home)
            free_before = offer["free_bytes"]
            holder = subprocess.Popen(
                [self.python, "-c", "import sys, time, torch\n"
                 f"x = torch.empty(20 << 30, dtype=torch.uint8, device='{self.device}')\n"
                 "print('held', flush=True)\ntime.sleep(600)"], stdout=subprocess.PIPE, text=True)
            self.children.append(holder)
            if holder.stdout.readline().strip() != "held":
                raise Step("the Python holder did not take 20 GiB")
            after = self.wait_for("the free figure showing the 20 GiB", lambda: (o := self.card_offer(base)) and
                                  o["free_bytes"] <= free_before - 19 * GIB and o, 30)
            free_with = after["free_bytes"]
            budget = free_with + 5 * GIB  # fits the card without the holder, not with it
            self.submit(home, base, "after-holder", budget, 1)
            reason = self.wait_for("the run waiting for memory", lambda: (
                (r := self.runs(base)["after-holder"])["status"] == "queued" and (r.get("waiting_reason") or "")
                .startswith("waits for memory") and r["waiting_reason"]), 30)
            holder.terminate()
            holder.wait(30)
            self.wait_for("the run starting once the holder let go", lambda: self.runs(base)["after-holder"]["status"]
                          in ("running", "succeeded"), 60)
            return [f"free {free_before / GIB:.1f} GiB -> {free_with / GIB:.1f} GiB with the holder",
                    f"a {budget / GIB:.1f} GiB budget waited: {reason}", "it started once the holder ended"], \
                {"free_before": free_before, "free_with_holder": free_with}, True
        finally:
            if holder and holder.poll() is None:
                holder.kill()
            self.stop_server(home)

    def estimate_step(self):
        graphs = [("mlp-b64", MLP, {}), ("mlp-b512", MLP, {"train_loader": {"batch_size": 512}}),
                  ("mlp-bf16", MLP, {"loop": {"precision": "bf16"}}), ("cnn-b64", CNN, {}),
                  ("cnn-b256", CNN, {"train_loader": {"batch_size": 256}}),
                  ("cnn-bf16-b128", CNN, {"train_loader": {"batch_size": 128}, "loop": {"precision": "bf16"}})]
        # Beside the goal (the estimate against the reserved peak), what a later calibration needs:
        # the estimate's terms that every device has against the most the tensors held
        # (peak_allocated_bytes), and its CUDA-only terms against what the caching allocator added.
        lines, figures, ok = ["| graph | estimate | measured peak | ratio | tensors: estimate / allocated peak |",
                              "|---|---|---|---|---|"], {}, True
        for name, source, changes in graphs:
            changes = dict(changes)
            changes.setdefault("loop", {})
            changes["loop"] = dict(changes["loop"], max_steps=60, epochs=1)
            path = self.graph_variant(source, changes, name)
            # Exit 1 with the JSON: a rough estimate (cdui estimate says so in its exit code).
            code, out, err, _ = self.sh([self.cdui, "estimate", path, "--device", self.device, "--json"],
                                        timeout=60, check=False)
            if code not in (0, 1):
                raise RuntimeError(f"cdui estimate {name} exited {code}: {err.strip()}")
            estimate = json.loads(out)
            if estimate.get("rough") and not self.device.startswith("cuda"):
                # A bf16 graph on a sim card of a CPU without AVX-512: the estimate says it cannot
                # count it (docs/training-memory.md); on a CUDA card that never applies.
                figures[name] = {"estimate": None, "peak": None, "ratio": None, "rough": estimate["rough"]}
                lines.append(f"| {name} | rough: {estimate['rough']} | - | - |")
                continue
            total = estimate.get("total_bytes") or estimate.get("total")
            home = self.home()
            self.sh([self.cdui, "run", path, "--device", self.device, "--seed", "1", "--name", name,
                     *self.data_settings()], home, timeout=180)
            loop = self.show(home, name)["final_metrics"].get("loop", {})
            peak = next(iter(loop.get("peak_memory_bytes", {}).values()), None)
            allocated = next(iter(loop.get("peak_allocated_bytes", {}).values()), None)
            tensors = sum(t["bytes"] for t in estimate.get("terms", []) if not t.get("cuda_only"))
            ratio = total / peak if total and peak else None
            figures[name] = {"estimate": total, "peak": peak, "ratio": ratio, "estimate_tensors": tensors,
                             "peak_allocated": allocated, "terms": estimate.get("terms"),
                             "cuda_context_bytes": next(iter(loop.get("cuda_context_bytes", {}).values()), None)}
            ok = ok and ratio is not None and 0.9 <= ratio <= 1.1
            held = f"{tensors} / {allocated} ({tensors / allocated:.3f})" if allocated else f"{tensors} / -"
            lines.append(f"| {name} | {total} | {peak} | {ratio:.3f} | {held} |" if ratio
                         else f"| {name} | {total} | {peak} | - | {held} |")
        ratios = [f["ratio"] for f in figures.values() if f["ratio"]]
        rough = sum(1 for f in figures.values() if f.get("rough"))
        lines.insert(0, f"{len(ratios)} of {len(graphs)} graphs measured, estimate / peak from {min(ratios, default=0):.3f}"
                        f" to {max(ratios, default=0):.3f} (goal 0.9 to 1.1)"
                        + (f"; {rough} rough, not run" if rough else ""))
        return lines, figures, ok

    def ddp_step(self):
        home, base = self.server_with_agent()
        try:
            path = self.graph_variant(MLP, {"loop": {"strategy": "ddp", "epochs": 1}}, "ddp-mlp")
            code, out, err, _ = self.sh([self.cdui, "run", path, "--target", "gpu", "--devices",
                                         f"{self.device},{self.device}", "--name", "ddp", "--wait",
                                         *self.data_settings()], home, timeout=240, check=False)
            runs = self.runs(base)
            run = runs.get("ddp")
            loop = (run or {}).get("final_metrics", {}).get("loop", {})
            ok = code == 0 and loop.get("world_size") == 2 and loop.get("backend") == "gloo"
            return [f"exit {code}; world_size {loop.get('world_size')}, backend {loop.get('backend')}, "
                    f"accuracy {(run or {}).get('final_metrics', {}).get('evaluate', {}).get('accuracy')}",
                    (err or out).strip().splitlines()[-1] if (err or out).strip() else ""], {}, ok
        finally:
            self.stop_server(home)

    def python_step(self, cdui_cnn):
        code, out, err, _ = self.sh([self.python, os.path.join(ROOT, "bench", "process_bench.py"), "--only", "cnn",
                                     "--rounds", "2", "--device", self.device, "--python", self.python,
                                     "--cdui", self.cdui], timeout=400, check=False)
        lines = ["```", *out.strip().splitlines()[-12:], "```"]
        if code != 0:
            lines.append(err.strip()[-600:])
        wall = re.search(r"Python/cdui wall ([\d.]+) / ([\d.]+) / ([\d.]+)", out)
        train = re.findall(r"^\s*\d+\s+\w+\s+\|\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+\|\s+[\d.]+\s+[\d.]+"
                           r"\s+[\d.]+\s+[\d.]+\s+([\d.]+)", out, re.M)
        ratios = [float(p) / float(c) for c, p in train if float(c) > 0]
        figures = {"wall_ratio_median": float(wall.group(2)) if wall else None,
                   "step_rate_ratios": ratios}
        ok = code == 0 and bool(ratios) and min(ratios) >= 1.2
        lines.insert(0, f"cdui's CNN step rate / Python's (train seconds, same steps): {', '.join(f'{r:.2f}' for r in ratios)}"
                        " (goal >= 1.2)")
        return lines, figures, ok

    # --- the check ------------------------------------------------------------------------------

    def run(self):
        os.makedirs(self.report_dir, exist_ok=True)
        self.step("env", 10, self.env_step)
        self.step("devices", 30, self.devices_step)
        cnn = {p: self.step(f"cnn-{p}", 45, lambda p=p: self.cnn_step(p)) for p in ("fp32", "bf16", "fp16")}
        self.step("oom", 30, lambda: self.oom_step((cnn["fp32"] or {}).get("peak_bytes")))
        self.step("shared", 90, self.shared_step)
        self.step("holder", 60, self.holder_step)
        self.step("estimate", 90, self.estimate_step)
        self.step("ddp", 60, self.ddp_step)
        self.step("python", 90, lambda: self.python_step(cnn["fp32"]))
        self.write()
        return all(r["status"] == "PASS" for r in self.results)

    def write(self):
        lines = [f"# GPU check, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", ""]
        for r in self.results:
            lines.append(f"## {r['step']}: {r['status']}")
            lines.extend(r["lines"])
            lines.append("")
        with open(os.path.join(self.report_dir, "gpu-check.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(self.report_dir, "gpu-check.json"), "w") as f:
            json.dump(self.results, f, indent=1)

    def clean(self):
        for child in self.children:
            if child.poll() is None:
                child.kill()
        for home in self.homes:
            shutil.rmtree(home, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bundle", default=os.path.join(ROOT, "gpu-check"))
    ap.add_argument("--binaries", default=None, help="where cdui is (default: BUNDLE/bin)")
    ap.add_argument("--report", required=True)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--python", default=sys.executable, help="the host's Python with torch")
    ap.add_argument("--deadline-s", type=float, default=510)
    ap.add_argument("--only", default="", help="a comma list of steps to run (default: all)")
    args = ap.parse_args()
    check = Check(args)
    try:
        if args.only:
            os.makedirs(check.report_dir, exist_ok=True)
            steps = {"env": (10, check.env_step), "devices": (30, check.devices_step),
                     "shared": (90, check.shared_step), "holder": (60, check.holder_step),
                     "estimate": (90, check.estimate_step), "ddp": (60, check.ddp_step)}
            for name in args.only.split(","):
                if name.startswith("cnn-"):
                    check.step(name, 45, lambda p=name[4:]: check.cnn_step(p))
                elif name in steps:
                    check.step(name, *steps[name])
                else:
                    sys.exit(f"gpu_check: no step {name}")
            check.write()
            ok = all(r["status"] == "PASS" for r in check.results)
        else:
            ok = check.run()
    finally:
        check.clean()
    print(f"gpu check: {sum(r['status'] == 'PASS' for r in check.results)} passed, "
          f"{sum(r['status'] == 'FAIL' for r in check.results)} failed, "
          f"{sum(r['status'] == 'SKIP' for r in check.results)} skipped; report in {check.report_dir}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
