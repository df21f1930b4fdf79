#!/usr/bin/env bash
# The DDP benchmark (issue 13; docs/benchmarks.md): on each Fashion-MNIST example (the CNN and the
# MLP), batch 64 per rank and one thread per rank, side by side in one run:
#   - cdui, 1 rank (strategy single) and 2 ranks (strategy ddp): `cdui exec --rank K --world-size N`
#     processes on prepared run folders, as a worker's agent starts them; samples/s of all ranks
#     from rank 0's last progress event (its own rate times the ranks);
#   - PyTorch's own DistributedDataParallel over gloo, 2 processes (bench/ddp_bench.py, Debian's
#     python3-torch).
# Builds nothing: build cdui first (ninja -C build cdui).
#
#   bench/ddp_bench.sh [path/to/cdui] [steps (default 300)]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cdui="${1:-$root/build/apps/cdui}"
steps="${2:-300}"
python="${PYTHON:-/usr/bin/python3}"
[ -x "$cdui" ] || { echo "ddp_bench.sh: $cdui is not built (ninja -C build cdui)" >&2; exit 1; }

cores="$(nproc)"  # before OMP_NUM_THREADS is set: nproc honours it
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
export CODEFYUI_HOME="$home" OMP_NUM_THREADS=1 GLOO_SOCKET_IFNAME=lo

# Rank 0's last samples/s times the ranks, from a run folder's events.jsonl.
rate() {
  "$python" "$here/ddp_bench.py" rate "$1/events.jsonl" "$2"
}

# cdui on `example` with `world` ranks: prints its samples/s.
cdui_side() {
  local example="$1" world="$2" strategy=single id
  [ "$world" -gt 1 ] && strategy=ddp
  id="$(basename "$example" .json | tr -dc 'a-z' | head -c 6)${world}$RANDOM"
  local dir="$home/runs/$id"
  mkdir -p "$dir"
  "$python" "$here/ddp_bench.py" graph "$example" "$strategy" "$steps" "$dir/graph.json"
  local cards='["cpu"]'
  [ "$world" -gt 1 ] && cards='["cpu","cpu"]'
  printf '{"run_id":"%s","device":"cpu","visible_devices":%s,"seed":1,"num_threads":1,"options":{}}' \
    "$id" "$cards" > "$dir/run.json"
  local pids=()
  for ((k = 0; k < world; ++k)); do
    "$cdui" exec "$dir" --rank "$k" --world-size "$world" > /dev/null 2>> "$dir/exec.log" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  rate "$dir" "$world"
}

echo "== $cores cores, $(uname -m), load average: $(cut -d' ' -f1-3 /proc/loadavg); $steps steps of batch 64 per rank"
printf '%-18s %12s %12s %12s %10s %10s\n' example "cdui 1 rank" "cdui 2 ranks" "python 2" "2 vs 1" "cdui/py"
for example in "$root/examples/fashion_mnist_cnn.json" "$root/examples/fashion_mnist_mlp.json"; do
  one="$(cdui_side "$example" 1)"
  two="$(cdui_side "$example" 2)"
  py="$("$python" "$here/ddp_bench.py" python "$example" 2 "$steps")"
  "$python" -c "import sys; one, two, py = map(float, sys.argv[2:]); print(f'{sys.argv[1]:<18} {one:12.1f} {two:12.1f} {py:12.1f} {two / one:10.2f} {two / py:10.2f}')" \
    "$(basename "$example" .json)" "$one" "$two" "$py"
done
