#!/usr/bin/env bash
# Turns one cluster run's rows.tsv (and mpstat.log) into results.csv and a markdown report on
# stdout: per size, each implementation's time, busbw and CPU use, ours against the fastest
# peer of the same run, the ideal ratio and the link-rate bound.
#   report.sh OUT W R RATE_BITS "LINK_AB_MBPS LINK_BA_MBPS" CLK_TCK NCPU "FAILED..." [HOST_NAPI]
# rows.tsv columns: impl size time_us algbw busbw wrong t0_us t1_us busy_ticks total_ticks
#                   reducer_ticks reducer_rx_bytes reducer_host_rx_thread_ticks (see stamp_rows
#                   in run.sh). HOST_NAPI: inline or threaded (cluster.sh CLUSTER_HOST_NAPI).
set -euo pipefail
out=$1 W=$2 R=$3 rate_bits=$4 link=$5 clk=$6 ncpu=$7 failed=${8:-} host_napi=${9:-inline}

echo "# Reduction server vs ring all-reduce: $W workers, $R reducers, $((rate_bits / 1000000)) Mbit/s links"
echo
sed 's/^/- /' "$out/setup.txt"
[[ -n $failed ]] && echo "- **failed:** $failed"
echo

mpstat=$out/mpstat.log
[[ -f $mpstat ]] || mpstat=/dev/null
awk -v W="$W" -v R="$R" -v rate_bits="$rate_bits" -v link="$link" -v clk="$clk" -v ncpu="$ncpu" \
    -v csv="$out/results.csv" -v mfile="$mpstat" -v threaded="$([[ $host_napi == threaded ]] && echo 1 || echo 0)" '
