#!/usr/bin/env bash
# Builds the portable NCCL plugin: libnccl-net-reduction-server.so needing nothing but glibc 2.31
# or later (Debian 11, Ubuntu 20.04 and everything newer), and plugin_harness, its test driver,
# on the same terms. docker/README.md ("The portable plugin") says why each choice:
#   - a Debian 11 sysroot made with mmdebstrap (glibc 2.31, GCC 10's libstdc++, libnettle.a,
#     libfabric 1.11's headers: the plugin loads libfabric at run time where the image has it);
#   - Debian 12's own fmt, spdlog and Highway source packages (the versions the main build
#     uses), built here as static, position-independent, hidden archives;
#   - clang from this machine compiling against the sysroot, libstdc++ and libgcc linked in
#     statically, every library symbol hidden (-Wl,--exclude-libs,ALL and exports.map).
# Output in build/portable/out/ (BUILD_ROOT overrides build/). The sysroot, sources and static
# libraries are kept and reused while their inputs do not change; a first run takes about 3
# minutes on 2 cores, a rebuild after a source change about one.
#   scripts/build-portable-plugin.sh [extra cmake args for the plugin's tree...]
# Needs root (mmdebstrap), clang, cmake, ninja, apt with Debian 12's archive reachable
# (scripts/install-deps.sh installs the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
root=${BUILD_ROOT:-build}
mkdir -p "$root/portable"
dir=$(cd "$root/portable" && pwd)
jobs=${RS_JOBS:-$(nproc)}
toolchain=$src/cmake/toolchains/portable-x86_64-linux.cmake
start=$SECONDS
say() { echo "build-portable-plugin: [$((SECONDS - start)) s] $*"; }
# quietly <log> <command...>: the output goes to a log, shown if the command fails.
quietly() {
  local log=$1; shift
  "$@" >"$log" 2>&1 || { tail -n 40 "$log"; echo "build-portable-plugin: FAILED: $*" >&2; exit 1; }
}
key_of() { printf '%s\n' "$@" | sha256sum | cut -c1-16; }

# --- 1. the Debian 11 sysroot -------------------------------------------------------------------
# Only what compiling and linking need (extract: no maintainer scripts run, no chroot).
sysroot_pkgs=libc6-dev,libstdc++-10-dev,nettle-dev,libfabric-dev
mirrors=("deb http://deb.debian.org/debian bullseye main"
         "deb http://deb.debian.org/debian-security bullseye-security main")
key=$(key_of "$(mmdebstrap --version)" "$sysroot_pkgs" "${mirrors[@]}")
sysroot=$dir/sysroot
if [[ $(cat "$sysroot/.rs-key" 2>/dev/null) != "$key" ]]; then
  say "making the Debian 11 sysroot with mmdebstrap (about 10 s)"
  rm -rf "$sysroot" "$sysroot.partial"
  quietly "$dir/mmdebstrap.log" mmdebstrap --variant=extract --include="$sysroot_pkgs" \
    --aptopt='Acquire::Retries "5"' bullseye "$sysroot.partial" "${mirrors[@]}"
  # The loader and a few libraries are absolute links (/lib64/ld-linux-x86-64.so.2 ->
  # /lib/...), which would point into this machine's own root: make them relative.
  while IFS= read -r link; do
    target=$(readlink "$link")
    ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$sysroot.partial$target")" "$link"
  done < <(find "$sysroot.partial" -type l -lname '/*')
  echo "$key" >"$sysroot.partial/.rs-key"
  mv "$sysroot.partial" "$sysroot"
fi
say "sysroot: $(gzip -dc "$sysroot"/usr/share/doc/libc6/changelog.Debian.gz | head -1 | cut -d' ' -f1-2) at $sysroot"

