#!/usr/bin/env bash
# The test suites under sanitizers (docs/fuzzing.md#sanitizers), each in a build folder of its own:
#   asan  build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer at exit);
#         the unit and integration tests (every ctest entry)
#   tsan  build-tsan: ThreadSanitizer; the actor unit tests (unit_actors)
#   all   both, asan first
# Exits 1 when a test fails or a sanitizer reports (a report fails its test).
#
#   scripts/sanitize.sh [asan|tsan|all] [--jobs N] [TARGET...]
#
#   TARGET  test executables to build and run instead of the default ones, e.g. unit_messages
#           unit_actors integration_tests (their ctest entries run: unit.<folder>.*, integration.*)
#
# gcc is used (the project's compiler; libasan, libubsan and libtsan come with it). Third-party
# noise that was verified to be inside the library is suppressed by scripts/sanitizers/*.supp.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

mode=asan
jobs=2
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    asan|tsan|all) mode=$1; shift ;;
    --jobs) jobs=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "sanitize.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
supp=$root/scripts/sanitizers
# Reports fail the test that made them; stacks are symbolized (llvm-symbolizer, from clang-14).
symbolizer=$(command -v llvm-symbolizer-14 || command -v llvm-symbolizer || true)
export ASAN_OPTIONS="detect_leaks=1:${symbolizer:+external_symbolizer_path=$symbolizer:}${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0:${LSAN_OPTIONS:-}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp:${UBSAN_OPTIONS:-}"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp:${TSAN_OPTIONS:-}"

# ctest's regex for test executables: unit_actors -> ^unit\.actors\., integration_tests -> ^integration\.
regex_for() {
  local parts=() t
  for t in "$@"; do
    case "$t" in
      unit_*) parts+=("unit\\.${t#unit_}\\.") ;;
      integration_tests) parts+=("integration\\.") ;;
      *) echo "sanitize.sh: $t is not a test executable (unit_FOLDER or integration_tests)" >&2; exit 2 ;;
    esac
  done
  local IFS='|'
  echo "^(${parts[*]})"
}

# run_suite NAME BUILD_DIR SANITIZERS TARGET...
run_suite() {
  local name=$1 build=$2 sanitizers=$3
  shift 3
  local t0 t1 t2
  t0=$(date +%s)
  nice -n 10 cmake -S . -B "$build" -G Ninja -DCDUI_SANITIZE="$sanitizers" >/dev/null
  nice -n 10 cmake --build "$build" -j "$jobs" --target "$@"
  t1=$(date +%s)
  echo "sanitize: $name: built $* in $(( t1 - t0 )) s"
  local status=0
  nice -n 10 ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "$(regex_for "$@")" || status=$?
  t2=$(date +%s)
  echo "sanitize: $name: tests took $(( t2 - t1 )) s ($([ $status -eq 0 ] && echo clean || echo FAILED))"
  return $status
}

failed=0
if [ "$mode" = asan ] || [ "$mode" = all ]; then
  asan_targets=("${targets[@]}")
  if [ ${#asan_targets[@]} -eq 0 ]; then
    asan_targets=(unit_messages unit_devices unit_storage unit_runtime unit_actors integration_tests)
    [ -d unit/apps ] && asan_targets+=(unit_apps)
  fi
  run_suite "asan+ubsan" build-asan "address,undefined" "${asan_targets[@]}" || failed=1
fi
if [ "$mode" = tsan ] || [ "$mode" = all ]; then
  tsan_targets=("${targets[@]}")
  [ ${#tsan_targets[@]} -eq 0 ] && tsan_targets=(unit_actors)
  run_suite "tsan" build-tsan "thread" "${tsan_targets[@]}" || failed=1
fi
exit $failed
