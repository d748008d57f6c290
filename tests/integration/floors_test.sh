#!/usr/bin/env bash
# The benchmark floors as processes on loopback: tcp_pingpong's one-client round trip and its
# gather floor (two servers, two members at once, S cut into the client's chunks), and
# tcp_relay paced and unpaced; each must print a row for every size, and every server and relay
# started must be stopped.
#   floors_test.sh <tcp_pingpong> <tcp_relay>
set -euo pipefail
pingpong=$1 relay=$2
out=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$out"' EXIT

# name program args...: starts a server, waits for its port file, sets $port. Not called in a
# command substitution: that subshell's pids+=() would be lost, and the trap would stop nothing.
serve() {
  local name=$1; shift
  "$@" --port-file "$out/$name.port" >"$out/$name.log" 2>&1 &
  pids+=($!)
  for ((t = 0; t < 300; t++)); do [[ -s $out/$name.port ]] && break; sleep 0.05; done
  [[ -s $out/$name.port ]] || { echo "FAILED: $name did not start"; cat "$out/$name.log"; exit 1; }
  port=$(cut -d' ' -f1 "$out/$name.port")
}
rows() { grep -cE '^ +[0-9]+ ' "$1" || true; }  # the printed sizes

# 1. The one-client round trip, 8 KiB to 64 KiB: 4 sizes.
serve pp "$pingpong" --listen 127.0.0.1:0; p=$port
timeout 60 "$pingpong" --connect "127.0.0.1:$p" -b 8K -e 64K -n 5 -w 1 >"$out/pp-client.log"
[[ $(rows "$out/pp-client.log") == 4 ]] || { echo "FAILED: ping-pong rows"; cat "$out/pp-client.log"; exit 1; }
echo "ok: ping-pong, 4 sizes"

# 2. The gather floor: 2 servers with 2 members each, 2 clients at once, 8 KiB to 256 KiB (one
# chunk up to 32 KiB, then several over both servers): every client gets every echo.
serve g0 "$pingpong" --listen 127.0.0.1:0 --members 2; a=$port
serve g1 "$pingpong" --listen 127.0.0.1:0 --members 2; b=$port
for i in 0 1; do
  timeout 60 "$pingpong" --connect "127.0.0.1:$a,127.0.0.1:$b" --chunks -b 8K -e 256K -n 5 -w 1 \
    >"$out/gather$i.log" 2>&1 &
  clients[i]=$!
done
for i in 0 1; do
  wait "${clients[i]}" || { echo "FAILED: gather client $i"; cat "$out/gather$i.log"; exit 1; }
  [[ $(rows "$out/gather$i.log") == 6 ]] || { echo "FAILED: gather rows"; cat "$out/gather$i.log"; exit 1; }
done
grep -q 'gather floor' "$out/gather0.log" || { echo "FAILED: no gather header"; exit 1; }
# A lone member against a 2-member server is never answered: the client must not report a row.
serve g2 "$pingpong" --listen 127.0.0.1:0 --members 2; c=$port
code=0
timeout 3 "$pingpong" --connect "127.0.0.1:$c" --chunks -b 8K -e 8K -n 2 -w 0 >"$out/lone.log" 2>&1 || code=$?
if ((code == 0)) || [[ $(rows "$out/lone.log") != 0 ]]; then
  echo "FAILED: a lone member got a row"; exit 1
fi
echo "ok: gather floor, 2 members x 2 servers, 6 sizes; a lone member waits"

# 3. The relay, unpaced and paced as ours (--link-gbps on both ends): 2 drivers, 64 KiB to 1 MiB.
for pace in 0 1; do
  serve relay$pace "$relay" --listen 127.0.0.1:0 --link-gbps "$pace"; r=$port
  for i in 0 1; do
    timeout 60 "$relay" --relays "127.0.0.1:$r" --streams 2 --world 2 --rank "$i" --link-gbps "$pace" \
      -b 64K -e 1M -f 4 -n 3 -w 1 >"$out/relay$pace.$i.log" 2>&1 &
    drivers[i]=$!
  done
  for i in 0 1; do wait "${drivers[i]}" || { echo "FAILED: relay driver $i (pace $pace)"; cat "$out/relay$pace.$i.log"; exit 1; }; done
  [[ $(rows "$out/relay$pace.0.log") == 3 ]] || { echo "FAILED: relay rows"; cat "$out/relay$pace.0.log"; exit 1; }
  echo "ok: relay, --link-gbps $pace, 3 sizes"
done

# Every server started was recorded, and each stops when told (what the trap relies on).
((${#pids[@]} == 6)) || { echo "FAILED: ${#pids[@]} servers recorded, 6 started"; exit 1; }
kill "${pids[@]}"
for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
for pid in "${pids[@]}"; do
  ! kill -0 "$pid" 2>/dev/null || { echo "FAILED: server $pid still running"; exit 1; }
done
pids=()
echo "ok: the 6 servers stopped"
