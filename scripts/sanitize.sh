#!/usr/bin/env bash
# The test suites under sanitizers (docs/fuzzing.md#sanitizers), each in a build folder of its own:
#   asan  build-asan: AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer at exit);
#         the unit and integration tests (every ctest entry)
#   tsan  build-tsan: ThreadSanitizer; the actor unit tests (unit_actors), against a libcaf_core
#         built with -fsanitize=thread from Debian's source of the installed CAF (build-tsan/caf-build;
#         needs a deb-src line for apt-get source, made once): with Debian's uninstrumented
#         libcaf_core, TSan cannot see CAF's synchronization and reports thousands of false races
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
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
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

# Builds libcaf_core with ThreadSanitizer from the source of the CAF that is installed (same version,
# same headers, the same defaults as Debian's build_config.hpp), once, into build-tsan/caf-build.
tsan_caf() {
  local lib=build-tsan/caf-build/lib version upstream
  version=$(dpkg-query -W -f='${source:Version}' libcaf-core0.17)
  upstream=${version%%-*}
  if [ -e "$lib/libcaf_core.so.$upstream" ]; then
    echo "$root/$lib"
    return
  fi
  mkdir -p build-tsan/caf-src
  if [ ! -d "build-tsan/caf-src/actor-framework-$upstream" ]; then
    if ! (cd build-tsan/caf-src && apt-get source -q --tar-only "actor-framework=$version" >&2); then
      echo "sanitize.sh: cannot fetch CAF's source (apt-get source actor-framework=$version). It needs a" \
           "deb-src line, e.g. /etc/apt/sources.list.d/debian-src.sources with 'Types: deb-src'," \
           "'URIs: http://deb.debian.org/debian', 'Suites: bookworm', 'Components: main', then" \
           "apt-get update" >&2
      return 1
    fi
    tar xzf "build-tsan/caf-src/actor-framework_$upstream.orig.tar.gz" -C build-tsan/caf-src
  fi
  nice -n 10 cmake -S "build-tsan/caf-src/actor-framework-$upstream" -B build-tsan/caf-build -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_OPENCL=yes \
    -DCAF_NO_PYTHON=yes -DCAF_NO_TOOLS=yes -DCAF_NO_IO=yes -DCAF_NO_SUMMARY=yes >&2
  nice -n 10 ninja -C build-tsan/caf-build -j "$jobs" libcaf_core_shared >&2
  echo "$root/$lib"
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
  local status=0 regex
  regex=$(regex_for "$@")
  if [[ " $* " == *" unit_runtime "* ]] && [ "$sanitizers" != thread ]; then
    # The runtime's tests load checkpoints through libtorch, whose one known leak (lsan.supp) is
    # recognised only from the whole allocation stack: libtorch has no frame pointers, so these
    # tests unwind slowly (fast_unwind_on_malloc=0; about 10x the time, which the integration
    # tests, worker_test most, would need too many minutes for).
    ASAN_OPTIONS="fast_unwind_on_malloc=0:$ASAN_OPTIONS" nice -n 10 ctest --test-dir "$build" \
      --output-on-failure -j "$jobs" -R '^unit\.runtime\.' || status=$?
    nice -n 10 ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "$regex" \
      -E '^unit\.runtime\.' || status=$?
  else
    nice -n 10 ctest --test-dir "$build" --output-on-failure -j "$jobs" -R "$regex" || status=$?
  fi
  t2=$(date +%s)
  echo "sanitize: $name: tests took $(( t2 - t1 )) s ($([ $status -eq 0 ] && echo clean || echo FAILED))"
  return $status
}

failed=0
if [ "$mode" = asan ] || [ "$mode" = all ]; then
  asan_targets=("${targets[@]}")
  if [ ${#asan_targets[@]} -eq 0 ]; then
    asan_targets=(unit_messages unit_devices unit_storage unit_runtime unit_policy unit_actors
                  integration_tests)
    [ -d unit/apps ] && asan_targets+=(unit_apps)
  fi
  run_suite "asan+ubsan" build-asan "address,undefined" "${asan_targets[@]}" || failed=1
fi
if [ "$mode" = tsan ] || [ "$mode" = all ]; then
  tsan_targets=("${targets[@]}")
  [ ${#tsan_targets[@]} -eq 0 ] && tsan_targets=(unit_actors)
  t0=$(date +%s)
  caf_lib=$(tsan_caf) || exit 2
  echo "sanitize: tsan: libcaf_core with ThreadSanitizer in $caf_lib ($(( $(date +%s) - t0 )) s)"
  # The tests load it instead of Debian's (same soname); they are linked against Debian's.
  export LD_LIBRARY_PATH="$caf_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  run_suite "tsan" build-tsan "thread" "${tsan_targets[@]}" || failed=1
fi
exit $failed
