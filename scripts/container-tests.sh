#!/usr/bin/env bash
# The container tests, from the release tree: the reducer image and the worker layer with
# podman (scripts/image-test.sh, which packages the portable plugin too), then the portable
# plugin's checks (tests/portable/: its dependencies, no clash inside a process, Debian 11, 12
# and 13 containers, the GPU check's bundle). scripts/test.sh runs this beside the release tests.
# Needs root, the release tree (scripts/build.sh release) and the Debian images
# (tests/portable/prefetch_images.sh; made here if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
root=${BUILD_ROOT:-build}
phase() { echo "=== container tests: $* [$SECONDS s] ==="; }

# The reducer image and the worker layer, from the release tree's packages, used with podman:
# reducers, host and containerized workers, health check, uid, drain (docker/README.md).
phase images
scripts/image-test.sh
# The portable plugin, as scripts/package.sh (run by image-test.sh) built and packaged it.
phase "portable plugin"
portable=$root/portable/out/libnccl-net-reduction-server.so
tests/portable/check_plugin_deps_test.sh "$portable" \
  "$root/release/client/nccl_plugin/libnccl-net-reduction-server.so"
tests/portable/no_clash_test.sh "$portable" "$root/release/tests/nccl_plugin/plugin_harness" \
  "$root/release/server/reduction-server" "$root/release/client/nccl_plugin/libnccl-net-reduction-server.so"
tests/portable/distro_test.sh "$root/portable/out" "$root/release/server/reduction-server" \
  "$root"/packages/libnccl-net-reduction-server_*.deb
# The one-shot GPU check's bundle (scripts/gpu-check.sh) in a Debian 11 container with no GPU,
# network or python: its refusal, and --cpu-standin (the plumbing only, never a GPU result).
tests/portable/gpu_check_test.sh "$root/portable/out" "$root/release/server/reduction-server"
phase "passed"