# --- 2. Debian 12's sources of the compiled libraries -------------------------------------------
# The same versions as the Debian 12 build's -dev packages on this machine, through apt (so
# signed and checked), with Debian's patches applied by dpkg-source.
declare -A dev_of=([fmtlib]=libfmt-dev [spdlog]=libspdlog-dev [highway]=libhwy-dev)
apt_dir=$dir/apt
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$dir/src"
echo "deb-src http://deb.debian.org/debian bookworm main" >"$apt_dir/sources.list"
echo "deb-src http://deb.debian.org/debian-security bookworm-security main" >>"$apt_dir/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o Acquire::Retries=5)
versions=()
declare -A tree_of
for pkg in fmtlib spdlog highway; do
  version=$(dpkg-query -W -f='${source:Version}' "${dev_of[$pkg]}" 2>/dev/null) \
    || { echo "build-portable-plugin: ${dev_of[$pkg]} is not installed (scripts/install-deps.sh)" >&2; exit 2; }
  versions+=("$pkg=$version")
  upstream=${version#*:}; upstream=${upstream%-*}
  tree_of[$pkg]=$dir/src/$pkg-$upstream
  if [[ ! -f ${tree_of[$pkg]}/.rs-complete ]]; then
    if [[ ! -s $apt_dir/lists/.updated ]]; then
      say "reading Debian 12's source index"
      quietly "$dir/apt.log" apt-get "${apt_opts[@]}" update
      date >"$apt_dir/lists/.updated"
    fi
    say "fetching $pkg $version (Debian 12's source package)"
    rm -rf "${tree_of[$pkg]}"
    (cd "$dir/src" && quietly "$dir/apt.log" apt-get "${apt_opts[@]}" source "$pkg=$version")
    touch "${tree_of[$pkg]}/.rs-complete"
  fi
done

# --- 3. static, hidden fmt, spdlog and Highway in a prefix ---------------------------------------
deps=$dir/deps
key=$(key_of "${versions[@]}" "$(cat "$sysroot/.rs-key")" "$(sha256sum "$toolchain" "$0")" \
             "$(clang --version | head -1)")
if [[ $(cat "$deps/.rs-key" 2>/dev/null) != "$key" ]]; then
  rm -rf "$deps" "$dir/deps-build"
  cross=(-G Ninja --toolchain "$toolchain" -DRS_SYSROOT="$sysroot" -DRS_PORTABLE_DEPS="$deps"
         -DCMAKE_INSTALL_PREFIX="$deps" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
         -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_CXX_VISIBILITY_PRESET=hidden
         -DCMAKE_VISIBILITY_INLINES_HIDDEN=ON -DCMAKE_INSTALL_LIBDIR=lib)
  # dep <name> <source tree> [cmake args...]
  dep() {
    local name=$1 tree=$2; shift 2
    say "building $name (static, hidden)"
    quietly "$dir/deps-$name.log" cmake "${cross[@]}" -S "$tree" -B "$dir/deps-build/$name" "$@"
    quietly "$dir/deps-$name.log" cmake --build "$dir/deps-build/$name" -j "$jobs"
    quietly "$dir/deps-$name.log" cmake --install "$dir/deps-build/$name"
  }
  dep fmt "${tree_of[fmtlib]}" -DFMT_TEST=OFF -DFMT_DOC=OFF -DFMT_INSTALL=ON
  dep spdlog "${tree_of[spdlog]}" -DSPDLOG_FMT_EXTERNAL=ON -DSPDLOG_BUILD_SHARED=OFF \
    -DSPDLOG_BUILD_EXAMPLE=OFF -DSPDLOG_BUILD_TESTS=OFF -DSPDLOG_INSTALL=ON
  dep highway "${tree_of[highway]}" -DHWY_ENABLE_TESTS=OFF -DHWY_ENABLE_EXAMPLES=OFF \
    -DHWY_ENABLE_CONTRIB=OFF -DHWY_ENABLE_INSTALL=ON -DBUILD_TESTING=OFF
  # Header-only libraries: Debian 12's packages as installed here (the main build's versions).
  mkdir -p "$deps/include" "$deps/share/cmake"
  cp -a /usr/include/asio.hpp /usr/include/asio "$deps/include/"
  cp -a /usr/include/nlohmann "$deps/include/"
  cp -a /usr/share/cmake/nlohmann_json "$deps/share/cmake/"
  # What is linked inside, with each one's licence as its Debian package states it.
  {
    echo "libnccl-net-reduction-server.so contains these libraries, linked statically: fmt, spdlog"
    echo "and Highway (Debian 12's source packages ${versions[*]}),"
    echo "Nettle $(gzip -dc "$sysroot/usr/share/doc/libnettle8/changelog.Debian.gz" | head -1 | cut -d' ' -f2) and GCC 10's libstdc++ and libgcc (Debian 11), the header-only"
    echo "asio and nlohmann-json (Debian 12), and the inline functions of libfabric's headers"
    echo "(Debian 11's libfabric-dev; libfabric itself is loaded at run time where installed)."
    echo "Their copyright and licence statements follow as"
    echo "Debian ships them; 'apt-get source <package>=<version>' fetches each one's source."
    for entry in "fmtlib ${tree_of[fmtlib]}/debian/copyright" "spdlog ${tree_of[spdlog]}/debian/copyright" \
                 "highway ${tree_of[highway]}/debian/copyright" \
                 "nettle (libnettle8, Debian 11) $sysroot/usr/share/doc/libnettle8/copyright" \
                 "libstdc++ and libgcc (GCC 10, Debian 11) $sysroot/usr/share/doc/gcc-10-base/copyright" \
                 "asio (header-only, Debian 12) /usr/share/doc/libasio-dev/copyright" \
                 "libfabric's headers (libfabric-dev, Debian 11) $sysroot/usr/share/doc/libfabric-dev/copyright" \
                 "nlohmann-json (header-only, Debian 12) /usr/share/doc/nlohmann-json3-dev/copyright"; do
      file=${entry##* } name=${entry% *}
      printf '\n==============================================================================\n%s\n' "$name"
      printf '==============================================================================\n\n'
      cat "$file"
    done
  } >"$deps/THIRD-PARTY-NOTICES"
  echo "$key" >"$deps/.rs-key"
fi
say "static libraries: ${versions[*]}"

# --- 4. the plugin and its harness ---------------------------------------------------------------
# In unity batches (RS_UNITY_BUILD): this tree is built whole, and Asio's templates compiled once
# a batch, not once a file, took 128 s of CPU against 235 s (CI builds it from scratch each run).
tree=$dir/tree
say "building the plugin and the harness against glibc 2.31"
quietly "$dir/configure.log" cmake -G Ninja -S "$src" -B "$tree" --toolchain "$toolchain" \
  -DRS_SYSROOT="$sysroot" -DRS_PORTABLE_DEPS="$deps" -DRS_PORTABLE_PLUGIN=ON -DRS_WERROR=ON \
  -DRS_PORTABLE_NOTICES="$deps/THIRD-PARTY-NOTICES" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRS_WITH_FABRIC=ON \
  -DRS_UNITY_BUILD=ON "$@"
cmake --build "$tree" -j "$jobs" --target nccl_net_reduction_server plugin_harness
out=$dir/out
rm -rf "$out"; mkdir -p "$out"
# Shipped stripped; the symbols go beside it, linked by build id, for gdb and perf.
so=libnccl-net-reduction-server.so
objcopy --only-keep-debug "$tree/client/nccl_plugin/$so" "$out/$so.debug"
objcopy --strip-unneeded --add-gnu-debuglink="$out/$so.debug" "$tree/client/nccl_plugin/$so" "$out/$so"
cp "$tree/tests/nccl_plugin/plugin_harness" "$out/"
cp "$deps/THIRD-PARTY-NOTICES" "$out/"
tests/portable/check_plugin_deps.sh "$out/$so"
for f in "$out/$so" "$out/plugin_harness"; do
  say "$(basename "$f"): $(du -h "$f" | cut -f1), needs $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | paste -sd' ')"
done
say "done: $out"
