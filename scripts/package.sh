#!/usr/bin/env bash
# Builds what the project ships, into build/packages/ (BUILD_ROOT overrides build/), emptied of
# older packages first:
#   reduction-server_<version>-1_amd64.deb              the daemon and rs-sizer, from a Debian 12
#                                                       tree (CPack; Depends from dpkg-shlibdeps)
#   libnccl-net-reduction-server_<version>-1_amd64.deb  the portable NCCL plugin: Depends only on
#                                                       libc6 (>= 2.31)
#   libnccl-net-reduction-server-<version>-linux-x86_64.tar.gz (+ .sha256)
#                                                       the same plugin with a README, the licence,
#                                                       third-party notices and SHA256SUMS
# The plugin comes from scripts/build-portable-plugin.sh and is checked by
# tests/portable/check_plugin_deps.sh before it is packaged.
#   scripts/package.sh [--reducer-only] [release|package] [extra cmake args for the tree...]
# --reducer-only: the daemon's package alone (the reducer image's builder stage).
set -euo pipefail
cd "$(dirname "$0")/.."

reducer_only=0
[[ ${1:-} == --reducer-only ]] && { reducer_only=1; shift; }
kind=${1:-release}
shift || true
root=${BUILD_ROOT:-build}
out="$root/packages"
mkdir -p "$out"
rm -f "$out"/*.deb "$out"/*.tar.gz "$out"/*.sha256

# cpack_into <tree>: CPack installs each component into a staging tree, strips it and builds it.
cpack_into() {
  cpack --config "$1/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 \
    || { cat "$out/cpack.log"; exit 1; }
  rm -rf "$out/_CPack_Packages"
}

scripts/build.sh "$kind" "$@"
cpack_into "$root/$kind"
if ((!reducer_only)); then
  scripts/build-portable-plugin.sh
  cpack_into "$root/portable/tree"
  # The release tarball: the stripped plugin and what a user needs beside it. Reproducible:
  # fixed order, owner and times (the commit's), no gzip time stamp.
  version=$(sed -n 's/^project(reduction_server VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
  name=libnccl-net-reduction-server-$version-linux-x86_64
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir "$stage/$name"
  cp "$root/portable/out/libnccl-net-reduction-server.so" "$root/portable/out/THIRD-PARTY-NOTICES" \
     LICENSE "$stage/$name/"
  cp client/nccl_plugin/RELEASE-README.md "$stage/$name/README.md"
  (cd "$stage/$name" && sha256sum libnccl-net-reduction-server.so >SHA256SUMS)
  epoch=$(git log -1 --format=%ct 2>/dev/null || echo 0)
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner -C "$stage" -cf - "$name" \
    | gzip -9n >"$out/$name.tar.gz"
  (cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
fi

shopt -s nullglob
debs=("$out"/*.deb)
want=$((reducer_only ? 1 : 2))
((${#debs[@]} == want)) || { echo "package.sh: expected $want packages in $out, found ${#debs[@]}" >&2; exit 1; }
for f in "${debs[@]}" "$out"/*.tar.gz; do
  if [[ $f == *.deb ]]; then
    printf '%s (%s): Depends %s\n' "$f" "$(du -h "$f" | cut -f1)" "$(dpkg-deb -f "$f" Depends)"
  else
    printf '%s (%s): %s\n' "$f" "$(du -h "$f" | cut -f1)" "$(tar -tzf "$f" | paste -sd' ' -)"
  fi
done
