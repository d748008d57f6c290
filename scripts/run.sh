#!/usr/bin/env bash
# The main job. Step 1: the SIMD kernel benchmark beside a memory-bandwidth probe.
# Installs what is missing and builds first, so it works on a fresh machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release >/dev/null
exec build/release/bench/kernel_bench "$@"
