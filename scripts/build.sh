#!/usr/bin/env bash
# Configures and builds one build tree with Ninja.
#   scripts/build.sh [release|package|asan|tsan|fuzz] [extra cmake args...]
# Trees live in build/<kind>/ (BUILD_ROOT overrides build/).
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-release}
shift || true
root=${BUILD_ROOT:-build}
dir="$root/$kind"
jobs=${RS_JOBS:-$(nproc)}

args=(-G Ninja -S . -B "$dir" -DRS_WERROR=ON)
targets=()  # empty: everything
# Sanitizer and fuzz trees build only what their test runs use (see scripts/test.sh).
# The release and fuzz trees keep line tables only (-g1): backtraces, perf and gdb's stepping
# work, variables do not; full -g cost 25-35% more compile time (shard.cc 9.7 s of CPU against
# 7.3 s) for debug information that the stripped packages never ship. Pass
# -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -DNDEBUG" for a tree with it.
line_tables=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
case "$kind" in
  release) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${line_tables[@]}") ;;
  # The release build of what the Debian packages hold, without tests and benchmarks (the
  # reducer image's builder stage; scripts/package.sh --reducer-only package).
  package) args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_BUILD_TESTS=OFF -DRS_BUILD_BENCH=OFF) ;;
  # -O1 and line tables only: the sanitizers' own advice for speed, with asserts kept (Debug);
  # -O0 ran the ASan tests about twice as long, and full debug info slows every compile.
  # Libraries in unity batches (RS_UNITY_BUILD): these trees are built whole, once per run.
  # Clang: it compiles our sanitized code in about two thirds of GCC's CPU time (the ASan
  # tree's targets alone: about 550 s of CPU against 834 s; rs_server's first unity batch 40 s
  # against 54 s), and that compile is CI's critical path. The release tree and the packages
  # stay on GCC, Debian's compiler; the fuzz tree was already Clang's (libFuzzer).
  asan)
    args+=(-DCMAKE_BUILD_TYPE=Debug -DRS_SANITIZE=address -DRS_BUILD_BENCH=OFF -DRS_UNITY_BUILD=ON
           "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1"
           -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
    targets=(rs_unit_tests rs_dataplane_tests plugin_harness nccl_net_reduction_server reduction-server) ;;
  tsan)
    args+=(-DCMAKE_BUILD_TYPE=Debug -DRS_SANITIZE=thread -DRS_BUILD_BENCH=OFF -DRS_UNITY_BUILD=ON
           "-DCMAKE_CXX_FLAGS_DEBUG=-O1 -g1" "-DCMAKE_C_FLAGS_DEBUG=-O1 -g1"
           -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
    targets=(rs_dataplane_tests) ;;
  fuzz)
    args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "${line_tables[@]}" -DRS_BUILD_FUZZ=ON -DRS_BUILD_BENCH=OFF
           -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++)
    targets=(rs_fuzzers) ;;
  *) echo "build.sh: unknown build kind '$kind' (release, package, asan, tsan, fuzz)" >&2; exit 2 ;;
esac

mkdir -p "$root"
cmake "${args[@]}" "$@" >"$dir.configure.log" 2>&1 || { cat "$dir.configure.log"; exit 1; }
if ((${#targets[@]})); then
  cmake --build "$dir" -j "$jobs" --target "${targets[@]}"
else
  cmake --build "$dir" -j "$jobs"
fi
