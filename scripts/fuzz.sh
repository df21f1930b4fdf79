#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang, ASan + UBSan, in build-fuzz/) and runs each over its
# corpus: the committed seeds of fuzz/corpus/TARGET plus what earlier runs found
# (build-fuzz/corpus/TARGET, where new inputs go). Prints per target the inputs run and whether it
# crashed; exits 1 on a crash, a leak or a timeout (the input is kept under build-fuzz/artifacts/).
#
#   scripts/fuzz.sh [--seconds N] [--runs N] [--jobs N] [--ci] [TARGET...]
#
#   --seconds N  fuzz each target for N seconds (default 60)
#   --runs N     stop each target after N inputs (default: no limit; --seconds still applies)
#   --jobs N     build with N parallel jobs (default 2)
#   --ci         run each target once over each committed seed, nothing more (fast), for .ci/run
#   TARGET       wire_fuzz, device_fuzz, slot_limits_fuzz, graph_fuzz, csv_fuzz, idx_fuzz,
#                http_fuzz (the "_fuzz" may be left out); default: all of them
#
# See docs/fuzzing.md for what each target feeds, and the inputs run so far.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

all_targets=(wire_fuzz device_fuzz slot_limits_fuzz graph_fuzz csv_fuzz idx_fuzz http_fuzz)

seconds=60
runs=-1
jobs=2
ci=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --ci) ci=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) t=${1%_fuzz}_fuzz
       if [[ ! " ${all_targets[*]} " == *" $t "* ]]; then
         echo "fuzz.sh: unknown target $1 (one of: ${all_targets[*]})" >&2; exit 2
       fi
       targets+=("$t"); shift ;;
  esac
done
[ ${#targets[@]} -eq 0 ] && targets=("${all_targets[@]}")

clang=$(command -v clang++-14 || true)
if [ -z "$clang" ] || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz.sh: needs clang-14 and libFuzzer (bash scripts/install-deps.sh)" >&2
  exit 2
fi

# ccache hits across build folders and clones (as in .ci/run).
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
build=build-fuzz
start=$(date +%s)
nice -n 10 cmake -S . -B $build -G Ninja -DCMAKE_CXX_COMPILER="$clang" -DCDUI_FUZZ=ON \
  -DBUILD_TESTING=OFF >/dev/null
nice -n 10 cmake --build $build -j "$jobs" --target "${targets[@]}"
echo "fuzz: built ${targets[*]} in $(( $(date +%s) - start )) s"

# A UBSan report stops the target like an ASan one (libFuzzer keeps the input); leaks are checked
# after every input that allocated more than it freed.
export UBSAN_OPTIONS="halt_on_error=1:abort_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"

total=0
failed=()
printf '%-18s %12s %8s  %s\n' target inputs seconds result
for t in "${targets[@]}"; do
  seeds=fuzz/corpus/${t%_fuzz}
  work=$build/corpus/${t%_fuzz}
  artifacts=$build/artifacts/${t%_fuzz}
  log=$build/logs/$t.log
  mkdir -p "$work" "$artifacts" "$(dirname "$log")"
  flags=(-detect_leaks=1 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1
         -artifact_prefix="$artifacts/")
  if [ $ci -eq 1 ]; then
    # Each committed seed once: a regression check, not a search.
    args=("${flags[@]}" -runs=0 "$seeds")
  else
    args=("${flags[@]}" -max_total_time="$seconds" -runs="$runs" "$work" "$seeds")
  fi
  t0=$(date +%s)
  rc=0
  nice -n 10 "$build/fuzz/$t" "${args[@]}" >"$log" 2>&1 || rc=$?
  elapsed=$(( $(date +%s) - t0 ))
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  n=${n:-0}
  total=$(( total + n ))
  if [ $rc -eq 0 ]; then
    result=ok
  else
    what=$(grep -m1 -oE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer): [a-z-]+[^ ]*|runtime error: .*|: (deadly signal|timeout)|[a-z_]+_fuzz: .*' "$log" || true)
    result="FAILED (exit $rc) ${what:-see $log}; input in $artifacts/, log in $log"
    failed+=("$t")
  fi
  printf '%-18s %12s %8s  %s\n' "$t" "$n" "$elapsed" "$result"
done
echo "fuzz: $total inputs over ${#targets[@]} targets, ${#failed[@]} failed${failed:+: ${failed[*]}}"
[ ${#failed[@]} -eq 0 ]
