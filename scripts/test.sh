#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test: the release build's unit and
# multi-process tests, the container tests (scripts/container-tests.sh: the images, the portable
# plugin in Debian 11, 12 and 13 containers, the GPU check's bundle), the sanitizer builds of the
# data-plane tests, and the fuzzers for a bounded time. This is the README's test command and
# what .ci/run calls.
#   scripts/test.sh          everything
#   scripts/test.sh --quick  the release build's tests only
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
root=${BUILD_ROOT:-build}
mkdir -p "$root"

scripts/install-deps.sh

# Work started in the background, each in a process group of its own (setsid) so that an early
# exit stops it and what it started: the container tests' Debian images, made while the release
# tree builds (mmdebstrap mostly waits on the mirror); the container tests, beside the release
# tests; and the sanitizer and fuzz trees, each compiled while the tests before it run. Each is
# waited for before its result is used (the container tests last).
declare -A background=()
start_background() {  # <name> <command...>: output in $root/<name>.log
  local name=$1; shift
  setsid "$@" >"$root/$name.log" 2>&1 &
  background[$name]=$!
}
wait_background() {  # <name>: its status; its log is printed if it failed
  local name=$1
  if ! wait "${background[$name]}"; then
    cat "$root/$name.log"
    echo "test.sh: $name failed" >&2
    exit 1
  fi
  unset "background[$name]"
}
stop_background() {
  local pid
  for pid in "${background[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
((quick == 0)) && start_background prefetch-images tests/portable/prefetch_images.sh

phase() { echo "=== $* [$SECONDS s] ==="; }

run_ctest() {  # <kind> [ctest args...]
  local kind=$1; shift
  phase "ctest: $kind"
  ctest --test-dir "$root/$kind" --output-on-failure --timeout 600 -j "${RS_TEST_JOBS:-2}" "$@"
}

# The full run builds the release tree in unity batches, as the sanitizer trees are: built
# whole once per run (a CI run is bound by CPU, bench/RESULTS.md "CI time"). In clean-clone CI
# runs its build phase took 341-373 s of wall, against 474-517 s per-file (different runs: the
# machine's variance between runs is of that order too). --quick keeps per-file units, for
# edit-and-rerun (switching rebuilds the tree once).
if ((quick)); then
  scripts/build.sh release -DRS_UNITY_BUILD=OFF
else
  scripts/build.sh release -DRS_UNITY_BUILD=ON
fi
if ((quick == 0)); then
  # From here three chains share the CPUs, each mostly waiting where another computes: the
  # release tests; the container tests (scripts/container-tests.sh: podman, mmdebstrap and the
  # portable plugin's build); and the sanitizer trees, compiled while the tests before them run.
  wait_background prefetch-images
  tail -n 1 "$root/prefetch-images.log"
  start_background build-asan scripts/build.sh asan
  start_background containers scripts/container-tests.sh
fi
if ((quick)); then
  run_ctest release
else
  # What the sanitizer trees run below is not run here a first time: the data-plane suites
  # (label dataplane: ASan and TSan both run them) and the plugin harness's two TCP runs (ASan,
  # label plugin). The release tree runs the rest: the units, the data-plane suite over the
  # fabric (label fabricpath, optimized code on the same paths), the harness over the fabric,
  # and every multi-process, fault and integration test. CPU time is what bounds CI's run.
  run_ctest release -LE '^dataplane$' -E '^nccl_plugin_harness_(threads|caller)$'
fi

if ((quick == 0)); then
  # Sanitizers: halt on the first report so a finding fails the test that caused it.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
  # LSan: only libfabric's own allocations are suppressed (tests/lsan.supp says why).
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}
  phase "waiting for the ASan tree"
  wait_background build-asan
  start_background build-tsan scripts/build.sh tsan
  # Three jobs in the sanitizer trees' runs: at two they left 17-25% of the CPU idle (their
  # cases wait on peers and timers); measured with two busy loops beside, ASan's run took 232 s
  # at three against 328 s at two in CI, TSan's 216 s against 246 s.
  RS_TEST_JOBS=${RS_TEST_JOBS:-3} run_ctest asan -L 'unit|dataplane|plugin'
  phase "waiting for the TSan tree"
  wait_background build-tsan
  start_background build-fuzz scripts/build.sh fuzz
  RS_TEST_JOBS=${RS_TEST_JOBS:-3} run_ctest tsan -L 'dataplane'
  phase "waiting for the fuzz tree"
  wait_background build-fuzz
  # The fuzzers run for a set time each: all three at once, so that no core idles while the
  # third runs alone (their time is set for that: tests/fuzz/CMakeLists.txt).
  RS_TEST_JOBS=${RS_TEST_JOBS:-3} run_ctest fuzz -L fuzz
  phase "waiting for the container tests"
  wait_background containers
  cat "$root/containers.log"
fi
echo "test.sh: all suites passed in $SECONDS s"