function hsize(b) {
  if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
  if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
  return b " B"
}
function f(x, d) { return sprintf("%." d "f", x) }
# mpstat.log: "<epoch us> HH:MM:SS all %usr ... %idle"; each sample covers the second before it.
FILENAME == mfile {
  if ($3 == "all" && $NF ~ /^[0-9.]+$/) { ns++; mt[ns] = $1; mb[ns] = 100 - $NF }
  next
}
{
  impl = $1; size = $2 + 0
  if (!(impl in seen)) { seen[impl] = 1; order[++nimpl] = impl }
  if (!(size in sizeSeen)) { sizeSeen[size] = 1; sizes[++nsize] = size }
  k = impl SUBSEP size
  time_[k] = $3; alg[k] = $4; bus[k] = $5; wrong[k] = $6
  win[k] = ($8 - $7) / 1e6
  cpu[k] = $10 > 0 ? 100 * $9 / $10 : 0
  peak[k] = -1
  for (i = 1; i <= ns; i++)
    if (mt[i] - 1e6 >= $7 - 2e5 && mt[i] <= $8 + 2e5 && mb[i] > peak[k]) peak[k] = mb[i]
  rcpu[k] = $11 / clk; rrx[k] = $12; rkcpu[k] = $13 / clk
}
END {
  # Sizes in ascending order (insertion sort: a handful of rows).
  for (i = 2; i <= nsize; i++) { v = sizes[i]; j = i - 1
    while (j >= 1 && sizes[j] > v) { sizes[j + 1] = sizes[j]; j-- } sizes[j + 1] = v }
  nominal = rate_bits / 8 / 1e9                       # GB/s
  split(link, lm, " "); measured = 0
  if (lm[1] ~ /^[0-9.]+$/ && lm[2] ~ /^[0-9.]+$/) measured = (lm[1] < lm[2] ? lm[1] : lm[2]) / 8 / 1000
  B = measured > 0 ? measured : nominal
  ideal = 2 * (W - 1) / W / (W > R ? W / R : 1)
  npeer = 0
  for (i = 1; i <= nimpl; i++) if (order[i] != "ours") peers[++npeer] = order[i]

  printf "Ideal ours/ring time ratio: 2(W-1)/W / max(1, W·B_worker / (R·B_reducer)) = %s " \
         "(every link has the same rate, so the pool matches the workers when R >= W). ", f(ideal, 2)
  printf "Link bound: each worker sends and receives S, so ours has algbw <= B = %s GB/s " \
         "(%s; nominal %s GB/s); a ring has algbw <= B·W/(2(W-1)) = %s GB/s.\n\n",
         f(B, 3), (measured > 0 ? "iperf3, slower direction" : "nominal"), f(nominal, 3),
         f(B * W / (2 * (W - 1)), 3)

  print "## Time per all-reduce (us; lower is better)\n"
  printf "| size | ours |"; for (p = 1; p <= npeer; p++) printf " %s |", peers[p]
  print " best peer | speedup t_best/t_ours | ideal | ours algbw / B |"
  printf "|---:|---:|"; for (p = 1; p <= npeer; p++) printf "---:|"; print "---|---:|---:|---:|"
  for (s = 1; s <= nsize; s++) {
    z = sizes[s]; printf "| %s | %s |", hsize(z), cell("ours", z)
    best = ""; bt = 0
    for (p = 1; p <= npeer; p++) {
      k = peers[p] SUBSEP z; printf " %s |", cell(peers[p], z)
      if ((k in time_) && wrong[k] == 0 && (best == "" || time_[k] < bt)) { best = peers[p]; bt = time_[k] }
    }
    k = "ours" SUBSEP z
    sp = (best != "" && (k in time_) && wrong[k] == 0) ? f(bt / time_[k], 2) : "-"
    # From size and time, not the printed algbw: at 25 Mbit/s that has one significant digit.
    lb = (k in time_) && time_[k] > 0 ? f(z / (time_[k] * 1e3) / B, 2) : "-"
    printf " %s | %s | %s | %s |\n", (best == "" ? "-" : best), sp, f(ideal, 2), lb
  }

  print "\n## Bus bandwidth (GB/s; algbw·2(W-1)/W, as nccl-tests)\n"
  printf "| size |"; for (i = 1; i <= nimpl; i++) printf " %s |", order[i]; print ""
  printf "|---:|"; for (i = 1; i <= nimpl; i++) printf "---:|"; print ""
  for (s = 1; s <= nsize; s++) {
    z = sizes[s]; printf "| %s |", hsize(z)
    for (i = 1; i <= nimpl; i++) { k = order[i] SUBSEP z; printf " %s |", ((k in bus) ? bus[k] : "-") }
    print ""
  }

  printf "\n## Machine CPU busy, %% of all %d cores (average over the size'"'"'s window / peak 1 s mpstat sample)\n\n", ncpu
  print "Machine-wide (/proc/stat, mpstat): anything else running counts too; see the load averages above. Open MPI ranks poll while they wait, so its columns read busy whatever the work.\n"
  printf "| size |"; for (i = 1; i <= nimpl; i++) printf " %s |", order[i]; print ""
  printf "|---:|"; for (i = 1; i <= nimpl; i++) printf "---:|"; print ""
  for (s = 1; s <= nsize; s++) {
    z = sizes[s]; printf "| %s |", hsize(z)
    for (i = 1; i <= nimpl; i++) {
      k = order[i] SUBSEP z
      printf " %s |", ((k in cpu) ? f(cpu[k], 0) " / " (peak[k] >= 0 ? f(peak[k], 0) : "-") : "-")
    }
    print ""
  }

  if (threaded) {
    print "\n## Reducer hosts during our run (user+sys CPU of the reduction-server processes, and of the receive threads of their hosts: the packet receive work of each host runs in a NAPI thread of its own, --host-napi threaded; bytes received on their links, TCP/IP headers included)\n"
    print "| size | window (s) | reducer CPU (s) | host receive threads (s) | received (MB) | received (Gbit/s) | vCPU per 10 Gbit/s, process | vCPU per 10 Gbit/s, process + host receive |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|"
  } else {
    print "\n## Reducers during our run (user+sys CPU of the reduction-server processes, which leaves out softirq work the kernel does outside them; bytes received on their links, TCP/IP headers included)\n"
    print "| size | window (s) | reducer CPU (s) | received (MB) | received (Gbit/s) | vCPU per 10 Gbit/s |"
    print "|---:|---:|---:|---:|---:|---:|"
  }
  tc = 0; tk = 0; tr = 0; tw = 0
  for (s = 1; s <= nsize; s++) {
    k = "ours" SUBSEP sizes[s]; if (!(k in rcpu)) continue
    tc += rcpu[k]; tk += rkcpu[k]; tr += rrx[k]; tw += win[k]
    reducerRow(hsize(sizes[s]), win[k], rcpu[k], rkcpu[k], rrx[k])
  }
  if (tw > 0) reducerRow("all", tw, tc, tk, tr)

  bad = 0
  for (k in wrong) if (wrong[k] != 0) { split(k, kk, SUBSEP); printf "\n**#wrong %s at %s for %s**", wrong[k], hsize(kk[2]), kk[1]; bad++ }
  if (bad) print ""
  print "\nEach window runs from the previous row (or the table header) to this row: warm-up, timed iterations and the check of that size. Raw outputs: <impl>.log, rows.tsv, mpstat.log; all numbers: results.csv."

  print "impl,size,time_us,algbw,busbw,wrong,window_s,cpu_busy_avg_pct,cpu_busy_peak_pct,reducer_cpu_s,reducer_rx_bytes,reducer_vcpu_per_10gbps,reducer_host_rx_thread_cpu_s" > csv
  for (i = 1; i <= nimpl; i++) for (s = 1; s <= nsize; s++) {
    k = order[i] SUBSEP sizes[s]; if (!(k in time_)) continue
    printf "%s,%d,%s,%s,%s,%s,%.3f,%.1f,%s,%.3f,%d,%s,%s\n", order[i], sizes[s], time_[k], alg[k], bus[k],
           wrong[k], win[k], cpu[k], (peak[k] >= 0 ? f(peak[k], 1) : ""), rcpu[k], rrx[k],
           ((order[i] == "ours" && rrx[k] > 0) ? f(rcpu[k] * 1e10 / (rrx[k] * 8), 3) : ""),
           (threaded && order[i] == "ours" ? f(rkcpu[k], 3) : "") > csv
  }
}
function vcpu(cpu, rx) { return rx > 0 ? f(cpu * 1e10 / (rx * 8), 2) : "-" }
function reducerRow(label, w, c, kc, rx) {
  printf "| %s | %s | %s |", label, f(w, 2), f(c, 2)
  if (threaded) printf " %s |", f(kc, 2)
  printf " %s | %s | %s |", f(rx / 1e6, 1), (w > 0 ? f(rx * 8 / w / 1e9, 3) : "-"), vcpu(c, rx)
  if (threaded) printf " %s |", vcpu(c + kc, rx)
  print ""
}
function cell(impl, z,   k) {
  k = impl SUBSEP z
  if (!(k in time_)) return "-"
  return f(time_[k], 0) (wrong[k] != 0 ? " (wrong!)" : "")
}
' FS=" " "$mpstat" FS='\t' "$out/rows.tsv"

