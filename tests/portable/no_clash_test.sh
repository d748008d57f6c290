#!/usr/bin/env bash
# The portable plugin inside a process that already holds other versions of what it links
# inside, as a training process does (PyTorch and TensorFlow bring their own fmt, protobuf,
# crypto and C++ runtime): the Debian 12 build of the harness (on Debian 12's shared libstdc++)
# with Debian 12's shared libfmt, libspdlog, libhwy, libcrypto, libnettle and libprotobuf
# preloaded (LD_PRELOAD: loaded before everything, in the global scope). Two such nodes all-reduce through
# the portable plugin against real reducers (CollNet checked exactly), under LD_DEBUG=bindings;
# then every binding is read back:
#   - the plugin's references bind only to glibc (libc, libm, libpthread, libdl, the loader);
#   - nothing else binds to the plugin but the harness's dlsym of NCCL's tables.
# And the control: the same check on the Debian 12 plugin must find it binding to those copies.
#   no_clash_test.sh <portable .so> <Debian 12 plugin_harness> <reduction-server> <Debian 12 .so>
set -euo pipefail
plugin=$(readlink -f "$1") harness=$2 server=$3 debian_plugin=$(readlink -f "$4")
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "no_clash_test: FAILED: $*" >&2; exit 1; }

preload=()
for lib in libfmt.so.9 libspdlog.so.1.10 libhwy.so.1 libcrypto.so.3 libnettle.so.8 libprotobuf.so.32; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !n++ { print $NF }')
  [[ -n $path ]] || fail "$lib is not installed here (scripts/install-deps.sh)"
  preload+=("$path")
done
# The process's own copies: what the Debian 12 harness needs, plus the preloads.
held=$(LD_PRELOAD="${preload[*]}" ldd "$harness" | awk '{print $1}' | grep -E 'lib(stdc\+\+|fmt|spdlog|hwy|crypto|nettle|protobuf)' | xargs -n1 basename | sort -u | paste -sd' ' -)
for lib in libstdc++.so.6 libfmt.so.9 libspdlog.so.1.10 libhwy.so.1 libcrypto.so.3 libnettle.so.8; do
  [[ " $held " == *" $lib "* ]] || fail "the host process does not hold $lib (holds: $held)"
done
echo "no_clash_test: the process holds $held"

# shellcheck source=scripts/lib/local_reducers.sh
source scripts/lib/local_reducers.sh
printf '%s\n' "$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')" >"$tmp/secret"
start_local_reducers "$server" 1 "$tmp" --io-threads 1 --log-level warn --secret-file "$tmp/secret"

# two_nodes <label> <plugin>: a CollNet run of two nodes, each with its bindings in <label>.<pid>.
# Each type and each op once (collnet-adapter): every conversion and code path the plugin binds
# through, without the whole matrix's bytes.
two_nodes() {
  local label=$1 so=$2 rank procs=() failed=0
  mkdir -p "$tmp/$label"
  for rank in 0 1; do
    env LD_PRELOAD="${preload[*]}" LD_DEBUG=bindings LD_DEBUG_OUTPUT="$tmp/$label/bindings" \
      RS_REDUCERS="$reducers" RS_SECRET_FILE="$tmp/secret" NCCL_RS_IFNAME=lo RS_STREAMS=2 \
      RS_CONNECT_TIMEOUT_MS=10000 NCCL_RS_RENDEZVOUS_TIMEOUT_MS=60000 \
      timeout 300 "$harness" --plugin "$so" --version 11 --mode collnet-adapter --rank "$rank" --world 2 \
      --dir "$tmp/$label" >"$tmp/$label/rank$rank.log" 2>&1 &
    procs+=($!)
  done
  for rank in 0 1; do
    wait "${procs[$rank]}" || { failed=1; tail -n 20 "$tmp/$label/rank$rank.log"; }
  done
  ((failed == 0)) || fail "$label: the harness failed"
}

# foreign <label> <plugin>: prints the bindings that cross the plugin's border wrongly:
# "binding file A [0] to B [0]: normal symbol `s' [V]", with the plugin as A or as B. A glibc
# symbol (version GLIBC_*) may bind to the executable: a data object such as stderr lives there
# when the executable copy-relocated it.
foreign() {
  local label=$1 so=$2
  cat "$tmp/$label"/bindings.* | awk -v so="$so" '
    /binding file / {
      from = $4; to = $7; sym = $NF
      for (i = 1; i <= NF; i++) if ($i == "symbol") { sym = $(i + 1) }
      glibc_lib = to ~ /\/(libc|libm|libpthread|libdl|librt)\.so\.[0-9]+$|\/ld-linux-x86-64\.so\.2$/
      if (from == so && to != so && !glibc_lib && $NF !~ /^\[GLIBC_[0-9.]+\]$/)
        print "the plugin binds " sym " " $NF " to " to
      if (to == so && from != so && sym !~ /^`nccl(Coll)?NetPlugin_v(8|9|10|11)'"'"'$/)
        print from " binds " sym " to the plugin"
    }' | sort | uniq -c | sort -rn
}

two_nodes portable "$plugin"
bad=$(foreign portable "$plugin")
[[ -z $bad ]] || fail "the portable plugin's symbols crossed into the process's libraries:
$bad"
inside=$(cat "$tmp/portable"/bindings.* | grep -c "binding file $plugin " || true)
((inside > 0)) || fail "no binding of the plugin was seen (LD_DEBUG did not record it)"
echo "no_clash_test: portable plugin: CollNet on 2 nodes exact; its $inside bindings are all to glibc's symbols, none of the process's copies bind to it"

# The control: Debian 12's own plugin, in the same process, binds to the process's copies.
two_nodes debian "$debian_plugin"
control=$(foreign debian "$debian_plugin")
grep -qE "to .*/lib(fmt|spdlog|stdc\+\+)\.so" <<<"$control" \
  || fail "the check saw nothing wrong with the Debian 12 plugin, which uses the shared copies"
echo "no_clash_test: control: the Debian 12 plugin binds to the shared copies, as the check must see:"
grep -oE "to .*/lib[a-z+]+\.so[.0-9]*" <<<"$control" | sort | uniq -c | sort -rn | awk 'NR <= 5'
echo "no_clash_test: passed"
