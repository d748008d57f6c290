#!/usr/bin/env bash
# The emulated multi-host cluster (bench/cluster/), small: 2 workers + 2 reducers in network
# namespaces on 200 Mbit/s links, all-reduce through the reducers across namespaces (8 KiB to
# 1 MiB) and one Gloo ring run, every result checked; then that nothing of the cluster is left,
# after a normal run and after a run stopped with SIGTERM half-way.
#   cluster_smoke_test.sh <allreduce_perf> <reduction-server> [gloo_allreduce]
# Skips (exit 0, "skipped: ...") without root or network namespaces.
set -euo pipefail
perf=$1 server=$2 gloo=${3:-}
bench=$(cd "$(dirname "$0")/../../bench/cluster" && pwd)
# shellcheck source=bench/cluster/cluster.sh
source "$bench/cluster.sh"

[[ $(id -u) -eq 0 ]] || { echo "skipped: needs root for network namespaces and tc"; exit 0; }
why=$(cluster_supported) || { echo "skipped: $why"; exit 0; }

# Our own prefix: rsc<this pid> is alive while we run, so a concurrent --cleanup keeps it.
prefix=rsc$$
out=$(mktemp -d)
trap 'cluster_destroy "$prefix"; rm -rf "$out"' EXIT
export RS_CLUSTER_PREFIX=$prefix
peers="" peer_args=()
if [[ -n $gloo && -x $gloo ]]; then peers=gloo_ring peer_args=(--gloo-bin "$gloo"); else
  echo "note: gloo_allreduce not built; running ours only"; fi

left() { cluster_namespaces "$prefix"; }

# 1. A normal run.
start=$SECONDS
code=0
"$bench/run.sh" -W 2 -R 2 --rate 200mbit -b 8K -e 1M -f 2 -n 3 -w 1 --peers "$peers" \
  --link-seconds 1 --budget 400 --step-timeout 300 --out "$out/run" \
  --server-bin "$server" --perf-bin "$perf" "${peer_args[@]}" >"$out/run.txt" 2>&1 || code=$?
if ((code != 0)); then echo "FAILED: run.sh exited $code"; cat "$out/run.txt"; exit 1; fi
for impl in ours $peers; do
  rows=$(awk -F'\t' -v i="$impl" '$1 == i { n++ } END { print n + 0 }' "$out/run/rows.tsv")
  wrong=$(awk -F'\t' -v i="$impl" '$1 == i && $6 != 0 { n++ } END { print n + 0 }' "$out/run/rows.tsv")
  ((rows == 8)) || { echo "FAILED: $impl: $rows rows, want 8 (8 KiB..1 MiB)"; cat "$out/run.txt"; exit 1; }
  ((wrong == 0)) || { echo "FAILED: $impl: $wrong sizes with #wrong > 0"; cat "$out/run.txt"; exit 1; }
  echo "ok: $impl: 8 sizes across namespaces, #wrong 0"
done
grep -q '^| 1 MiB | [0-9]' "$out/run/report.md" || { echo "FAILED: no 1 MiB row in report.md"; exit 1; }
[[ -z $(left) ]] || { echo "FAILED: namespaces left after a normal run: $(left)"; exit 1; }
echo "ok: report written, no namespace left ($((SECONDS - start)) s)"

# 2. SIGTERM while the workers run: the trap must still remove everything.
"$bench/run.sh" -W 2 -R 2 --rate 200mbit -b 1M -e 64M -f 2 -n 20 -w 1 --peers "" \
  --link-seconds 1 --budget 120 --out "$out/term" --server-bin "$server" --perf-bin "$perf" \
  >"$out/term.txt" 2>&1 &
runner=$!
for ((t = 0; t < 1200; t++)); do [[ -s $out/term/ours.log ]] && break; sleep 0.1; done
if [[ ! -s $out/term/ours.log ]]; then
  echo "FAILED: interrupted run never started its workers"; cat "$out/term.txt"
  tail -n 20 "$out"/term/reducer*.log 2>/dev/null || true
  exit 1
fi
kill -TERM "$runner"
code=0
wait "$runner" || code=$?
((code != 0)) || { echo "FAILED: a terminated run exited 0"; exit 1; }
[[ -z $(left) ]] || { echo "FAILED: namespaces left after SIGTERM: $(left)"; cat "$out/term.txt"; exit 1; }
grep -q terminated "$out/term.txt" || { echo "FAILED: no 'terminated' in the run's log"; cat "$out/term.txt"; exit 1; }
echo "ok: SIGTERM mid-run (exit $code) left no namespace ($((SECONDS - start)) s in all)"
