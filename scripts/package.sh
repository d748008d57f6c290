#!/usr/bin/env bash
# Builds the Debian packages from a build tree (CPack, cmake/RsPackaging.cmake):
#   reduction-server_<version>-1_<arch>.deb              the daemon and rs-sizer
#   libnccl-net-reduction-server_<version>-1_<arch>.deb  the NCCL plugin
#   scripts/package.sh [release|package] [extra cmake args...]
# (default release; the tree is built first, incrementally)
# Output: build/packages/ (BUILD_ROOT overrides build/), emptied of older packages first.
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:-release}
shift || true
root=${BUILD_ROOT:-build}
out="$root/packages"

scripts/build.sh "$kind" "$@"
mkdir -p "$out"
rm -f "$out"/*.deb
# CPack installs each component into a staging tree, strips it and runs dpkg-shlibdeps.
cpack --config "$root/$kind/CPackConfig.cmake" -B "$out" >"$out/cpack.log" 2>&1 \
  || { cat "$out/cpack.log"; exit 1; }
rm -rf "$out/_CPack_Packages"
shopt -s nullglob
debs=("$out"/*.deb)
((${#debs[@]} == 2)) || { echo "package.sh: expected 2 packages in $out, found ${#debs[@]}" >&2; exit 1; }
for deb in "${debs[@]}"; do
  printf '%s (%s): %s\n' "$deb" "$(du -h "$deb" | cut -f1)" \
    "$(dpkg-deb -f "$deb" Depends)"
done
