#!/usr/bin/env bash
# Runs the TrainingLoop benchmark (C++: TrainingLoop vs a bare libtorch loop, alternating) and the
# same bare loop in Python (Debian's python3-torch), then prints the C++/Python ratios.
# Builds nothing: build the binary first (ninja -C build bench_training_loop).
#
#   bench/run.sh [path/to/bench_training_loop] [args for both, e.g. --rounds 5 --steps 2000]
#
# Python is /usr/bin/python3 on purpose: a python3 earlier on PATH (pyenv) may not have torch.
# Set PYTHON to override. The environment (OPENBLAS_CORETYPE, GLIBC_TUNABLES, ...) is passed as is.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
bin="${1:-$root/build/bench/bench_training_loop}"
[ $# -gt 0 ] && shift
python="${PYTHON:-/usr/bin/python3}"

if [ ! -x "$bin" ]; then
  echo "run.sh: $bin is not built (ninja -C build bench_training_loop)" >&2
  exit 1
fi

echo "== $(nproc) cores, $(uname -m), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== $bin $*"
cpp_out="$("$bin" "$@")"
echo "$cpp_out"
echo "== $python $here/training_loop_bench.py $*"
py_out="$("$python" "$here/training_loop_bench.py" "$@")"
echo "$py_out"

rate() {  # the steps/s number on the line that starts with $2
  awk -v key="$2" 'index($0, key) == 1 { for (i = 1; i <= NF; ++i) if ($(i + 1) == "steps/s") { print $i; exit } }' <<<"$1"
}
bare="$(rate "$cpp_out" "bare libtorch:")"
loop="$(rate "$cpp_out" "TrainingLoop:")"
py="$(rate "$py_out" "python:")"
# per CPU-second figures: "per CPU-second ...: bare B, TrainingLoop L, ratio R" and "...: python P"
cpu_bare="$(sed -n 's/^per CPU-second.*: bare \([0-9.]*\), TrainingLoop.*/\1/p' <<<"$cpp_out")"
cpu_loop="$(sed -n 's/^per CPU-second.*, TrainingLoop \([0-9.]*\),.*/\1/p' <<<"$cpp_out")"
cpu_py="$(sed -n 's/^per CPU-second.*: python \([0-9.]*\).*/\1/p' <<<"$py_out")"
if [ -z "$bare" ] || [ -z "$loop" ] || [ -z "$py" ]; then
  echo "run.sh: could not read the steps/s figures" >&2
  exit 1
fi
echo "== summary (median steps/s)"
grep '^ratio TrainingLoop/bare' <<<"$cpp_out"
awk -v b="$bare" -v l="$loop" -v p="$py" 'BEGIN {
  printf "bare libtorch %s, TrainingLoop %s, Python %s\n", b, l, p
  printf "ratio C++ bare/Python: %.2f\n", b / p
  printf "ratio TrainingLoop/Python: %.2f\n", l / p
}'
if [ -n "$cpu_bare" ] && [ -n "$cpu_loop" ] && [ -n "$cpu_py" ]; then
  awk -v b="$cpu_bare" -v l="$cpu_loop" -v p="$cpu_py" 'BEGIN {
    printf "per CPU-second: bare libtorch %s, TrainingLoop %s, Python %s;", b, l, p
    printf " TrainingLoop/bare %.3f, C++ bare/Python %.2f, TrainingLoop/Python %.2f\n", l / b, b / p, l / p
  }'
fi
