#!/usr/bin/env bash
# DDP across workers against DDP within one (issue 34; docs/benchmarks.md): a real server and two
# agents on this machine (w1 and w2, two 4 GiB sim cards each, Gloo over loopback), the
# Fashion-MNIST CNN example at batch 64 per rank, one thread per rank, side by side in one run:
#   - 1 worker x 2 ranks: --target w1 --devices sim:0,sim:1
#   - 2 workers x 1 rank: --devices w1/sim:0,w2/sim:0 (the ranks meet at rank 0's TCPStore)
# Samples/s of both ranks from rank 0's last progress event (its own rate times the ranks), each
# pair `rounds` times, alternating. Builds nothing: build cdui first (ninja -C build cdui).
#
#   bench/ddp_workers_bench.sh [path/to/cdui] [steps (default 300)] [rounds (default 3)]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cdui="${1:-$root/build/apps/cdui}"
steps="${2:-300}"
rounds="${3:-3}"
python="${PYTHON:-/usr/bin/python3}"
[ -x "$cdui" ] || { echo "ddp_workers_bench.sh: $cdui is not built (ninja -C build cdui)" >&2; exit 1; }

home="$(mktemp -d)"
export CODEFYUI_HOME="$home" GLOO_SOCKET_IFNAME=lo CODEFYUI_SIM_DEVICES=2x4GiB
stop_all() {
  "$cdui" agent stop w1 > /dev/null 2>&1 || true
  "$cdui" agent stop w2 > /dev/null 2>&1 || true
  "$cdui" stop > /dev/null 2>&1 || true
  rm -rf "$home"
}
trap stop_all EXIT

"$cdui" start > /dev/null
"$cdui" agent start --name w1 > /dev/null
"$cdui" agent start --name w2 > /dev/null
graph="$home/cnn-ddp.json"
"$python" "$here/ddp_bench.py" graph "$root/examples/fashion_mnist_cnn.json" ddp "$steps" "$graph"

# Rank 0's last samples/s times 2, from its run folder on w1.
rate() {
  "$python" "$here/ddp_bench.py" rate "$home/agents/w1/runs/$1/events.jsonl" 2
}

# One run of the graph with these `cdui run` options, to its end; prints its samples/s.
side() {
  local out id
  out="$("$cdui" run "$graph" --seed 1 "$@" 2>&1)" || { echo "$out" >&2; exit 1; }
  id="$(grep -o 'run [0-9a-f]\{8,\}' <<< "$out" | head -n 1 | cut -d' ' -f2)"
  rate "$id"
}

echo "== $(nproc) cores, $(uname -m), load average: $(cut -d' ' -f1-3 /proc/loadavg); CNN, $steps steps of batch 64 per rank"
printf '%-6s %16s %16s %8s\n' round "1 worker x 2" "2 workers x 1" ratio
for ((r = 1; r <= rounds; ++r)); do
  one="$(side --target w1 --devices sim:0,sim:1)"
  two="$(side --devices w1/sim:0,w2/sim:0)"
  "$python" -c "import sys; a, b = map(float, sys.argv[2:]); print(f'{sys.argv[1]:<6} {a:16.1f} {b:16.1f} {b / a:8.2f}')" \
    "$r" "$one" "$two"
done
