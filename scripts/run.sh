#!/usr/bin/env bash
# The main job: a local reducer pool (R reduction-server processes) and W worker processes on
# loopback, all-reducing buffers of 4 KiB .. 64 MiB, checking every result, and printing an
# nccl-tests-style table (time, algbw, busbw, #wrong) beside raw loopback TCP measured in the
# same run. Installs what is missing and builds first, so it works on a fresh machine.
#   scripts/run.sh                      4 reducers, 4 workers, fp32 sum
#   scripts/run.sh -d bf16 -o avg       any allreduce_perf option is passed through
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release >/dev/null
exec build/release/bench/allreduce_perf --local-pool "${RS_RUN_REDUCERS:-4}" \
  --workers "${RS_RUN_WORKERS:-4}" -b 4K -e 64M -f 4 -n 10 -w 2 "$@"
