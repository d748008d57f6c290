#!/usr/bin/env bash
# System calls of one reducer and two workers on loopback, counted by `strace -c -f` (counts,
# not times: the same whatever else the machine does), to compare two builds' I/O paths.
#   bench/count_syscalls.sh BUILD_DIR OUT_DIR [size, default 8M] [iterations, default 40]
# Writes OUT_DIR/{reducer,worker0,worker1}.strace and the workers' allreduce_perf output.
set -euo pipefail
build=$1 out=$2 size=${3:-8M} iters=${4:-40}
rm -rf "$out" && mkdir -p "$out"
strace -c -f -o "$out/reducer.strace" "$build/server/reduction-server" --data-listen 127.0.0.1:0 \
  --grpc-listen 127.0.0.1:0 --port-file "$out/r0.port" --stats-interval 0 --io-threads 1 \
  >"$out/reducer.log" 2>&1 &
tracer=$!
trap 'pkill -TERM -P "$tracer" 2>/dev/null || true' EXIT
for _ in $(seq 600); do [[ -s $out/r0.port ]] && break; sleep 0.1; done
[[ -s $out/r0.port ]] || { cat "$out/reducer.log"; exit 1; }
read -r port _ <"$out/r0.port"
group=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
workers=()
for rank in 0 1; do
  strace -c -f -o "$out/worker$rank.strace" "$build/bench/allreduce_perf" \
    --reducers "127.0.0.1:$port" --world 2 --rank "$rank" --group "$group" -b "$size" -e "$size" \
    -n "$iters" -w 2 -d fp32 -o sum --streams 2 >"$out/worker$rank.log" 2>&1 &
  workers+=($!)
done
wait "${workers[@]}"
pkill -TERM -P "$tracer"  # the reducer, so that strace writes its counts
wait "$tracer" || true
trap - EXIT
for f in reducer worker0 worker1; do
  echo "== $f"; grep -E ' (sendmsg|recvfrom|epoll_wait|epoll_ctl|sendto|write|read)$' "$out/$f.strace"
done
