#!/usr/bin/env bash
# The main job: a local reducer pool (R reduction-server processes) and W worker processes on
# loopback, all-reducing buffers of 4 KiB .. 64 MiB, checking every result, and printing an
# nccl-tests-style table (time, algbw, busbw, #wrong) beside raw loopback TCP measured in the
# same run. Installs what is missing and builds first, so it works on a fresh machine. The pool
# runs as we tell users to run theirs: with a job secret, drawn fresh for this run and handed
# to reducers and workers in a file (RS_SECRET_FILE).
#   scripts/run.sh                      4 reducers, 4 workers, fp32 sum
#   scripts/run.sh -d bf16 -o avg       any allreduce_perf option is passed through
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

# The first build takes about 7 minutes on 2 cores (later ones seconds): say so, and show how
# far it is, a line per tenth of the way.
log=$(mktemp)
secret_dir=$(mktemp -d)
trap 'rm -rf "$log" "$secret_dir"' EXIT
if [[ ! -x build/release/bench/allreduce_perf ]]; then
  echo "run.sh: building the release tree (about 7 minutes on 2 cores the first time)"
fi
progress() {
  local line shown=0 tenth
  while IFS= read -r line; do
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    ((BASH_REMATCH[2] > 20)) || continue
    tenth=$((10 * BASH_REMATCH[1] / BASH_REMATCH[2]))
    if ((tenth > shown)); then
      shown=$tenth
      echo "run.sh: build $((10 * tenth))% (${BASH_REMATCH[1]} of ${BASH_REMATCH[2]} steps)"
    fi
  done
}
if ! scripts/build.sh release 2>&1 | tee "$log" | progress; then
  tail -n 40 "$log"
  echo "run.sh: the build failed (its output above)" >&2
  exit 1
fi

umask 077
od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$secret_dir/job-secret"
export RS_SECRET_FILE=$secret_dir/job-secret
build/release/bench/allreduce_perf --local-pool "${RS_RUN_REDUCERS:-4}" \
  --workers "${RS_RUN_WORKERS:-4}" -b 4K -e 64M -f 4 -n 10 -w 2 "$@"