# Where each implementation's packets were dropped over its whole sweep (warm-ups included):
# "in" is the switch port's queue into a host, where an incast overflows, "out" the host's own.
if [[ -s $out/loss.tsv ]]; then
  echo
  echo "## Packets the links dropped, and TCP segments resent, over each implementation's whole sweep"
  echo
  echo "| impl | worker out | worker in | reducer out | reducer in | TCP resent | kernel backlog (whole machine) |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  awk -F'\t' '{ printf "| %s | %d | %d | %d | %d | %d | %s |\n", $1, $2, $3, $4, $5, $6, ($7 == "" ? "-" : $7) }' "$out/loss.tsv"
fi

# The floors, when the run had them (run.sh --peers ...,pingpong,relay): below the tables above,
# which they leave as they were.
[[ -s $out/pingpong.log || -s $out/gather.log || -s $out/floors.tsv ]] || exit 0
pp=$out/pingpong.log ga=$out/gather.log fl=$out/floors.tsv
[[ -f $pp ]] || pp=/dev/null
[[ -f $ga ]] || ga=/dev/null
[[ -f $fl ]] || fl=/dev/null
awk -v clk="$clk" -v pp="$pp" -v ga="$ga" -v fl="$fl" '
function hsize(b) {
  if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
  if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
  return b " B"
}
function f(x, d) { return sprintf("%." d "f", x) }
function vcpu(cpu, rx) { return rx > 0 ? cpu * 1e10 / (rx * 8) : 0 }
function addSize(z) { if (!(z in seen)) { seen[z] = 1; sizes[++n] = z } }
FILENAME == pp { if ($1 ~ /^[0-9]+$/) { med[$1] = $3; p99[$1] = $4; mean[$1] = $5; addSize($1 + 0) } next }
FILENAME == ga { if ($1 ~ /^[0-9]+$/) { gmed[$1] = $3; gp99[$1] = $4; gmean[$1] = $5; addSize($1 + 0) } next }
FILENAME == fl { if ($1 == "relay") { lc[$2] = $11 / clk; lrx[$2] = $12; lk[$2] = $13 / clk; addSize($2 + 0) } next }
$1 == "ours" { ot[$2] = $3; oc[$2] = $11 / clk; orx[$2] = $12; ok[$2] = $13 / clk }
END {
  for (i = 2; i <= n; i++) { v = sizes[i]; j = i - 1
    while (j >= 1 && sizes[j] > v) { sizes[j + 1] = sizes[j]; j-- } sizes[j + 1] = v }
  np = 0; for (z in med) np++
  if (np) {
    print "\n## Latency floor: ours against a TCP ping-pong of the same size (w0 <-> r0, same links, socket options and run)\n"
    print "The ping-pong sends S bytes, the server reads all of them, then sends S back (tcp_pingpong). Ours is the mean time of an all-reduce (the table above); the issue targets ours / floor <= 1.3 at 8-64 KiB. A floor for small sizes: from a few chunks up ours pipelines, which a whole-message round trip cannot.\n"
    print "| size | ours (us) | ping-pong median (us) | p99 (us) | mean (us) | ours / median | ours / mean |"
    print "|---:|---:|---:|---:|---:|---:|---:|"
    for (s = 1; s <= n; s++) { z = sizes[s]; if (!(z in med)) continue
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", hsize(z), ((z in ot) ? f(ot[z], 0) : "-"), f(med[z], 0),
             f(p99[z], 0), f(mean[z], 0), ((z in ot) && med[z] > 0 ? f(ot[z] / med[z], 2) : "-"),
             ((z in ot) && mean[z] > 0 ? f(ot[z] / mean[z], 2) : "-") }
  }
  ng = 0; for (z in gmed) ng++
  if (ng) {
    print "\n## Gather floor: ours against our all-reduce'"'"'s messages without the reduction (same links and run)\n"
    print "Every worker cuts S into the client'"'"'s chunks and sends chunk k to reducer host k mod R, where a tcp_pingpong server sends each worker its own copy back once all W have sent theirs (tcp_pingpong --members W; times of worker 0). The one-client ping-pong above over this is what W members'"'"' messages cost on these links and this machine; ours over this is what the reducer adds.\n"
    print "| size | ours (us) | gather median (us) | p99 (us) | mean (us) | ours / gather mean | gather mean / ping-pong median |"
    print "|---:|---:|---:|---:|---:|---:|---:|"
    for (s = 1; s <= n; s++) { z = sizes[s]; if (!(z in gmed)) continue
      printf "| %s | %s | %s | %s | %s | %s | %s |\n", hsize(z), ((z in ot) ? f(ot[z], 0) : "-"), f(gmed[z], 0),
             f(gp99[z], 0), f(gmean[z], 0), ((z in ot) && gmean[z] > 0 ? f(ot[z] / gmean[z], 2) : "-"),
             ((z in med) && med[z] > 0 ? f(gmean[z] / med[z], 2) : "-") }
  }
  nl = 0; for (z in lc) nl++
  if (nl) {
    print "\n## CPU floor: the reducers against a relay moving the same bytes (tcp_relay on the reducer hosts, same streams, same run)\n"
    print "User+sys CPU of the reduction-server processes during our run, and of the relay processes during the relay run; received bytes on the reducer hosts'"'"' links (headers included; as many go out). vCPU per 10 Gbit/s: per 10 Gbit/s received, with as much sent. The issue targets reducer / relay <= 1.2.\n"
    print "| size | reducer CPU (s) | received (MB) | vCPU per 10 Gbit/s, reducer | relay CPU (s) | received (MB) | vCPU per 10 Gbit/s, relay | reducer / relay |"
    print "|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (s = 1; s <= n; s++) { z = sizes[s]; if (!(z in lc) || !(z in oc)) continue
      a = vcpu(oc[z], orx[z]); b = vcpu(lc[z], lrx[z])
      printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", hsize(z), f(oc[z], 2), f(orx[z] / 1e6, 1), f(a, 2),
             f(lc[z], 2), f(lrx[z] / 1e6, 1), f(b, 2), (b > 0 ? f(a / b, 2) : "-")
      tc += oc[z]; tr += orx[z]; tlc += lc[z]; tlr += lrx[z] }
    if (tr > 0 && tlr > 0) {
      a = vcpu(tc, tr); b = vcpu(tlc, tlr)
      printf "| all | %s | %s | %s | %s | %s | %s | %s |\n", f(tc, 2), f(tr / 1e6, 1), f(a, 2), f(tlc, 2),
             f(tlr / 1e6, 1), f(b, 2), (b > 0 ? f(a / b, 2) : "-")
    }
    # --host-napi threaded: the packet receive work of each host, what the interrupts of a NIC cost
    # it, is counted too; the figure a CPU-bound sizing needs (rs-sizer --vcpu-per-10gbps).
    tk = 0; for (z in ok) tk += ok[z] + lk[z]
    if (tk > 0) {
      print "\nThe same with the reducer hosts'"'"' receive threads counted (--host-napi threaded): process + host receive.\n"
      print "| size | reducer + receive (s) | vCPU per 10 Gbit/s, reducer | relay + receive (s) | vCPU per 10 Gbit/s, relay | reducer / relay |"
      print "|---:|---:|---:|---:|---:|---:|"
      for (s = 1; s <= n; s++) { z = sizes[s]; if (!(z in lc) || !(z in oc)) continue
        a = vcpu(oc[z] + ok[z], orx[z]); b = vcpu(lc[z] + lk[z], lrx[z])
        printf "| %s | %s | %s | %s | %s | %s |\n", hsize(z), f(oc[z] + ok[z], 2), f(a, 2),
               f(lc[z] + lk[z], 2), f(b, 2), (b > 0 ? f(a / b, 2) : "-") }
    }
  }
}' "$pp" "$ga" "$fl" FS='\t' "$out/rows.tsv"
