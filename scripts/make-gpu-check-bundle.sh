#!/usr/bin/env bash
# Makes the GPU check's bundle: all that scripts/gpu-check.sh needs on a GPU machine with
# PyTorch but no build tools and no package registry, in one folder and one .tar.gz of it:
#   bin/reduction-server       a wrapper starting the daemon through the bundle's own loader
#   libexec/reduction-server   the Debian 12 daemon (the release build's, stripped)
#   lib/                       its whole ldd closure: gRPC, protobuf, Abseil, OpenSSL,
#                              libstdc++ ... and glibc's libc.so.6 and ld-linux-x86-64.so.2, so
#                              it runs on any x86-64 Linux, whatever its own glibc
#   bin/plugin_harness, plugin/libnccl-net-reduction-server.so
#                              the portable build (scripts/build-portable-plugin.sh: glibc >= 2.31)
#   scripts/, tests/           the check's own scripts and Python, copied from this tree
#   MANIFEST                   versions, commit, and the sha256 of every other file
# The tarball is reproducible (sorted, fixed times and owners) for given inputs.
#   scripts/make-gpu-check-bundle.sh [--out DIR] [--server FILE] [--portable DIR]
#     --out DIR       default build/gpu-check (and DIR.tar.gz)
#     --server FILE   default build/release/server/reduction-server (scripts/build.sh release)
#     --portable DIR  default build/portable/out (scripts/build-portable-plugin.sh)
# Builds nothing. On the GPU machine: tar xzf gpu-check.tar.gz && gpu-check/scripts/gpu-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=${BUILD_ROOT:-build}
out=$root/gpu-check server=$root/release/server/reduction-server portable=$root/portable/out
while (($#)); do
  case "$1" in
    --out) out=${2%/}; shift 2 ;;
    --server) server=$2; shift 2 ;;
    --portable) portable=$2; shift 2 ;;
    *) echo "make-gpu-check-bundle: unknown argument $1" >&2; exit 2 ;;
  esac
done
for f in "$server" "$portable/libnccl-net-reduction-server.so" "$portable/plugin_harness"; do
  [[ -f $f ]] || { echo "make-gpu-check-bundle: missing $f (scripts/build.sh release; scripts/build-portable-plugin.sh)" >&2; exit 2; }
done
# The check's own files, at the same paths as in this tree (the scripts find each other so).
sources=(scripts/gpu-check.sh scripts/gpu-e2e.sh scripts/ddp-e2e.sh scripts/lib/gpu_inputs.sh
         scripts/lib/local_reducers.sh tests/nccl_plugin/run_harness.sh
         tests/gpu/torch_env.py tests/gpu/nccl_allreduce_e2e.py tests/gpu/ddp_train.py)

rm -rf "$out" "$out.tar.gz"
mkdir -p "$out"/{bin,libexec,lib,plugin}
strip -o "$out/libexec/reduction-server" "$server"
# The closure as this machine's loader resolves it: "name => path (address)" lines, and the
# loader itself as an absolute path. Each is copied under the name the binary asks for.
ldd "$server" | while read -r name arrow path _; do
  if [[ $arrow == "=>" && $path == /* ]]; then cp -L "$path" "$out/lib/$name"
  elif [[ $name == /*/ld-linux-x86-64.so.2 ]]; then cp -L "$name" "$out/lib/ld-linux-x86-64.so.2"
  elif [[ $name != linux-vdso.so.* ]]; then
    echo "make-gpu-check-bundle: cannot place '$name $arrow $path' from ldd" >&2; exit 1
  fi
done
[[ -f $out/lib/ld-linux-x86-64.so.2 && -f $out/lib/libc.so.6 ]] \
  || { echo "make-gpu-check-bundle: ldd named no loader or libc" >&2; exit 1; }
cat >"$out/bin/reduction-server" <<'EOF'
#!/bin/sh
# The Debian 12 reduction-server with its own shared libraries, glibc and loader (lib/): it
# needs nothing from this machine but the kernel. --library-path replaces LD_LIBRARY_PATH, and
# LD_PRELOAD is dropped, so that nothing of the host's is mixed in.
here=$(cd "$(dirname "$0")/.." && pwd)
unset LD_PRELOAD
exec "$here/lib/ld-linux-x86-64.so.2" --library-path "$here/lib" --argv0 "$0" \
  "$here/libexec/reduction-server" "$@"
EOF
chmod 755 "$out/bin/reduction-server"
cp "$portable/plugin_harness" "$out/bin/"
cp "$portable/libnccl-net-reduction-server.so" "$out/plugin/"
for f in "${sources[@]}"; do install -D "$f" "$out/$f"; done

# MANIFEST: what and from where, then every file's sha256 (sha256sum --check reads those lines).
so=$out/plugin/libnccl-net-reduction-server.so
glibc_needed=$(objdump -T "$so" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -n 1)
mapfile -t tables < <(nm -D --defined-only "$so" | awk '$3 ~ /^ncclCollNetPlugin_v|^ncclNetPlugin_v/ {print $3}' | sort -V)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[[ -z $(git status --porcelain 2>/dev/null) ]] || commit="$commit, with uncommitted changes"
{
  echo "rs-gpu-check bundle"
  echo "run: tar xzf gpu-check.tar.gz && gpu-check/scripts/gpu-check.sh  (README.md, \"On a GPU machine\")"
  echo "commit: $commit ($(git log -1 --format=%cd --date=iso-strict 2>/dev/null || echo "no git"))"
  echo "reducer: $("$out/bin/reduction-server" --version), built on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "reducer's glibc (bundled): $("$out/lib/ld-linux-x86-64.so.2" --version | head -n 1)"
  echo "plugin: libnccl-net-reduction-server.so, needs glibc >= $glibc_needed; exports ${tables[*]}" \
    "(NCCL 2.20 or later)"
  echo "files:"
  (cd "$out" && find . -type f ! -name MANIFEST | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum)
} >"$out/MANIFEST"

# The tarball: one folder named as the bundle's, reproducible from the same inputs.
epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tar -C "$(dirname "$out")" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
  -cf - "$(basename "$out")" | gzip -n -9 >"$out.tar.gz"
echo "make-gpu-check-bundle: $out ($(du -sh "$out" | cut -f1), $(find "$out" -type f | wc -l) files);" \
  "$out.tar.gz ($(du -h "$out.tar.gz" | cut -f1))"
echo "make-gpu-check-bundle: on the GPU machine: tar xzf $(basename "$out").tar.gz && $(basename "$out")/scripts/gpu-check.sh"
