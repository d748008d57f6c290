#!/usr/bin/env bash
# Checks that a build of libnccl-net-reduction-server.so loads on any x86-64 image with glibc
# 2.31 or later: what it needs from the dynamic loader, read from the ELF file itself.
#   - NEEDED: only glibc's own libraries (libc, libm, libpthread, libdl, librt, the loader),
#     and libstdc++ / libgcc_s where --allow-libstdcxx says the C++ runtime may stay dynamic;
#   - symbol versions it references: GLIBC_* at most 2.31; GLIBCXX_* at most 3.4.28, CXXABI_* at
#     most 1.3.12 and GCC_* at most 10.0 (GCC 10's runtime, Debian 11's) where allowed;
#   - what it exports: NCCL's versioned tables and nothing else, so that no library linked
#     inside can bind to (or be bound by) a copy the training process already holds.
# Prints every violation, each naming the library, version or symbol, and exits 1 if any.
#   check_plugin_deps.sh [--allow-libstdcxx] <libnccl-net-reduction-server.so>
set -euo pipefail

allow_cxx=0
[[ ${1:-} == --allow-libstdcxx ]] && { allow_cxx=1; shift; }
so=${1:?usage: check_plugin_deps.sh [--allow-libstdcxx] <plugin.so>}
[[ -f $so ]] || { echo "check_plugin_deps: no such file: $so" >&2; exit 2; }
for tool in readelf sort; do
  command -v "$tool" >/dev/null || { echo "check_plugin_deps: $tool not found" >&2; exit 2; }
done

allowed_libs=(libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 ld-linux-x86-64.so.2)
((allow_cxx)) && allowed_libs+=(libstdc++.so.6 libgcc_s.so.1)
# The highest version of each versioned namespace a reference may name.
declare -A ceiling=([GLIBC]=2.31)
((allow_cxx)) && ceiling+=([GLIBCXX]=3.4.28 [CXXABI]=1.3.12 [GCC]=10.0)
exports=(ncclNetPlugin_v8 ncclNetPlugin_v9 ncclNetPlugin_v10 ncclNetPlugin_v11
         ncclCollNetPlugin_v8 ncclCollNetPlugin_v9 ncclCollNetPlugin_v10 ncclCollNetPlugin_v11)

violations=0
violation() { echo "check_plugin_deps: $so: $*"; violations=$((violations + 1)); }
# version_le A B: A <= B in version order.
version_le() { [[ $(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1) == "$1" ]]; }

readelf -h "$so" | grep -q 'Machine:.*X86-64' || violation "not an x86-64 ELF file"

while read -r lib; do
  [[ " ${allowed_libs[*]} " == *" $lib "* ]] ||
    violation "NEEDED $lib: not among the allowed (${allowed_libs[*]})"
done < <(readelf -d -W "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')

# The version-needs section: "File: libc.so.6 ..." then "Name: GLIBC_2.14 ..." per version.
file=""
while read -r line; do
  if [[ $line =~ File:\ ([^ ]+) ]]; then file=${BASH_REMATCH[1]}; continue; fi
  [[ $line =~ Name:\ ([A-Z_]+)_([0-9][0-9.]*) ]] || continue
  space=${BASH_REMATCH[1]} version=${BASH_REMATCH[2]}
  if [[ -z ${ceiling[$space]:-} ]]; then
    violation "needs ${space}_$version from $file: no version of $space is allowed"
  elif ! version_le "$version" "${ceiling[$space]}"; then
    symbols=$(readelf --dyn-syms -W "$so" | awk -v v="@${space}_$version" \
      '$0 ~ v { sub(/@.*/, "", $8); print $8 }' | sort -u | awk 'NR <= 5' | paste -sd, -)
    violation "needs ${space}_$version from $file (at most ${space}_${ceiling[$space]}): ${symbols:-?}"
  fi
done < <(readelf -V -W "$so" | sed -n '/Version needs section/,$p')

# Defined, exported symbols (the dynamic symbol table's entries with a section index).
while read -r sym; do
  [[ " ${exports[*]} " == *" $sym "* ]] || violation "exports $sym: only NCCL's tables may be exported"
done < <(readelf --dyn-syms -W "$so" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") { sub(/@.*/, "", $8); print $8 }')
for sym in "${exports[@]}"; do
  readelf --dyn-syms -W "$so" | awk '$7 != "UND" { sub(/@.*/, "", $8); print $8 }' | grep -x "$sym" >/dev/null ||
    violation "does not export $sym"
done

if ((violations)); then
  echo "check_plugin_deps: $so: $violations violation(s)"
  exit 1
fi
highest=$(readelf -V -W "$so" | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -1)
echo "check_plugin_deps: $so: ok (NEEDED: $(readelf -d -W "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ' -); highest $highest)"
